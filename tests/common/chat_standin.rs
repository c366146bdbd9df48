//! A stand-in OpenAI-compatible Chat Completions API for integration tests that run the real
//! pi (a `models.json` provider with `"api": "openai-completions"`) or opencode (an
//! `opencode.json` provider on `@ai-sdk/openai-compatible` with a `baseURL`) against
//! `http://127.0.0.1:PORT/v1`.
//!
//! Only std + serde_json, shaped like the claude stand-in (tests/common/standin.rs): it binds
//! 127.0.0.1:0, serves each connection on its own thread (HTTP/1.1 keep-alive, Content-Length
//! or chunked request bodies), records every request, and stops when the [`ChatStandIn`] is
//! dropped or after [`IDLE_LIMIT`] without a request.
//!
//! Which requests consume the script ("turns"): `POST /v1/chat/completions` or
//! `POST /chat/completions` whose JSON body has a non-empty `tools` array (an agent's turn
//! always carries its tool list; a tool-less request such as opencode's title generation gets
//! `Text("ok")` and does not touch the script). With `"stream": true` the answer is
//! server-sent events, `data: {chat.completion.chunk}` lines ending with `data: [DONE]`: text
//! as `delta.content` pieces, a tool call as `delta.tool_calls` with
//! `finish_reason: "tool_calls"`, the usage in a last chunk with empty `choices`. Without
//! `stream` it is one `chat.completion` object. `GET /v1/models` (and `/models`) lists the
//! model [`MODEL`]. Any other path: 404 with OpenAI's error JSON.
//!
//! When the script is exhausted every further turn gets `Text("done")`.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The stand-in stops by itself after this long without a request.
pub const IDLE_LIMIT: Duration = Duration::from_secs(600);
/// How often blocked connection threads look at the stop flag.
const POLL: Duration = Duration::from_millis(100);
/// Interval of SSE comment lines (`: keep-alive`) while a streamed [`Reply::Slow`] waits.
const PING_EVERY: Duration = Duration::from_secs(5);
/// The model id `GET /v1/models` lists (any model a request names is echoed back).
pub const MODEL: &str = "standin-model";

/// One scripted answer to a turn request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A text answer, `finish_reason: "stop"`.
    Text(String),
    /// One tool call, `finish_reason: "tool_calls"`; `arguments` is sent as its JSON text.
    /// The client runs the tool and sends the next turn with a `role: "tool"` message.
    ToolCall { name: String, arguments: Value },
    /// Wait before answering. When streaming, the first chunk (`delta.role`) is sent at once,
    /// then `: keep-alive` comment lines every 5 s, and the rest after the delay.
    Slow(Duration, Box<Reply>),
    /// An HTTP error with OpenAI's error body (`{"error":{"message","type","code"}}`); the
    /// `String` is the message.
    Status(u16, String),
    /// A text answer that ends with "?" (one is appended if missing), `stop`.
    Question(String),
    /// Text, then a tool call, in ONE answer, `finish_reason: "tool_calls"`.
    SayThenTool {
        text: String,
        name: String,
        arguments: Value,
    },
    /// Never answer (the connection stays open, silent) until the stand-in is dropped.
    Hang,
    /// The inner reply, for each of the next `n` turn requests (a client's own retries of an
    /// error consume the script).
    Repeat(usize, Box<Reply>),
}

