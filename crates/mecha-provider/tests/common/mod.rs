//! Scenarios both providers must pass against the mock model, each written
//! once and run per wire API.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mecha_core::{Block, Message, Role, StopReason, ToolCall, ToolDefinition, Usage};
use mecha_provider::{
    HttpOptions, Kind, Provider, ProviderError, ProviderSettings, Request, Response, Streamed,
    build_with,
};
use mecha_testkit::{MockModel, MockReply, ScriptToolCall, ScriptTurn, ScriptUsage};
use serde_json::json;

pub const KEY: &str = "test-key-123";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Anthropic,
    OpenAi,
}

impl Wire {
    pub fn key_env(self) -> &'static str {
        match self {
            Wire::Anthropic => "ANTHROPIC_API_KEY",
            Wire::OpenAi => "OPENAI_API_KEY",
        }
    }

    pub fn path(self) -> &'static str {
        match self {
            Wire::Anthropic => "/v1/messages",
            Wire::OpenAi => "/v1/chat/completions",
        }
    }
}

/// Fast enough for tests, still exercising every limit.
pub fn fast_http() -> HttpOptions {
    HttpOptions {
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(5),
        max_retries: 4,
        backoff_base: Duration::from_millis(1),
        backoff_max: Duration::from_millis(10),
        retry_budget: Duration::from_secs(5),
        ..HttpOptions::default()
    }
}

pub fn provider(wire: Wire, mock: &MockModel, http: HttpOptions) -> Arc<dyn Provider> {
    let (kind, base_url, model) = match wire {
        Wire::Anthropic => (Kind::Anthropic, mock.anthropic_url(), "claude-test"),
        Wire::OpenAi => (Kind::OpenAi, mock.openai_url(), "gpt-test"),
    };
    let settings = ProviderSettings {
        kind: Some(kind),
        model: Some(model.into()),
        base_url: Some(base_url),
        ..ProviderSettings::default()
    };
    let env: HashMap<&str, &str> = HashMap::from([(wire.key_env(), KEY)]);
    build_with(
        &settings,
        &|name| env.get(name).map(|v| (*v).to_owned()),
        http,
    )
    .unwrap()
}

pub fn tools() -> Vec<ToolDefinition> {
    ["fs_list", "fs_read"]
        .into_iter()
        .map(|name| ToolDefinition {
            name: name.into(),
            description: format!("{name} tool"),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        })
        .collect()
}

/// One request; what streamed, as `text:` / `thinking:` pieces and
/// `redacted` / `retrying` marks, in order.
pub async fn ask_streamed(
    provider: &dyn Provider,
    messages: &[Message],
) -> (Result<Response, ProviderError>, Vec<String>) {
    let tools = tools();
    let request = Request {
        system: "You are a test.",
        tools: &tools,
        messages,
        era: None,
    };
    let mut pieces = Vec::new();
    let result = provider
        .complete(request, &mut |piece: Streamed<'_>| {
            pieces.push(match piece {
                Streamed::Text(t) => format!("text:{t}"),
                Streamed::Thinking(t) => format!("thinking:{t}"),
                Streamed::RedactedThinking => "redacted".to_owned(),
                Streamed::Retrying(_) => "retrying".to_owned(),
            });
        })
        .await;
    (result, pieces)
}

/// One request; the text pieces as they streamed.
pub async fn ask(
    provider: &dyn Provider,
    messages: &[Message],
) -> (Result<Response, ProviderError>, Vec<String>) {
    let (result, pieces) = ask_streamed(provider, messages).await;
    let text = pieces
        .into_iter()
        .filter_map(|p| p.strip_prefix("text:").map(str::to_owned))
        .collect();
    (result, text)
}

fn hello() -> Vec<Message> {
    vec![Message::user_text("hello")]
}

