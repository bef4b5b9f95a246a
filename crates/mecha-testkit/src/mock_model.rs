//! The mock model server: hyper on 127.0.0.1, one scripted reply per model
//! request, every request recorded.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};

use crate::render::{self, Api, Context, Rendered};
use crate::reply::MockReply;

type Body = UnsyncBoxBody<Bytes, std::io::Error>;

/// Pause between two events, so a client sees them arrive separately.
const EVENT_GAP: Duration = Duration::from_millis(1);

/// One request as the mock received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Names lowercased, in the order received.
    pub headers: Vec<(String, String)>,
    /// The JSON body; `Value::Null` when it was not JSON.
    pub body: Value,
    /// The body's length in bytes, exactly as received.
    pub body_bytes: usize,
    /// When the whole request (head and body) had arrived.
    pub received_at: SystemTime,
}

impl RecordedRequest {
    /// The first value of a header (name case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Default)]
struct State {
    replies: VecDeque<MockReply>,
    /// Replies handed out so far; numbers the turns for generated ids.
    served: usize,
    requests: Vec<RecordedRequest>,
    connections: usize,
    api_key: Option<String>,
    /// Every thinking block sent so far, complete: the only ones a request
    /// may send back.
    sent_thinking: Vec<Value>,
    /// Gets a copy of every request as it is recorded.
    subscribers: Vec<mpsc::UnboundedSender<RecordedRequest>>,
    /// Told when each answer's last byte was handed out, in order.
    answer_subscribers: Vec<mpsc::UnboundedSender<SystemTime>>,
    /// A request whose last message starts with this is a summary request,
    /// answered without using up a reply; and how many were answered.
    summary_marker: Option<String>,
    summaries: usize,
    /// Summary requests still to fail (with a 400) before any is answered.
    summary_failures: usize,
    /// Replies for requests that offer exactly these tools (sorted names),
    /// before the main queue: a subagent's requests, told apart from its
    /// parent's by its tool list.
    routes: Vec<(Vec<String>, VecDeque<MockReply>)>,
}

impl State {
    fn record(&mut self, request: RecordedRequest) {
        self.subscribers
            .retain(|tx| tx.send(request.clone()).is_ok());
        self.requests.push(request);
    }
}

#[derive(Debug, Default)]
struct Shared(Mutex<State>);

impl Shared {
    // A test that panicked while holding the lock must not hide its own
    // failure behind a poison error here.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A mock model API on `127.0.0.1`. Dropping it stops the server and
/// closes every connection (including stalled streams).
#[derive(Debug)]
pub struct MockModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: JoinHandle<()>,
}

impl Drop for MockModel {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl MockModel {
    /// Starts the server with these replies, in order.
    ///
    /// # Panics
    /// When no loopback port can be bound; test support has no better
    /// answer. [`MockModel::try_start`] returns the error instead.
    pub async fn start(replies: Vec<MockReply>) -> Self {
        match Self::try_start(replies).await {
            Ok(mock) => mock,
            Err(e) => panic!("the mock model server could not bind 127.0.0.1: {e}"),
        }
    }

    pub async fn try_start(replies: Vec<MockReply>) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        shared.lock().replies = replies.into();
        let server = tokio::spawn(serve(listener, Arc::clone(&shared)));
        Ok(Self {
            addr,
            shared,
            server,
        })
    }

    /// `http://127.0.0.1:<port>`: the base URL for the Anthropic provider,
    /// which appends `/v1/messages`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The base URL for the Anthropic provider.
    pub fn anthropic_url(&self) -> String {
        self.base_url()
    }

    /// `http://127.0.0.1:<port>/v1`: the base URL for the OpenAI provider,
    /// which appends `/chat/completions`.
    pub fn openai_url(&self) -> String {
        format!("{}/v1", self.base_url())
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// From now on, a request whose key (`x-api-key`, or
    /// `Authorization: Bearer`) is not this one gets a 401, without using up
    /// a reply.
    pub fn expect_api_key(&self, key: impl Into<String>) {
        self.shared.lock().api_key = Some(key.into());
    }

    /// From now on, a request whose last message's text starts with
    /// `marker` (a harness asking for a compaction summary) is answered
    /// with `SUMMARY <n>: ...` without using up a reply, wherever in the
    /// script it comes.
    pub fn answer_summaries(&self, marker: impl Into<String>) {
        self.shared.lock().summary_marker = Some(marker.into());
    }

    /// The next `n` summary requests fail with a 400 (see
    /// [`MockModel::answer_summaries`]).
    pub fn fail_summaries(&self, n: usize) {
        self.shared.lock().summary_failures = n;
    }

    /// A request that offers exactly `tools` (in any order) takes its reply
    /// from `replies`, in order, instead of the main queue; once they are
    /// used up it falls back to the main queue.
    pub fn route(&self, tools: &[&str], replies: Vec<MockReply>) {
        let mut names: Vec<String> = tools.iter().map(|t| (*t).to_owned()).collect();
        names.sort();
        self.shared.lock().routes.push((names, replies.into()));
    }

    /// Summary requests answered so far.
    pub fn summaries(&self) -> usize {
        self.shared.lock().summaries
    }

    /// Queues more replies after the ones given at start.
    pub fn push(&self, reply: MockReply) {
        self.shared.lock().replies.push_back(reply);
    }

    /// A copy of every request received from now on, in order, as it
    /// arrives (before it is answered).
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<RecordedRequest> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.shared.lock().subscribers.push(tx);
        rx
    }