impl Reply {
    pub fn text(s: impl Into<String>) -> Reply {
        Reply::Text(s.into())
    }
    pub fn tool(name: impl Into<String>, arguments: Value) -> Reply {
        Reply::ToolCall {
            name: name.into(),
            arguments,
        }
    }
    /// A `bash` tool call running `command` (pi's and opencode's tool are both `bash`; the
    /// `description` is the one opencode requires, pi ignores it).
    pub fn bash(command: impl Into<String>) -> Reply {
        Reply::tool("bash", bash_args(&command.into()))
    }
    /// `text`, then a `bash` tool call running `command`, in one answer.
    pub fn say_then_bash(text: impl Into<String>, command: impl Into<String>) -> Reply {
        Reply::SayThenTool {
            text: text.into(),
            name: "bash".into(),
            arguments: bash_args(&command.into()),
        }
    }
    pub fn question(s: impl Into<String>) -> Reply {
        Reply::Question(s.into())
    }
    pub fn status(code: u16) -> Reply {
        Reply::Status(code, default_error_message(code).into())
    }
    pub fn slow(d: Duration, r: Reply) -> Reply {
        Reply::Slow(d, Box::new(r))
    }
    pub fn repeat(n: usize, r: Reply) -> Reply {
        Reply::Repeat(n, Box::new(r))
    }

    /// `Repeat` unrolled into plain replies (`Slow(d, Repeat(n, r))` = n × `Slow(d, r)`).
    fn flatten(self) -> Vec<Reply> {
        match self {
            Reply::Repeat(n, r) => {
                let one = r.flatten();
                let mut v = Vec::with_capacity(n * one.len());
                for _ in 0..n {
                    v.extend(one.iter().cloned());
                }
                v
            }
            Reply::Slow(d, r) => r
                .flatten()
                .into_iter()
                .map(|x| Reply::Slow(d, Box::new(x)))
                .collect(),
            r => vec![r],
        }
    }
}

fn bash_args(command: &str) -> Value {
    json!({ "command": command, "description": "run a command" })
}

/// OpenAI's error `type` for an HTTP status.
pub fn error_type(status: u16) -> &'static str {
    match status {
        400 | 404 | 413 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        429 => "rate_limit_exceeded",
        _ => "server_error",
    }
}

fn default_error_message(status: u16) -> &'static str {
    match status {
        401 => "Incorrect API key provided",
        429 => "Rate limit reached for requests",
        500 => "The server had an error while processing your request",
        503 => "The engine is currently overloaded, please try again later",
        _ => "Error",
    }
}

/// One request the stand-in received.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    /// Path including any query string, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The JSON body (`Null` if empty; a `String` holding the raw text if not JSON).
    pub body: Value,
    /// When the request (headers and body) had been read.
    pub at: Instant,
    /// A turn request (answered from the script, or `Text("done")` once it is exhausted).
    pub scripted: bool,
    /// Index of the script entry that answered it (`None` for side requests and after the
    /// script ran out).
    pub reply_index: Option<usize>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
    /// The `messages` array (empty if none).
    pub fn messages(&self) -> Vec<Value> {
        self.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
    /// The text of every `role: "user"` message, in order (string content, or the `text`
    /// parts of an array content, joined by newlines).
    pub fn user_texts(&self) -> Vec<String> {
        self.messages()
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| content_text(&m["content"]))
            .collect()
    }
    /// The text of the last user message.
    pub fn last_user_text(&self) -> String {
        self.user_texts().pop().unwrap_or_default()
    }
    /// The system prompt (`system` or `developer` messages), joined.
    pub fn system_text(&self) -> String {
        self.messages()
            .iter()
            .filter(|m| m["role"] == "system" || m["role"] == "developer")
            .map(|m| content_text(&m["content"]))
            .collect::<Vec<_>>()
            .join("\n")
    }
    /// The text of every assistant message, in order (the earlier turns a client resends).
    pub fn assistant_texts(&self) -> Vec<String> {
        self.messages()
            .iter()
            .filter(|m| m["role"] == "assistant")
            .map(|m| content_text(&m["content"]))
            .collect()
    }
    /// The `role: "tool"` messages after the last assistant message (the results of the tool
    /// calls it answered).
    pub fn tool_results(&self) -> Vec<Value> {
        let msgs = self.messages();
        let from = msgs
            .iter()
            .rposition(|m| m["role"] == "assistant")
            .map_or(0, |i| i + 1);
        msgs[from..]
            .iter()
            .filter(|m| m["role"] == "tool")
            .cloned()
            .collect()
    }
    /// The names of the tools offered (`tools[].function.name`).
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .filter_map(|x| x["function"]["name"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The text of a message's `content`: a string, or the `text` of its parts.
pub fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .filter_map(|p| p["text"].as_str().or_else(|| p.as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The side-request rule: a chat completions request is a turn iff its body has a non-empty
/// `tools` array.
pub fn is_turn(method: &str, path: &str, body: &Value) -> bool {
    method == "POST"
        && is_completions(path)
        && body
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|t| !t.is_empty())
}

fn is_completions(path: &str) -> bool {
    matches!(
        path_only(path),
        "/v1/chat/completions" | "/chat/completions"
    )
}

fn path_only(path: &str) -> &str {
    path.split('?').next().unwrap_or(path)
}

struct State {
    script: VecDeque<Reply>,
    /// Number of script entries handed out so far (= index of the next one).
    next: usize,
    requests: Vec<Recorded>,
    /// For each handed-out script entry, when its reply was completely sent.
    sent: Vec<Option<Instant>>,
    last_activity: Instant,
}

struct Inner {
    state: Mutex<State>,
    changed: Condvar,
    stop: AtomicBool,
    addr: SocketAddr,
    ids: AtomicU64,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
    fn id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::SeqCst) + 1
    }
    fn wake_accept(&self) {
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(500));
    }
}

