//! A stand-in OpenAI-compatible Chat Completions API for integration tests that run the real
//! pi (a `models.json` provider with `"api": "openai-completions"`) or opencode (an
//! `opencode.json` provider on `@ai-sdk/openai-compatible` with a `baseURL`) against
//! `http://127.0.0.1:PORT/v1`.
//!
//! Only std + serde_json: the scripted server the claude stand-in runs on
//! (tests/common/scripted.rs: it binds 127.0.0.1:0, serves each connection on its own
//! thread, records every request, and stops when the [`ChatStandIn`] is dropped or after its
//! `IDLE_LIMIT` without a request) speaking Chat Completions ([`Chat`]).
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

use std::io::{self, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};

use super::http_standin::{self as http, chunk, split_text, Request};
use super::scripted::{self, path_only, Core, Protocol};

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
pub type Recorded = scripted::Recorded<Chat>;

impl Recorded {
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

/// The running stand-in.
pub type ChatStandIn = scripted::Server<Chat>;

/// OpenAI's Chat Completions API, as pi and opencode speak it.
#[derive(Debug)]
pub enum Chat {}

impl Protocol for Chat {
    type Reply = Reply;
    const NAME: &'static str = "chat-standin";
    /// pi's `baseUrl` and opencode's `baseURL` end in `/v1`.
    const BASE_PATH: &'static str = "/v1";
    fn flatten(r: Reply) -> Vec<Reply> {
        r.flatten()
    }
    fn is_turn(method: &str, path: &str, body: &Value) -> bool {
        is_turn(method, path, body)
    }
    fn done() -> Reply {
        Reply::Text("done".into())
    }
    /// Answer a request: a completion (a turn, or a tool-less side request) with its reply,
    /// the models list, or a 404.
    fn respond(
        s: &mut TcpStream,
        core: &Core<Chat>,
        req: &Request,
        body: &Value,
        reply: Option<Reply>,
        mark: &dyn Fn(),
    ) -> io::Result<()> {
        let path = path_only(&req.path);
        let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
        let model = body.get("model").and_then(Value::as_str).unwrap_or(MODEL);
        let head = req.method == "HEAD";
        match (req.method.as_str(), path) {
            ("POST", p) if is_completions(p) => {
                let reply = reply.unwrap_or_else(|| Reply::Text("ok".into()));
                answer(s, core, &reply, stream, model, mark)?;
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
}

fn error_body(status: u16, msg: &str) -> Value {
    json!({"error":{"message":msg,"type":error_type(status),"param":null,"code":status.to_string()}})
}

fn write_json(s: &mut TcpStream, status: u16, v: &Value, head: bool) -> io::Result<()> {
    http::write_json(s, status, v, head, "x-request-id")
}

/// Sleep `d`, polling the stop flag; while `ping` is given, send an SSE comment (`: keep-alive`) every 5 s.
/// Ok(false) if stopped.
fn wait(s: &mut TcpStream, core: &Core<Chat>, d: Duration, ping: bool) -> io::Result<bool> {
    let stopped = || core.stopped();
    http::wait(
        s,
        &stopped,
        d,
        ping.then_some((": keep-alive\n\n", PING_EVERY)),
    )
}

fn data(v: &Value) -> String {
    format!("data: {v}\n\n")
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
    core: &Core<Chat>,
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
            wait(s, core, Duration::MAX, false)?;
            return Ok(false);
        }
        Reply::Status(code, msg) => {
            if !wait(s, core, delay, false)? {
                return Ok(false);
            }
            mark();
            write_json(s, *code, &error_body(*code, msg), false)?;
            return Ok(true);
        }
        Reply::Slow(..) | Reply::Repeat(..) => unreachable!("flattened"),
        _ => {}
    }
    let n = core.id();
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
        if !wait(s, core, delay, false)? {
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
        if !wait(s, core, delay, true)? {
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
