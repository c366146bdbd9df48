//! A stand-in OpenAI Responses API for integration tests that run the real codex (0.169)
//! against `http://127.0.0.1:PORT/v1`, reached through a `[model_providers.stub]` entry
//! (`base_url`, `wire_api = "responses"`): codex ignores `OPENAI_BASE_URL`.
//!
//! Only std + serde_json. It binds 127.0.0.1:0, serves each connection on its own thread
//! and answers `POST …/responses` with server-sent events as codex 0.169 consumes them:
//! `response.created`, then per output item `response.output_item.added`, (text)
//! `response.output_text.delta`, `response.output_item.done`, and `response.completed`
//! with the usage. Each answer closes its connection (`Connection: close`).
//!
//! Which requests consume the script ("turns"): a `POST …/responses` whose JSON body has a
//! non-empty `tools` array. codex 0.169's interface also asks, tool-less, for a title of
//! the conversation after the first prompt ("Generate a concise, single-line …"): that and
//! any other tool-less request get a short text and leave the script alone. `GET`s (a
//! model list) get an empty list. When the script is exhausted every turn gets
//! `Text("done")`.
//!
//! Errors: codex retries a failed request by itself (`request_max_retries` and
//! `stream_max_retries` of the provider, each attempt a request here), showing
//! `Reconnecting... k/N` meanwhile; a 400 is not retried. Once it gives up it draws
//! `■ <message>` (for a 500, "We're currently experiencing high demand…") and fires no
//! hook.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How often the accept loop looks at the stop flag.
const POLL: Duration = Duration::from_millis(50);

/// One scripted answer to a turn.
#[derive(Clone, Debug)]
pub enum Reply {
    /// An assistant message; the turn ends.
    Text(String),
    /// A call of codex's shell tool (`exec_command` with `cmd`): codex runs it and sends
    /// the next turn with its output (`function_call_output`).
    Exec(String),
    /// The same call asking to run outside codex's sandbox (`sandbox_permissions:
    /// "require_escalated"` with a `justification`): codex with `-a on-request` asks the
    /// person first.
    ExecEscalated(String),
    /// The answer after the delay (or once [`ResponsesStandIn::release`] is called): a
    /// slow answer, or a slow error.
    Slow(Duration, Box<Reply>),
    /// An HTTP error with the OpenAI error body (`{"error": {"message", "type"}}`).
    Status(u16, String),
}

impl Reply {
    pub fn text(s: impl Into<String>) -> Reply {
        Reply::Text(s.into())
    }
    pub fn exec(cmd: impl Into<String>) -> Reply {
        Reply::Exec(cmd.into())
    }
    pub fn exec_escalated(cmd: impl Into<String>) -> Reply {
        Reply::ExecEscalated(cmd.into())
    }
    pub fn slow(d: Duration, r: Reply) -> Reply {
        Reply::Slow(d, Box::new(r))
    }
    pub fn status(code: u16, message: impl Into<String>) -> Reply {
        Reply::Status(code, message.into())
    }
}

/// One request as it came.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub raw: String,
    pub at: Instant,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        super::scripted::header_in(&self.headers, name)
    }

    /// A conversation turn (it carries codex's tools).
    pub fn is_turn(&self) -> bool {
        self.method == "POST"
            && self.path.contains("/responses")
            && self.body["tools"].as_array().is_some_and(|t| !t.is_empty())
    }

    /// The texts of the user messages in its input, in order (codex's own context
    /// messages included).
    pub fn user_texts(&self) -> Vec<String> {
        self.body["input"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter(|i| i["type"] == "message" && i["role"] == "user")
                    .flat_map(|i| i["content"].as_array().cloned().unwrap_or_default())
                    .filter_map(|c| c["text"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The outputs of the tool calls it reports (`function_call_output`).
    pub fn tool_outputs(&self) -> Vec<String> {
        self.body["input"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter(|i| i["type"] == "function_call_output")
                    .map(|i| i["output"].to_string())
                    .collect()
            })
            .unwrap_or_default()
    }
}

struct Inner {
    script: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
    /// For each script entry handed out to a turn, when its reply was completely sent.
    sent: Mutex<Vec<Option<Instant>>>,
    stop: AtomicBool,
    released: AtomicBool,
}

/// The server; it stops when dropped.
pub struct ResponsesStandIn {
    port: u16,
    inner: Arc<Inner>,
}

impl ResponsesStandIn {
    pub fn start(script: Vec<Reply>) -> ResponsesStandIn {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let inner = Arc::new(Inner {
            script: Mutex::new(script.into()),
            requests: Mutex::new(vec![]),
            sent: Mutex::new(vec![]),
            stop: AtomicBool::new(false),
            released: AtomicBool::new(false),
        });
        let shared = inner.clone();
        std::thread::spawn(move || {
            while !shared.stop.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let s = shared.clone();
                        std::thread::spawn(move || serve(conn, &s));
                    }
                    Err(_) => std::thread::sleep(POLL),
                }
            }
        });
        ResponsesStandIn { port, inner }
    }

    /// What a `[model_providers.X] base_url` names.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// End every slow answer now (and any later one at once, until [`Self::hold`]).
    pub fn release(&self) {
        self.inner.released.store(true, Ordering::SeqCst);
    }

    pub fn hold(&self) {
        self.inner.released.store(false, Ordering::SeqCst);
    }

    pub fn push(&self, r: Reply) {
        self.inner.script.lock().unwrap().push_back(r);
    }

    pub fn remaining(&self) -> usize {
        self.inner.script.lock().unwrap().len()
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.inner.requests.lock().unwrap().clone()
    }

    pub fn turns(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.is_turn())
            .collect()
    }

    /// Wait until `pred` holds for the requests so far.
    pub fn wait_until(&self, timeout: Duration, pred: impl Fn(&[Recorded]) -> bool) -> bool {
        let start = Instant::now();
        loop {
            if pred(&self.requests()) {
                return true;
            }
            if start.elapsed() > timeout {
                return false;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Wait until the reply of script entry `k` (the `k`th turn's) was completely sent;
    /// when it was. The moment what that reply makes true became true.
    pub fn wait_sent(&self, k: usize, timeout: Duration) -> Option<Instant> {
        let at = || self.inner.sent.lock().unwrap().get(k).copied().flatten();
        self.wait_until(timeout, |_| at().is_some());
        at()
    }

    /// Wait for `n` turns.
    pub fn wait_turns(&self, n: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |r| r.iter().filter(|r| r.is_turn()).count() >= n)
    }
}

impl Drop for ResponsesStandIn {
    fn drop(&mut self) {
        self.inner.stop.store(true, Ordering::SeqCst);
    }
}

/// Read one request (headers, then a Content-Length or chunked body).
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Recorded> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = vec![];
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _): &&(String, String)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let mut body = vec![];
    if let Some(n) = get("content-length").and_then(|n| n.parse::<usize>().ok()) {
        body.resize(n, 0);
        reader.read_exact(&mut body).ok()?;
    } else if get("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let n = usize::from_str_radix(size.trim(), 16).ok()?;
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk).ok()?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    }
    let raw = String::from_utf8_lossy(&body).into_owned();
    Some(Recorded {
        method,
        path,
        headers,
        body: serde_json::from_str(&raw).unwrap_or(Value::Null),
        raw,
        at: Instant::now(),
    })
}