/// The running stand-in. Dropping it stops the server (its port is closed when `drop`
/// returns); connections still open are closed within ~100 ms.
pub struct ChatStandIn {
    inner: Arc<Inner>,
    accept: Option<JoinHandle<()>>,
}

impl ChatStandIn {
    pub fn start(script: Vec<Reply>) -> ChatStandIn {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local_addr");
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                script: script.into_iter().flat_map(Reply::flatten).collect(),
                next: 0,
                requests: Vec::new(),
                sent: Vec::new(),
                last_activity: Instant::now(),
            }),
            changed: Condvar::new(),
            stop: AtomicBool::new(false),
            addr,
            ids: AtomicU64::new(0),
        });
        let acc = inner.clone();
        let accept = thread::Builder::new()
            .name("chat-standin-accept".into())
            .spawn(move || accept_loop(listener, acc))
            .expect("spawn accept thread");
        let wd = inner.clone();
        thread::Builder::new()
            .name("chat-standin-idle".into())
            .spawn(move || loop {
                thread::sleep(POLL);
                if wd.stopped() {
                    return;
                }
                if wd.lock().last_activity.elapsed() > IDLE_LIMIT {
                    wd.stop.store(true, Ordering::SeqCst);
                    wd.changed.notify_all();
                    wd.wake_accept();
                    return;
                }
            })
            .expect("spawn idle thread");
        ChatStandIn {
            inner,
            accept: Some(accept),
        }
    }

    /// `http://127.0.0.1:PORT/v1`: the `baseUrl` (pi) / `baseURL` (opencode) to configure.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.inner.addr)
    }
    pub fn port(&self) -> u16 {
        self.inner.addr.port()
    }
    /// Append replies to the script (a `Repeat` is unrolled).
    pub fn push(&self, r: Reply) {
        self.inner.lock().script.extend(r.flatten());
    }
    /// Script entries not yet handed out.
    pub fn remaining(&self) -> usize {
        self.inner.lock().script.len()
    }
    /// Every request received so far, in order of arrival.
    pub fn requests(&self) -> Vec<Recorded> {
        self.inner.lock().requests.clone()
    }
    /// Only the turn requests.
    pub fn turns(&self) -> Vec<Recorded> {
        self.inner
            .lock()
            .requests
            .iter()
            .filter(|r| r.scripted)
            .cloned()
            .collect()
    }
    pub fn count(&self, pred: impl Fn(&Recorded) -> bool) -> usize {
        self.inner
            .lock()
            .requests
            .iter()
            .filter(|r| pred(r))
            .count()
    }
    /// When the reply of script entry `k` (0-based) was completed: taken right before its
    /// last bytes are written. `None` while not yet sent, for `Hang`, and for `k` not handed
    /// out yet.
    pub fn sent_at(&self, k: usize) -> Option<Instant> {
        self.inner.lock().sent.get(k).copied().flatten()
    }
    /// Wait until at least `n` turn (scripted) requests were received; false on timeout.
    pub fn wait_requests(&self, n: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |reqs| {
            reqs.iter().filter(|r| r.scripted).count() >= n
        })
    }
    /// Wait until the reply of script entry `k` was sent; returns when.
    pub fn wait_sent(&self, k: usize, timeout: Duration) -> Option<Instant> {
        self.wait_for(timeout, |st| st.sent.get(k).copied().flatten())
    }
    /// Wait until `pred(all requests)` holds; false on timeout.
    pub fn wait_until(&self, timeout: Duration, pred: impl Fn(&[Recorded]) -> bool) -> bool {
        self.wait_for(timeout, |st| pred(&st.requests).then_some(()))
            .is_some()
    }
    /// Wait (on the state's condition variable) until `f(state)` gives a value.
    fn wait_for<T>(&self, timeout: Duration, f: impl Fn(&State) -> Option<T>) -> Option<T> {
        let deadline = Instant::now() + timeout;
        let mut st = self.inner.lock();
        loop {
            if let Some(v) = f(&st) {
                return Some(v);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            st = self
                .inner
                .changed
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
    /// Stop now (the same as dropping it).
    pub fn stop(&mut self) {
        self.inner.stop.store(true, Ordering::SeqCst);
        self.inner.changed.notify_all();
        if let Some(h) = self.accept.take() {
            self.inner.wake_accept();
            let _ = h.join();
        }
    }
    /// True once stopped (dropped, `stop`, or idle limit).
    pub fn is_stopped(&self) -> bool {
        self.inner.stopped()
    }
}

impl Drop for ChatStandIn {
    fn drop(&mut self) {
        self.stop();
    }
}

fn accept_loop(listener: TcpListener, inner: Arc<Inner>) {
    for conn in listener.incoming() {
        if inner.stopped() {
            break;
        }
        let Ok(stream) = conn else { continue };
        let c = inner.clone();
        let _ = thread::Builder::new()
            .name("chat-standin-conn".into())
            .spawn(move || {
                let _ = serve(stream, &c);
            });
    }
}

// ---------------------------------------------------------------------------------------
// HTTP

/// A reader over the connection that polls the stop flag while waiting for bytes.
struct Conn<'a> {
    s: TcpStream,
    buf: Vec<u8>,
    inner: &'a Inner,
}

impl Conn<'_> {
    /// Read more bytes into `buf`; Ok(false) on EOF or stop.
    fn fill(&mut self) -> io::Result<bool> {
        let mut tmp = [0u8; 16384];
        loop {
            if self.inner.stopped() {
                return Ok(false);
            }
            match self.s.read(&mut tmp) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.buf.extend_from_slice(&tmp[..n]);
                    return Ok(true);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) =>
                {
                    continue
                }
                Err(e) => return Err(e),
            }
        }
    }
    /// One line terminated by CRLF (or LF), without the terminator.
    fn line(&mut self) -> io::Result<Option<String>> {
        loop {
            if let Some(p) = self.buf.iter().position(|&b| b == b'\n') {
                let mut l: Vec<u8> = self.buf.drain(..=p).collect();
                l.pop();
                if l.last() == Some(&b'\r') {
                    l.pop();
                }
                return Ok(Some(String::from_utf8_lossy(&l).into_owned()));
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }
    fn exact(&mut self, n: usize) -> io::Result<Option<Vec<u8>>> {
        while self.buf.len() < n {
            if !self.fill()? {
                return Ok(None);
            }
        }
        Ok(Some(self.buf.drain(..n).collect()))
    }
}

struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn read_request(c: &mut Conn) -> io::Result<Option<Request>> {
    let first = loop {
        match c.line()? {
            None => return Ok(None),
            Some(l) if l.is_empty() => continue, // stray CRLF between requests
            Some(l) => break l,
        }
    };
    let mut parts = first.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("/").to_string();
    let mut headers = Vec::new();
    loop {
        match c.line()? {
            None => return Ok(None),
            Some(l) if l.is_empty() => break,
            Some(l) => {
                if let Some((k, v)) = l.split_once(':') {
                    headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
                }
            }
        }
    }
    let h = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    if h("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue")) {
        c.s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    let mut body = Vec::new();
    if h("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
        loop {
            let Some(size_line) = c.line()? else {
                return Ok(None);
            };
            let size_hex = size_line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_hex, 16)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad chunk size"))?;
            if size == 0 {
                // trailers until an empty line
                loop {
                    match c.line()? {
                        None => return Ok(None),
                        Some(l) if l.is_empty() => break,
                        Some(_) => {}
                    }
                }
                break;
            }
            let Some(data) = c.exact(size)? else {
                return Ok(None);
            };
            body.extend_from_slice(&data);
            let _ = c.line()?; // CRLF after the chunk
        }
    } else if let Some(n) = h("content-length").and_then(|v| v.parse::<usize>().ok()) {
        let Some(data) = c.exact(n)? else {
            return Ok(None);
        };
        body = data;
    }
    Ok(Some(Request {
        method,
        path,
        headers,
        body,
    }))
}