pub async fn text_streams_in_pieces(wire: Wire) {
    let text = "The answer is forty-two, as always.";
    let mock = MockModel::start(vec![MockReply::text(text)]).await;
    let provider = provider(wire, &mock, fast_http());
    let (response, pieces) = ask(provider.as_ref(), &hello()).await;
    let response = response.unwrap();
    assert!(pieces.len() >= 3, "streamed as {pieces:?}");
    assert_eq!(pieces.concat(), text);
    assert_eq!(response.message.role, Role::Assistant);
    assert_eq!(
        response.message.content,
        vec![Block::Text { text: text.into() }]
    );
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, wire.path());
    assert_eq!(requests[0].body["stream"], json!(true));
}

pub async fn one_tool_call(wire: Wire) {
    let input = json!({"path": "src/main.rs", "note": "a \"quoted\" value, ünïcode"});
    let turn = ScriptTurn::calls(vec![
        ScriptToolCall::new("fs_read", input.clone()).with_id("call_abc"),
    ]);
    let mock = MockModel::start(vec![turn.into()]).await;
    let provider = provider(wire, &mock, fast_http());
    let (response, pieces) = ask(provider.as_ref(), &hello()).await;
    let response = response.unwrap();
    assert!(pieces.is_empty());
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.message.content,
        vec![Block::ToolUse(ToolCall {
            id: "call_abc".into(),
            name: "fs_read".into(),
            input,
            input_error: None,
        })]
    );
}

pub async fn several_calls_in_one_turn(wire: Wire) {
    let turn = ScriptTurn::calls(vec![
        ScriptToolCall::new("fs_list", json!({"path": "."})),
        ScriptToolCall::new("fs_read", json!({"path": "a.txt"})),
        ScriptToolCall::new("fs_read", json!({})),
    ])
    .with_text("Let me look around.");
    let mock = MockModel::start(vec![turn.into()]).await;
    let provider = provider(wire, &mock, fast_http());
    let (response, pieces) = ask(provider.as_ref(), &hello()).await;
    let response = response.unwrap();
    assert_eq!(pieces.concat(), "Let me look around.");
    assert_eq!(response.message.text(), "Let me look around.");
    let calls: Vec<&ToolCall> = response.message.tool_calls().collect();
    let summary: Vec<(&str, &str, serde_json::Value)> = calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.input.clone()))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("call_1_1", "fs_list", json!({"path": "."})),
            ("call_1_2", "fs_read", json!({"path": "a.txt"})),
            ("call_1_3", "fs_read", json!({})),
        ]
    );
    assert!(calls.iter().all(|c| c.input_error.is_none()));
}

