//! The fixture's tools that answer from a thread of their own, so a
//! client's calls to them overlap and progress flows while one runs.

use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Fixture, text, tool};

pub(super) fn tools() -> Vec<Value> {
    let ms = json!({"type": "object", "properties": {"ms": {"type": "integer"}}});
    vec![
        tool(
            "nap",
            "Sleep `ms` milliseconds.",
            &ms,
            Some(json!({"readOnlyHint": true})),
        ),
        tool(
            "make",
            "Sleep `ms` milliseconds, then make something.",
            &ms,
            None,
        ),
        tool(
            "use_made",
            "Use what `make` made; fails if nothing is made yet.",
            &json!({"type": "object", "properties": {}}),
            None,
        ),
        tool(
            "progress",
            "Report progress every `every_ms` for `report_ms`, stay silent for `silent_ms`, then answer.",
            &json!({"type": "object", "properties": {
                "every_ms": {"type": "integer"},
                "report_ms": {"type": "integer"},
                "silent_ms": {"type": "integer"},
                "label": {"type": "string"}
            }}),
            None,
        ),
    ]
}

/// Writes one message to stdout from any thread.
fn send_from_thread(message: &Value) {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{message}");
    let _ = out.flush();
}

impl Fixture {
    /// Handles the tools of [`tools`]; false for any other tool.
    pub(super) fn timed_call(
        &mut self,
        id: &Value,
        name: &str,
        args: &Value,
        params: Option<&Value>,
    ) -> bool {
        let ms =
            |key: &str| Duration::from_millis(args.get(key).and_then(Value::as_u64).unwrap_or(0));
        let id = id.clone();
        match name {
            "nap" => {
                let nap = ms("ms");
                std::thread::spawn(move || {
                    std::thread::sleep(nap);
                    send_from_thread(
                        &json!({"jsonrpc": "2.0", "id": id, "result": text("napped")}),
                    );
                });
            }
            "make" => {
                let (nap, made) = (ms("ms"), Arc::clone(&self.made));
                std::thread::spawn(move || {
                    std::thread::sleep(nap);
                    made.store(true, Ordering::SeqCst);
                    send_from_thread(&json!({"jsonrpc": "2.0", "id": id, "result": text("made")}));
                });
            }
            "use_made" => {
                let result = if self.made.load(Ordering::SeqCst) {
                    text("used what was made")
                } else {
                    json!({"content": [{"type": "text", "text": "nothing is made yet"}], "isError": true})
                };
                self.reply(&id, result);
            }
            "progress" => {
                let token = params
                    .and_then(|p| p.pointer("/_meta/progressToken"))
                    .cloned()
                    .unwrap_or(Value::Null);
                let (every, report, silent) = (ms("every_ms"), ms("report_ms"), ms("silent_ms"));
                let label = args
                    .get("label")
                    .and_then(Value::as_str)
                    .unwrap_or("step")
                    .to_owned();
                std::thread::spawn(move || {
                    let start = Instant::now();
                    let mut step = 0u64;
                    while start.elapsed() < report {
                        step += 1;
                        send_from_thread(
                            &json!({"jsonrpc": "2.0", "method": "notifications/progress",
                            "params": {"progressToken": token, "progress": step, "message": format!("{label} {step}")}}),
                        );
                        std::thread::sleep(every.max(Duration::from_millis(1)));
                    }
                    std::thread::sleep(silent);
                    send_from_thread(
                        &json!({"jsonrpc": "2.0", "id": id, "result": text(&format!("finished after {step} steps"))}),
                    );
                });
            }
            _ => return false,
        }
        true
    }
}