fn serve(stream: TcpStream, inner: &Inner) -> io::Result<()> {
    stream.set_read_timeout(Some(POLL))?;
    stream.set_nodelay(true)?;
    let mut c = Conn {
        s: stream,
        buf: Vec::new(),
        inner,
    };
    while let Some(req) = read_request(&mut c)? {
        if inner.stopped() {
            break;
        }
        let close = req
            .headers
            .iter()
            .any(|(k, v)| k == "connection" && v.eq_ignore_ascii_case("close"));
        handle(&mut c.s, inner, req)?;
        if close || inner.stopped() {
            break;
        }
    }
    let _ = c.s.shutdown(Shutdown::Both);
    Ok(())
}

fn handle(s: &mut TcpStream, inner: &Inner, req: Request) -> io::Result<()> {
    let encoded = req
        .headers
        .iter()
        .find(|(k, _)| k == "content-encoding")
        .map(|(_, v)| v.clone())
        .filter(|v| !v.eq_ignore_ascii_case("identity"));
    let body: Value = if req.body.is_empty() {
        Value::Null
    } else if let Some(enc) = encoded {
        Value::String(format!(
            "<undecoded content-encoding: {enc}, {} bytes>",
            req.body.len()
        ))
    } else {
        serde_json::from_slice(&req.body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&req.body).into_owned()))
    };
    let path = path_only(&req.path).to_string();
    let turn = is_turn(&req.method, &req.path, &body);
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or(MODEL)
        .to_string();

    // Record, and take the script entry for a turn, in one critical section.
    let (reply, index) = {
        let mut st = inner.lock();
        st.last_activity = Instant::now();
        let (reply, index) = if turn {
            match st.script.pop_front() {
                Some(r) => {
                    let k = st.next;
                    st.next += 1;
                    st.sent.push(None);
                    (Some(r), Some(k))
                }
                None => (Some(Reply::Text("done".into())), None),
            }
        } else {
            (None, None)
        };
        st.requests.push(Recorded {
            method: req.method.clone(),
            path: req.path.clone(),
            headers: req.headers.clone(),
            body: body.clone(),
            at: Instant::now(),
            scripted: turn,
            reply_index: index,
        });
        inner.changed.notify_all();
        (reply, index)
    };

    let mark_sent = |inner: &Inner| {
        if let Some(k) = index {
            let mut st = inner.lock();
            if let Some(slot) = st.sent.get_mut(k) {
                *slot = Some(Instant::now());
            }
            inner.changed.notify_all();
        }
    };
    let head = req.method == "HEAD";
    match (req.method.as_str(), path.as_str()) {
        ("POST", p) if is_completions(p) => {
            let reply = reply.unwrap_or_else(|| Reply::Text("ok".into()));
            answer(s, inner, &reply, stream, &model, &|| mark_sent(inner))?;
            Ok(())
        }
        ("GET" | "HEAD", "/v1/models" | "/models") => write_json(
            s,
            200,
            &json!({"object":"list","data":[{"id":MODEL,"object":"model","created":0,"owned_by":"standin"}]}),
            head,
        ),
        ("GET" | "HEAD", "/") => write_json(s, 200, &json!({}), head),
        _ => write_json(
            s,
            404,
            &error_body(404, &format!("Not found: {} {}", req.method, req.path)),
            head,
        ),
    }
}