pub async fn bad_arguments_become_input_error(wire: Wire) {
    let turn = ScriptTurn::calls(vec![ScriptToolCall::raw("fs_read", r#"{"path": "a.t"#)]);
    let mock = MockModel::start(vec![turn.into()]).await;
    let provider = provider(wire, &mock, fast_http());
    let (response, _) = ask(provider.as_ref(), &hello()).await;
    let response = response.unwrap();
    let call = response.message.tool_calls().next().unwrap();
    assert_eq!(call.input, json!({}));
    let error = call.input_error.as_deref().unwrap();
    assert!(error.contains(r#"{"path": "a.t"#), "{error}");
}

/// A call, its failed result sent back, and the model's answer. Returns the
/// second request's body for wire-specific checks.
pub async fn tool_error_round_trip(wire: Wire) -> serde_json::Value {
    let mock = MockModel::start(vec![
        ScriptTurn::call("fs_read", json!({"path": "missing"})).into(),
        MockReply::text("That file does not exist."),
    ])
    .await;
    let provider = provider(wire, &mock, fast_http());
    let mut history = hello();
    let (first, _) = ask(provider.as_ref(), &history).await;
    let first = first.unwrap();
    let call_id = first.message.tool_calls().next().unwrap().id.clone();
    history.push(first.message);
    history.push(Message {
        role: Role::User,
        content: vec![Block::ToolResult {
            tool_use_id: call_id,
            content: "no such file: missing".into(),
            is_error: true,
            images: Vec::new(),
        }],
    });
    let (second, _) = ask(provider.as_ref(), &history).await;
    assert_eq!(second.unwrap().message.text(), "That file does not exist.");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    requests[1].body.clone()
}

pub async fn cut_stream_is_transport_error(wire: Wire) {
    let turn = ScriptTurn::call("fs_read", json!({"path": "a"})).with_text("Reading a file now.");
    let mock = MockModel::start(vec![MockReply::CutStream(turn)]).await;
    let provider = provider(wire, &mock, fast_http());
    let (response, pieces) = ask(provider.as_ref(), &hello()).await;
    match response {
        Err(ProviderError::Transport(m)) => assert!(m.contains("ended early"), "{m}"),
        other => panic!("expected a transport error, got {other:?}"),
    }
    assert_eq!(pieces.concat(), "Reading a file now.");
    // Content had arrived, so the cut was not retried.
    assert_eq!(mock.requests().len(), 1);
}

pub async fn rate_limit_then_success(wire: Wire) {
    let mock = MockModel::start(vec![
        MockReply::status_retry_after(429, 0),
        MockReply::text("ok"),
    ])
    .await;
    // Backoff alone would wait a minute: only retry-after: 0 makes this fast.
    let http = HttpOptions {
        backoff_base: Duration::from_secs(60),
        backoff_max: Duration::from_secs(60),
        retry_budget: Duration::from_secs(120),
        ..fast_http()
    };
    let provider = provider(wire, &mock, http);
    let started = Instant::now();
    let (response, _) = ask(provider.as_ref(), &hello()).await;
    assert_eq!(response.unwrap().message.text(), "ok");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(mock.requests().len(), 2);
}

pub async fn server_errors_exhaust_retries(wire: Wire) {
    let replies = (0..5).map(|_| MockReply::status(529)).collect();
    let mock = MockModel::start(replies).await;
    let provider = provider(wire, &mock, fast_http());
    let (response, _) = ask(provider.as_ref(), &hello()).await;
    match response {
        Err(ProviderError::Exhausted(m)) => {
            assert!(m.contains("529") && m.contains("4 retries"), "{m}")
        }
        other => panic!("expected exhausted retries, got {other:?}"),
    }
    assert_eq!(mock.requests().len(), 5);
}

pub async fn bad_request_is_api_error(wire: Wire) {
    let mock = MockModel::start(vec![MockReply::Status {
        code: 400,
        retry_after: None,
        body: None,
    }])
    .await;
    let provider = provider(wire, &mock, fast_http());
    let (response, _) = ask(provider.as_ref(), &hello()).await;
    match response {
        Err(ProviderError::Api(m)) => {
            assert!(m.contains("400") && m.contains("Invalid request"), "{m}")
        }
        other => panic!("expected an API error, got {other:?}"),
    }
    assert_eq!(mock.requests().len(), 1);
}

pub async fn wrong_key_is_auth_error_naming_the_variable(wire: Wire) {
    let mock = MockModel::start(vec![MockReply::text("never")]).await;
    mock.expect_api_key("the-right-key");
    let first = provider(wire, &mock, fast_http());
    let (response, _) = ask(first.as_ref(), &hello()).await;
    match response {
        Err(ProviderError::Auth(m)) => {
            assert!(m.contains(wire.key_env()) && m.contains("401"), "{m}")
        }
        other => panic!("expected an auth error, got {other:?}"),
    }
    assert_eq!(mock.requests().len(), 1, "auth errors are not retried");
    assert_eq!(mock.remaining(), 1);

    let mock = MockModel::start(vec![MockReply::Unauthorized]).await;
    let again = provider(wire, &mock, fast_http());
    let (response, _) = ask(again.as_ref(), &hello()).await;
    assert!(
        matches!(response, Err(ProviderError::Auth(_))),
        "{response:?}"
    );
}

pub async fn malformed_event_is_named(wire: Wire) {
    let mock = MockModel::start(vec![MockReply::Malformed]).await;
    let provider = provider(wire, &mock, fast_http());
    let (response, _) = ask(provider.as_ref(), &hello()).await;
    match response {
        Err(ProviderError::Transport(m)) => assert!(m.contains("malformed"), "{m}"),
        other => panic!("expected a malformed-stream error, got {other:?}"),
    }
}

pub async fn stall_hits_the_idle_timeout(wire: Wire) {
    let mock = MockModel::start(vec![MockReply::Stall]).await;
    let http = HttpOptions {
        idle_timeout: Duration::from_millis(300),
        ..fast_http()
    };
    let provider = provider(wire, &mock, http);
    let started = Instant::now();
    let (response, _) = ask(provider.as_ref(), &hello()).await;
    match response {
        Err(ProviderError::Transport(m)) => {
            assert!(m.contains("stalled") && m.contains("idle timeout"), "{m}")
        }
        other => panic!("expected an idle timeout, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(mock.requests().len(), 1);
}

pub async fn connection_is_kept_alive(wire: Wire) {
    let mock = MockModel::start(vec![
        MockReply::text("one"),
        ScriptTurn::call("fs_read", json!({"path": "x"})).into(),
        MockReply::text("three"),
    ])
    .await;
    let provider = provider(wire, &mock, fast_http());
    for _ in 0..3 {
        ask(provider.as_ref(), &hello()).await.0.unwrap();
    }
    assert_eq!(mock.requests().len(), 3);
    assert_eq!(
        mock.connections(),
        1,
        "every request should reuse one connection"
    );
}

pub async fn usage_is_mapped(wire: Wire) -> Usage {
    let turn = ScriptTurn::text("cached").with_usage(ScriptUsage {
        input_tokens: 11,
        output_tokens: 22,
        cache_read_tokens: 3000,
        cache_write_tokens: match wire {
            Wire::Anthropic => 400,
            // Chat Completions reports no cache writes.
            Wire::OpenAi => 0,
        },
    });
    let mock = MockModel::start(vec![turn.into()]).await;
    let provider = provider(wire, &mock, fast_http());
    ask(provider.as_ref(), &hello()).await.0.unwrap().usage
}

pub async fn max_tokens_stop_reason(wire: Wire) {
    let turn = ScriptTurn::text("cut sho").with_stop_reason(StopReason::MaxTokens);
    let mock = MockModel::start(vec![turn.into()]).await;
    let provider = provider(wire, &mock, fast_http());
    let response = ask(provider.as_ref(), &hello()).await.0.unwrap();
    assert_eq!(response.stop_reason, StopReason::MaxTokens);
}

/// Nothing listening: one more try, then an error that names the URL and
/// asks whether the server runs (not "try again later").
pub async fn connection_refused_names_the_url(wire: Wire) {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let (kind, base_url) = match wire {
        Wire::Anthropic => (Kind::Anthropic, format!("http://127.0.0.1:{port}")),
        Wire::OpenAi => (Kind::OpenAi, format!("http://127.0.0.1:{port}/v1")),
    };
    let settings = ProviderSettings {
        kind: Some(kind),
        model: Some("m".into()),
        base_url: Some(base_url),
        ..ProviderSettings::default()
    };
    let env: HashMap<&str, &str> = HashMap::from([(wire.key_env(), KEY)]);
    let provider = build_with(
        &settings,
        &|name| env.get(name).map(|v| (*v).to_owned()),
        fast_http(),
    )
    .unwrap();
    let (response, _) = ask(provider.as_ref(), &hello()).await;
    match response {
        Err(ProviderError::Transport(m)) => {
            assert!(
                m.contains("nothing is listening")
                    && m.contains(&port.to_string())
                    && m.contains("is the server running?")
                    && !m.contains("Try again later"),
                "{m}"
            )
        }
        other => panic!("expected a connection error, got {other:?}"),
    }
}
