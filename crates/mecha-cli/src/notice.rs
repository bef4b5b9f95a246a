//! What mecha tells the user when the model's turn did not end in a whole
//! answer. One wording per case, used by every output format.

use mecha_core::StopReason;

/// The model declined. `in_chat`: the exchange was dropped and the
/// conversation goes on.
pub fn refused(detail: Option<&str>, in_chat: bool) -> String {
    let why = match detail.map(str::trim).filter(|d| !d.is_empty()) {
        Some(detail) => format!("the model declined to answer: {detail}"),
        None => "the model declined to answer".to_owned(),
    };
    if in_chat {
        format!(
            "{why}. The exchange was dropped from the conversation, since one that still \
             holds a refused turn is refused again; rephrase it, or ask something else"
        )
    } else {
        format!("{why}. Rephrase the task, or try another model")
    }
}

/// The model said nothing.
pub fn silent(reason: &StopReason) -> String {
    if reason.is_cut() {
        "the model used up its output limit before saying anything (its thinking can take \
         all of it); raise [provider] max_tokens, or lower the thinking budget"
            .to_owned()
    } else if *reason == StopReason::EndTurn {
        "the model ended its turn without answering, even when asked to continue; rephrase \
         the task"
            .to_owned()
    } else {
        format!(
            "the model stopped ({}) without answering; try again or rephrase the task",
            reason.as_str()
        )
    }
}

/// The output limit cut the model short: a call to `tool` (which was not
/// run), or the answer's text.
pub fn output_limit(tool: Option<&str>) -> String {
    match tool {
        Some(tool) => format!(
            "the model's output limit cut its call to {tool} short; the call was not run, \
             and the model was told to send it in smaller pieces (raise [provider] \
             max_tokens if this repeats)"
        ),
        None => "the answer was cut off by the model's output limit; raise [provider] \
                 max_tokens, or ask for a shorter answer"
            .to_owned(),
    }
}

/// An empty turn was answered with a nudge.
pub const EMPTY_TURN: &str = "the model ended its turn without a word; asking it to continue";