fn error_body(status: u16, msg: &str) -> Value {
    json!({"error":{"message":msg,"type":error_type(status),"param":null,"code":status.to_string()}})
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

fn write_json(s: &mut TcpStream, status: u16, v: &Value, head: bool) -> io::Result<()> {
    let body = v.to_string();
    let hdr = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nx-request-id: req_standin\r\nconnection: keep-alive\r\n\r\n",
        reason(status),
        body.len()
    );
    s.write_all(hdr.as_bytes())?;
    if !head {
        s.write_all(body.as_bytes())?;
    }
    s.flush()
}

/// Sleep `d`, polling the stop flag; while `ping` is given, send an SSE comment every 5 s.
/// Ok(false) if stopped.
fn wait(s: &mut TcpStream, inner: &Inner, d: Duration, ping: bool) -> io::Result<bool> {
    let end = Instant::now().checked_add(d); // None: forever (until stopped)
    let mut next_ping = Instant::now() + PING_EVERY;
    loop {
        if inner.stopped() {
            return Ok(false);
        }
        let now = Instant::now();
        if end.is_some_and(|e| now >= e) {
            return Ok(true);
        }
        if ping && now >= next_ping {
            chunk(s, ": keep-alive\n\n")?;
            next_ping = now + PING_EVERY;
        }
        thread::sleep(end.map_or(POLL, |e| POLL.min(e - now)));
    }
}

