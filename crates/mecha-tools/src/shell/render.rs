//! What the model sees of a finished command: its output, then one line on
//! how it ended.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use mecha_core::ToolOutput;

use super::Ending;

/// The result the model sees: the output, then one line on how it ended.
pub(super) fn render(
    mut text: String,
    ending: &Ending,
    timeout: Duration,
    max: Duration,
    at_max: bool,
) -> ToolOutput {
    let trailer = match ending {
        Ending::Exited(status) if status.success() => None,
        Ending::Exited(status) => Some(exit_line(*status)),
        Ending::TimedOut => Some(timeout_line(timeout, max, at_max)),
        Ending::Unknown => Some("[the command was killed; its exit status is unknown]".to_owned()),
    };
    if text.is_empty() {
        text.push_str("[no output]");
    }
    match trailer {
        None => ToolOutput::ok(text),
        Some(trailer) => {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&trailer);
            ToolOutput::err(text)
        }
    }
}

fn exit_line(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        // bash reports a child killed by signal n as 128+n.
        match signal_name(code - 128) {
            Some(name) if code > 128 => {
                format!("[exit code {code}, which usually means a process was killed by {name}]")
            }
            _ => format!("[exit code {code}]"),
        }
    } else if let Some(signal) = status.signal() {
        match signal_name(signal) {
            Some(name) => format!("[killed by signal {signal} ({name})]"),
            None => format!("[killed by signal {signal}]"),
        }
    } else {
        format!("[ended without an exit code: {status}]")
    }
}

fn timeout_line(timeout: Duration, max: Duration, at_max: bool) -> String {
    let retry = if at_max {
        "the longest allowed. Make it do less per call".to_owned()
    } else {
        format!("Retry with a larger timeout_s (at most {})", seconds(max))
    };
    format!(
        "[timed out after {}; the command and everything it started were killed. {retry}, or \
         split the job into steps that each finish in time (nothing started in the background \
         outlives its command).]",
        seconds(timeout),
    )
}

fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        _ => return None,
    })
}

pub(super) fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::shell::TRAILER_RESERVE;

    #[test]
    fn every_trailer_fits_its_reserve() {
        // The newline before the trailer, and "[no output]" when it stands in
        // for the output.
        const SLACK: usize = 1 + "[no output]".len();
        let long = Duration::from_secs(u64::from(u32::MAX));
        for at_max in [false, true] {
            let line = timeout_line(long, long, at_max);
            assert!(
                line.len() + SLACK <= TRAILER_RESERVE,
                "{} bytes: {line}",
                line.len()
            );
        }
        for code in [1, 137, 255] {
            let line = exit_line(ExitStatus::from_raw(code << 8));
            assert!(line.len() + SLACK <= TRAILER_RESERVE, "{line}");
        }
    }

    #[test]
    fn exit_lines_name_codes_and_signals() {
        assert_eq!(exit_line(ExitStatus::from_raw(2 << 8)), "[exit code 2]");
        assert!(exit_line(ExitStatus::from_raw(137 << 8)).contains("SIGKILL"));
        assert_eq!(
            exit_line(ExitStatus::from_raw(15)),
            "[killed by signal 15 (SIGTERM)]"
        );
    }
}