fn serve(conn: TcpStream, inner: &Inner) {
    let _ = conn.set_nonblocking(false);
    let mut out = conn.try_clone().unwrap();
    let mut reader = BufReader::new(conn);
    let Some(req) = read_request(&mut reader) else {
        return;
    };
    inner.requests.lock().unwrap().push(req.clone());
    if req.method != "POST" {
        let body = json!({"object": "list", "data": [], "models": []}).to_string();
        let _ = write!(
            out,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        return;
    }
    let (reply, k) = if req.is_turn() {
        let reply = inner
            .script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| Reply::text("done"));
        let mut sent = inner.sent.lock().unwrap();
        sent.push(None);
        (reply, Some(sent.len() - 1))
    } else {
        (Reply::text("orange stand-in title"), None)
    };
    answer(&mut out, reply, inner);
    if let Some(k) = k {
        inner.sent.lock().unwrap()[k] = Some(Instant::now());
    }
}

fn answer(out: &mut TcpStream, reply: Reply, inner: &Inner) {
    let mut reply = reply;
    while let Reply::Slow(d, inner_reply) = reply {
        let until = Instant::now() + d;
        while Instant::now() < until
            && !inner.stop.load(Ordering::SeqCst)
            && !inner.released.load(Ordering::SeqCst)
        {
            std::thread::sleep(POLL);
        }
        reply = *inner_reply;
    }
    if let Reply::Status(code, message) = &reply {
        let kind = if *code >= 500 {
            "server_error"
        } else {
            "invalid_request_error"
        };
        let body = json!({"error": {"message": message, "type": kind, "code": null}}).to_string();
        let _ = write!(
            out,
            "HTTP/1.1 {code} Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        return;
    }
    let _ = write!(
        out,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n"
    );
    let id = format!(
        "resp_{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let event = |out: &mut TcpStream, kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        let _ = write!(out, "event: {kind}\ndata: {data}\n\n");
        let _ = out.flush();
    };
    event(out, "response.created", json!({"response": {"id": id}}));
    match reply {
        Reply::Text(text) => {
            let item_id = format!("msg_{id}");
            let empty =
                json!({"type": "message", "role": "assistant", "id": item_id, "content": []});
            event(
                out,
                "response.output_item.added",
                json!({"output_index": 0, "item": empty}),
            );
            event(
                out,
                "response.output_text.delta",
                json!({"output_index": 0, "content_index": 0, "item_id": item_id, "delta": text}),
            );
            let item = json!({"type": "message", "role": "assistant", "id": item_id,
                "content": [{"type": "output_text", "text": text, "annotations": []}]});
            event(
                out,
                "response.output_item.done",
                json!({"output_index": 0, "item": item}),
            );
        }
        Reply::Exec(_) | Reply::ExecEscalated(_) => {
            let arguments = match reply {
                Reply::ExecEscalated(cmd) => json!({"cmd": cmd,
                    "sandbox_permissions": "require_escalated",
                    "justification": "May I run this outside the sandbox?"}),
                Reply::Exec(cmd) => json!({"cmd": cmd}),
                _ => unreachable!("matched above"),
            };
            let item = json!({"type": "function_call", "id": format!("fc_{id}"),
                "call_id": format!("call_{id}"), "name": "exec_command",
                "arguments": arguments.to_string()});
            event(
                out,
                "response.output_item.added",
                json!({"output_index": 0, "item": item}),
            );
            event(
                out,
                "response.output_item.done",
                json!({"output_index": 0, "item": item}),
            );
        }
        Reply::Slow(..) | Reply::Status(..) => unreachable!("handled above"),
    }
    event(
        out,
        "response.completed",
        json!({"response": {"id": id, "usage": {
            "input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 110}}}),
    );
}