    /// When each answer's last byte was handed to the connection, in the
    /// order the answers ended: with the requests' arrival times, the time
    /// a client took from the end of one answer to its next request.
    pub fn subscribe_answered(&self) -> mpsc::UnboundedReceiver<SystemTime> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.shared.lock().answer_subscribers.push(tx);
        rx
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// TCP connections accepted so far: one for any number of requests
    /// when the client keeps its connection alive.
    pub fn connections(&self) -> usize {
        self.shared.lock().connections
    }

    /// Replies not yet used.
    pub fn remaining(&self) -> usize {
        self.shared.lock().replies.len()
    }
}

async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    // Owning the connection tasks here means aborting this task (dropping
    // the mock) aborts them all.
    let mut connections = JoinSet::new();
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!("mock model: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        // Without it, Nagle holds each small SSE frame until the last is
        // acknowledged, and the client's delayed ACK makes that 40 ms.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!("mock model: TCP_NODELAY not set: {e}");
        }
        shared.lock().connections += 1;
        let shared = Arc::clone(&shared);
        connections.spawn(async move {
            let service = service_fn(move |request| handle(Arc::clone(&shared), request));
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!("mock model: connection ended: {e}");
            }
        });
        while connections.try_join_next().is_some() {}
    }
}

async fn handle(
    shared: Arc<Shared>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let response = answer(Arc::clone(&shared), request).await;
    Ok(response.map(|body| {
        let ended = futures::stream::once(async move {
            let now = SystemTime::now();
            shared
                .lock()
                .answer_subscribers
                .retain(|tx| tx.send(now).is_ok());
        })
        .filter_map(|()| async { None });
        StreamBody::new(http_body_util::BodyStream::new(body).chain(ended)).boxed_unsync()
    }))
}

async fn answer(shared: Arc<Shared>, request: Request<Incoming>) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let received_at = SystemTime::now();
    let recorded = RecordedRequest {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        body_bytes: bytes.len(),
        received_at,
    };
    let api = match recorded.path.as_str() {
        "/v1/messages" => Api::Anthropic,
        "/v1/chat/completions" => Api::OpenAi,
        _ => {
            shared.lock().record(recorded);
            return plain(StatusCode::NOT_FOUND, "not found".into(), None);
        }
    };
    let (reply, cx) = {
        let mut state = shared.lock();
        state.record(recorded.clone());
        if let Some(refusal) = check_headers(api, &recorded, state.api_key.as_deref()) {
            return refusal;
        }
        if api == Api::Anthropic
            && let Some(message) =
                render::anthropic::check_thinking(&recorded.body, &state.sent_thinking)
        {
            return error_status(api, 400, &message, None);
        }
        let asks_summary = state
            .summary_marker
            .as_deref()
            .is_some_and(|marker| last_text(&recorded.body).starts_with(marker));
        if asks_summary && state.summary_failures > 0 {
            state.summary_failures -= 1;
            return error_status(api, 400, "mock model: this summary fails", None);
        }
        let summary = asks_summary.then(|| {
            state.summaries += 1;
            MockReply::text(format!(
                "SUMMARY {}: what was done so far, and what is next.",
                state.summaries
            ))
        });
        let offered = offered_tools(&recorded.body);
        let routed = state
            .routes
            .iter_mut()
            .find(|(tools, _)| *tools == offered)
            .and_then(|(_, replies)| replies.pop_front());
        let given = state.served + state.replies.len();
        let Some(reply) = summary.or(routed).or_else(|| state.replies.pop_front()) else {
            let message = format!(
                "mock model: no scripted reply left (it was given {given}); add replies to the test"
            );
            return error_status(api, 400, &message, None);
        };
        state.served += 1;
        let cx = Context {
            model: recorded.body["model"].as_str().unwrap_or("mock").to_owned(),
            turn: state.served,
            include_usage: recorded.body["stream_options"]["include_usage"] == Value::Bool(true),
        };
        if let (Api::Anthropic, MockReply::Turn(turn) | MockReply::CutStream(turn)) = (api, &reply)
        {
            let blocks = render::anthropic::thinking_blocks(&cx, turn);
            state.sent_thinking.extend(blocks);
        }
        (reply, cx)
    };
    respond(api, &cx, reply)
}