fn data(v: &Value) -> String {
    format!("data: {v}\n\n")
}

fn chunk(s: &mut TcpStream, data: &str) -> io::Result<()> {
    s.write_all(format!("{:x}\r\n{data}\r\n", data.len()).as_bytes())?;
    s.flush()
}

/// The usage every answer reports: a number of its own for each field (so that a sum that
/// mixes them up is wrong).
pub const PROMPT_TOKENS: u64 = 11;
pub const CACHED_TOKENS: u64 = 3;
pub const COMPLETION_TOKENS: u64 = 5;

fn usage() -> Value {
    json!({"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS,
        "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
        "prompt_tokens_details": {"cached_tokens": CACHED_TOKENS}})
}

/// Answer a chat completions request with `reply`. `mark` is called right before the last
/// bytes of the reply are written. Ok(false) when no complete reply was sent (`Hang`, or
/// stopped while waiting).
fn answer(
    s: &mut TcpStream,
    inner: &Inner,
    reply: &Reply,
    stream: bool,
    model: &str,
    mark: &dyn Fn(),
) -> io::Result<bool> {
    // Unwrap nested Slow into one delay.
    let mut delay = Duration::ZERO;
    let mut r = reply;
    while let Reply::Slow(d, inner_r) = r {
        delay += *d;
        r = inner_r;
    }
    match r {
        Reply::Hang => {
            wait(s, inner, Duration::MAX, false)?;
            return Ok(false);
        }
        Reply::Status(code, msg) => {
            if !wait(s, inner, delay, false)? {
                return Ok(false);
            }
            mark();
            write_json(s, *code, &error_body(*code, msg), false)?;
            return Ok(true);
        }
        Reply::Slow(..) | Reply::Repeat(..) => unreachable!("flattened"),
        _ => {}
    }
    let n = inner.id();
    let id = format!("chatcmpl-standin-{n:06}");
    let call_id = format!("call_standin_{n:06}");
    let (text, tool, finish): (Option<String>, Option<(&str, String)>, &str) = match r {
        Reply::Text(t) => (Some(t.clone()), None, "stop"),
        Reply::Question(t) => {
            let mut t = t.clone();
            if !t.trim_end().ends_with('?') {
                t.push('?');
            }
            (Some(t), None, "stop")
        }
        Reply::ToolCall { name, arguments } => (
            None,
            Some((name.as_str(), arguments.to_string())),
            "tool_calls",
        ),
        Reply::SayThenTool {
            text,
            name,
            arguments,
        } => (
            Some(text.clone()),
            Some((name.as_str(), arguments.to_string())),
            "tool_calls",
        ),
        _ => unreachable!(),
    };
    if !stream {
        if !wait(s, inner, delay, false)? {
            return Ok(false);
        }
        let mut message = json!({"role":"assistant","content":text});
        if let Some((name, args)) = &tool {
            message["tool_calls"] =
                json!([{"id":call_id,"type":"function","function":{"name":name,"arguments":args}}]);
        }
        let body = json!({"id":id,"object":"chat.completion","created":0,"model":model,
            "choices":[{"index":0,"message":message,"finish_reason":finish}],"usage":usage()});
        mark();
        write_json(s, 200, &body, false)?;
        return Ok(true);
    }
    s.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\nx-request-id: req_standin\r\nconnection: keep-alive\r\ntransfer-encoding: chunked\r\n\r\n",
    )?;
    let frame = |choices: Value| -> Value {
        json!({"id":id,"object":"chat.completion.chunk","created":0,"model":model,"choices":choices})
    };
    chunk(
        s,
        &data(&frame(
            json!([{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]),
        )),
    )?;
    if !delay.is_zero() {
        chunk(s, ": keep-alive\n\n")?;
        if !wait(s, inner, delay, true)? {
            return Ok(false);
        }
    }
    let mut out = String::new();
    for p in text.as_deref().map(split_text).unwrap_or_default() {
        out += &data(&frame(
            json!([{"index":0,"delta":{"content":p},"finish_reason":null}]),
        ));
    }
    if let Some((name, args)) = &tool {
        out += &data(&frame(
            json!([{"index":0,"delta":{"tool_calls":[{"index":0,"id":call_id,
            "type":"function","function":{"name":name,"arguments":""}}]},"finish_reason":null}]),
        ));
        for p in split_text(args) {
            out += &data(&frame(json!([{"index":0,"delta":{"tool_calls":[{"index":0,
                "function":{"arguments":p}}]},"finish_reason":null}])));
        }
    }
    out += &data(&frame(
        json!([{"index":0,"delta":{},"finish_reason":finish}]),
    ));
    let mut last = frame(json!([]));
    last["usage"] = usage();
    out += &data(&last);
    out += "data: [DONE]\n\n";
    mark();
    chunk(s, &out)?;
    s.write_all(b"0\r\n\r\n")?;
    s.flush()?;
    Ok(true)
}

/// Split into pieces of about 40 bytes on char boundaries (several deltas, like the real API).
fn split_text(t: &str) -> Vec<String> {
    let mut v = Vec::new();
    let mut cur = String::new();
    for ch in t.chars() {
        cur.push(ch);
        if cur.len() >= 40 {
            v.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() || v.is_empty() {
        v.push(cur);
    }
    v
}