/// The names of the tools a request offers, sorted, in either API's shape.
fn offered_tools(body: &Value) -> Vec<String> {
    let mut names: Vec<String> = body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().or(t["function"]["name"].as_str()))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The text of a request's last message, in either API's shape.
fn last_text(body: &Value) -> String {
    let Some(last) = body["messages"].as_array().and_then(|m| m.last()) else {
        return String::new();
    };
    match &last["content"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        _ => String::new(),
    }
}

/// What the real APIs check before anything else: the key, and for
/// Anthropic the version header.
fn check_headers(
    api: Api,
    request: &RecordedRequest,
    expected_key: Option<&str>,
) -> Option<Response<Body>> {
    let key = match api {
        Api::Anthropic => request.header("x-api-key"),
        Api::OpenAi => request
            .header("authorization")
            .and_then(|v| v.strip_prefix("Bearer ")),
    };
    if let Some(expected) = expected_key
        && key != Some(expected)
    {
        return Some(unauthorized(api));
    }
    if api == Api::Anthropic && request.header("anthropic-version").is_none() {
        return Some(error_status(
            api,
            400,
            "anthropic-version: header is required",
            None,
        ));
    }
    None
}

fn respond(api: Api, cx: &Context, reply: MockReply) -> Response<Body> {
    match reply {
        MockReply::Turn(turn) => stream(rendered(api, cx, &turn).frames, Ending::Complete),
        MockReply::CutStream(turn) => {
            let mut rendered = rendered(api, cx, &turn);
            rendered.frames.truncate(rendered.tail);
            stream(rendered.frames, Ending::Cut)
        }
        MockReply::Malformed => {
            let rendered = match api {
                Api::Anthropic => render::anthropic::malformed(cx),
                Api::OpenAi => render::openai::malformed(cx),
            };
            stream(rendered.frames, Ending::Complete)
        }
        MockReply::ErrorEvent { kind, message } => {
            let rendered = match api {
                Api::Anthropic => render::anthropic::error_event(&kind, &message),
                Api::OpenAi => render::openai::error_event(&kind, &message),
            };
            stream(rendered.frames, Ending::Complete)
        }
        MockReply::LlamaCppError { message } => stream(
            render::openai::llama_cpp_error(api, &message).frames,
            Ending::Complete,
        ),
        MockReply::OverloadedInThinking(thinking) => {
            let rendered = match api {
                Api::Anthropic => render::anthropic::overloaded_in_thinking(cx, &thinking),
                Api::OpenAi => render::openai::error_event("overloaded_error", "Overloaded"),
            };
            stream(rendered.frames, Ending::Complete)
        }
        MockReply::Stall => stream(Vec::new(), Ending::Stall),
        MockReply::Unauthorized => unauthorized(api),
        MockReply::Status {
            code,
            retry_after,
            body,
        } => {
            let body =
                body.unwrap_or_else(|| render::error_body(api, code, render::status_message(code)));
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            plain(status, body, retry_after)
        }
    }
}

fn rendered(api: Api, cx: &Context, turn: &mecha_provider::script::ScriptTurn) -> Rendered {
    match api {
        Api::Anthropic => render::anthropic::turn(cx, turn),
        Api::OpenAi => render::openai::turn(cx, turn),
    }
}

fn unauthorized(api: Api) -> Response<Body> {
    let message = match api {
        Api::Anthropic => "invalid x-api-key",
        Api::OpenAi => "Incorrect API key provided",
    };
    error_status(api, 401, message, None)
}

fn error_status(api: Api, code: u16, message: &str, retry_after: Option<u64>) -> Response<Body> {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    plain(status, render::error_body(api, code, message), retry_after)
}

fn plain(status: StatusCode, body: String, retry_after: Option<u64>) -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    if let Some(seconds) = retry_after {
        headers.insert(hyper::header::RETRY_AFTER, seconds.into());
    }
    response
}

/// How a streamed body ends.
#[derive(Debug, Clone, Copy)]
enum Ending {
    /// Normally: the chunked body is terminated and the connection kept.
    Complete,
    /// With a body error, which makes hyper drop the connection mid-body.
    Cut,
    /// Never: the body waits until the server is dropped.
    Stall,
}

fn stream(frames: Vec<String>, ending: Ending) -> Response<Body> {
    let events = futures::stream::iter(frames).then(|frame| async move {
        tokio::time::sleep(EVENT_GAP).await;
        Ok::<_, std::io::Error>(Frame::data(Bytes::from(frame)))
    });
    let body: Body = match ending {
        Ending::Complete => StreamBody::new(events).boxed_unsync(),
        Ending::Cut => {
            let cut = futures::stream::once(async {
                Err(std::io::Error::other("mock model: stream cut on purpose"))
            });
            StreamBody::new(events.chain(cut)).boxed_unsync()
        }
        Ending::Stall => StreamBody::new(events.chain(futures::stream::pending())).boxed_unsync(),
    };
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-cache"),
    );
    response
}
