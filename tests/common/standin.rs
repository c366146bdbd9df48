//! A stand-in Anthropic Messages API for integration tests that run the real Claude Code
//! (`claude`) against `ANTHROPIC_BASE_URL=http://127.0.0.1:PORT`.
//!
//! Only std + serde_json: a scripted server (tests/common/scripted.rs: it binds
//! 127.0.0.1:0, serves each connection on its own thread, records every request, and stops
//! when the [`StandIn`] is dropped or after its `IDLE_LIMIT` without a request) speaking
//! the Messages API ([`Messages`]).
//!
//! Which requests consume the script ("turns"): `POST /v1/messages` (any query string, e.g.
//! `?beta=true`) whose JSON body has a non-empty `tools` array. Claude Code 2.1.330 sends every
//! conversation turn with its tool list (main agent: 13 tools; a sub-agent: 8, marked by
//! `cc_is_subagent=true` in the first system block, see [`Recorded::is_subagent`]). With
//! `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` it was seen sending nothing else at all; any
//! tool-less request (title/topic generation, a `max_tokens: 1` quota probe, …),
//! `POST /v1/messages/count_tokens`, and `GET`/`HEAD /` get a harmless generic answer and do
//! not touch the script. Any other path: 404 with Anthropic's error JSON.
//!
//! Claude retries 401, 429, 500 and 529 by itself, 10 times over ~3 minutes, and every retry
//! takes a script entry: launch it with `CLAUDE_CODE_MAX_RETRIES=0` (one request per error)
//! or script `Reply::repeat(n + 1, Reply::status(529))` for `CLAUDE_CODE_MAX_RETRIES=n`.
//!
//! When the script is exhausted every further turn gets `Text("done")`.
#![allow(dead_code)]

use std::io::{self, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};

use super::http_standin::{self as http, chunk, split_text, Request};
use super::scripted::{self, path_only, Core, Protocol};

/// Interval of SSE `ping` events while a streamed [`Reply::Slow`] waits.
const PING_EVERY: Duration = Duration::from_secs(5);

/// One scripted answer to a turn request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A text answer, `stop_reason: "end_turn"`.
    Text(String),
    /// A tool call, `stop_reason: "tool_use"`; claude runs the tool and sends the next turn
    /// with a `tool_result`.
    ToolUse { name: String, input: Value },
    /// Wait before answering. When streaming, `message_start` (and `ping`s every 5 s) are sent
    /// at once and the rest of the reply after the delay: a slow streamed answer.
    Slow(Duration, Box<Reply>),
    /// An HTTP error with Anthropic's error body; the error `type` follows the status
    /// (400 invalid_request_error, 401 authentication_error, 403 permission_error,
    /// 404 not_found_error, 413 request_too_large, 429 rate_limit_error, 500 api_error,
    /// 529 overloaded_error). The `String` is the error message.
    Status(u16, String),
    /// A text answer that ends with "?" (one is appended if missing), `end_turn`.
    Question(String),
    /// A text block then a tool call in ONE answer (two content blocks of one message; Claude
    /// Code writes a transcript line for each), `stop_reason: "tool_use"`.
    SayThenTool {
        text: String,
        name: String,
        input: Value,
    },
    /// Never answer (the connection stays open, silent) until the stand-in is dropped.
    Hang,
    /// The account's usage limit, as api.anthropic.com (or a gateway) sends it: HTTP 429,
    /// `rate_limit_error`, with `anthropic-ratelimit-unified-status: rejected`,
    /// `-reset: <unix seconds>`, `-representative-claim: five_hour` and
    /// `x-should-retry: false`. Claude Code 2.1.330 signed in to a gateway (or claude.ai)
    /// shows `You've hit your 5-hour limit · resets 4:16am (UTC)`; with an API key it
    /// shows only `API Error: Request rejected (429) · …`.
    Limit { reset: u64 },
    /// The inner reply, for each of the next `n` turn requests (claude's own retries of an
    /// error consume the script: `Repeat(3, Status(529, ..))` answers three attempts).
    Repeat(usize, Box<Reply>),
    /// The inner reply, its usage saying the conversation's context holds `n` tokens read
    /// from the cache (`cache_read_input_tokens`, instead of [`CACHE_READ_TOKENS`]): an
    /// answer in a long conversation.
    Context(u64, Box<Reply>),
}

impl Reply {
    pub fn text(s: impl Into<String>) -> Reply {
        Reply::Text(s.into())
    }
    pub fn tool(name: impl Into<String>, input: Value) -> Reply {
        Reply::ToolUse {
            name: name.into(),
            input,
        }
    }
    /// `Bash` tool call running `command`.
    pub fn bash(command: impl Into<String>) -> Reply {
        let command = command.into();
        Reply::ToolUse {
            name: "Bash".into(),
            input: json!({ "command": command, "description": "run a command" }),
        }
    }
    /// `text`, then a `Bash` tool call running `command`, in one answer.
    pub fn say_then_bash(text: impl Into<String>, command: impl Into<String>) -> Reply {
        Reply::SayThenTool {
            text: text.into(),
            name: "Bash".into(),
            input: json!({ "command": command.into(), "description": "run a command" }),
        }
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
    pub fn context(n: u64, r: Reply) -> Reply {
        Reply::Context(n, Box::new(r))
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
            Reply::Context(n, r) => r
                .flatten()
                .into_iter()
                .map(|x| Reply::Context(n, Box::new(x)))
                .collect(),
            r => vec![r],
        }
    }
}

/// Anthropic's error `type` for an HTTP status.
pub fn error_type(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        504 => "timeout_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

fn default_error_message(status: u16) -> &'static str {
    match status {
        401 => "invalid x-api-key",
        429 => "Number of request tokens has exceeded your per-minute rate limit",
        500 => "Internal server error",
        529 => "Overloaded",
        _ => "Error",
    }
}

/// One request the stand-in received.
pub type Recorded = scripted::Recorded<Messages>;

impl Recorded {
    /// The text of the last user message's blocks (text and tool_result contents), joined.
    pub fn last_user_text(&self) -> String {
        let msgs = self.body.get("messages").and_then(Value::as_array);
        let Some(last) = msgs.and_then(|m| m.iter().rev().find(|m| m["role"] == "user")) else {
            return String::new();
        };
        let mut out = String::new();
        collect_text(&last["content"], &mut out);
        out
    }
    /// The system prompt's text blocks, joined.
    pub fn system_text(&self) -> String {
        let mut out = String::new();
        collect_text(&self.body["system"], &mut out);
        out
    }
    /// A sub-agent's turn (Agent tool): claude 2.1.330 marks it with `cc_is_subagent=true` in
    /// the first system block (`x-anthropic-billing-header: …`). Sub-agents run in the
    /// background by default, so their turns interleave with the main agent's.
    pub fn is_subagent(&self) -> bool {
        self.system_text().contains("cc_is_subagent=true")
    }
    /// `X-Claude-Code-Session-Id` (the `--session-id`).
    pub fn session_id(&self) -> Option<&str> {
        self.header("x-claude-code-session-id")
    }
    /// The `tool_result` blocks of the last user message.
    pub fn tool_results(&self) -> Vec<Value> {
        let msgs = self.body.get("messages").and_then(Value::as_array);
        let Some(last) = msgs.and_then(|m| m.iter().rev().find(|m| m["role"] == "user")) else {
            return vec![];
        };
        last["content"]
            .as_array()
            .map(|c| {
                c.iter()
                    .filter(|b| b["type"] == "tool_result")
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn collect_text(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(s);
        }
        Value::Array(a) => a.iter().for_each(|x| collect_text(x, out)),
        Value::Object(o) => {
            if let Some(t) = o.get("text") {
                collect_text(t, out);
            } else if let Some(c) = o.get("content") {
                collect_text(c, out);
            }
        }
        _ => {}
    }
}

/// The side-request rule: a `POST /v1/messages` is a turn iff its body has a non-empty `tools`
/// array.
pub fn is_turn(method: &str, path: &str, body: &Value) -> bool {
    method == "POST"
        && path_only(path) == "/v1/messages"
        && body
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|t| !t.is_empty())
}

/// The running stand-in.
pub type StandIn = scripted::Server<Messages>;

/// The Anthropic Messages API, as claude speaks it.
#[derive(Debug)]
pub enum Messages {}

impl Protocol for Messages {
    type Reply = Reply;
    const NAME: &'static str = "standin";
    /// `ANTHROPIC_BASE_URL` is the bare `http://127.0.0.1:PORT`.
    const BASE_PATH: &'static str = "";
    fn flatten(r: Reply) -> Vec<Reply> {
        r.flatten()
    }
    fn is_turn(method: &str, path: &str, body: &Value) -> bool {
        is_turn(method, path, body)
    }
    fn done() -> Reply {
        Reply::Text("done".into())
    }
    /// Answer a request: a turn (or a tool-less side request) with its reply, the other paths
    /// with a generic answer.
    fn respond(
        s: &mut TcpStream,
        core: &Core<Messages>,
        req: &Request,
        body: &Value,
        reply: Option<Reply>,
        mark: &dyn Fn(),
    ) -> io::Result<()> {
        let path = path_only(&req.path);
        let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
        let model = body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("claude-standin");
        match (req.method.as_str(), path) {
            ("POST", "/v1/messages") => {
                let reply = reply.unwrap_or_else(|| Reply::Text("ok".into()));
                answer(s, core, &reply, stream, model, mark)?;
                Ok(())
            }
            ("POST", "/v1/messages/count_tokens") => {
                write_json(s, 200, &json!({ "input_tokens": 42 }), req.method == "HEAD")
            }
            ("GET", "/") | ("HEAD", "/") => write_json(s, 200, &json!({}), req.method == "HEAD"),
            _ => write_json(
                s,
                404,
                &json!({"type":"error","error":{"type":"not_found_error","message":format!("Not found: {} {}", req.method, req.path)}}),
                req.method == "HEAD",
            ),
        }
    }
}

fn write_json(s: &mut TcpStream, status: u16, v: &Value, head: bool) -> io::Result<()> {
    http::write_json(s, status, v, head, "request-id")
}

/// Sleep `d`, polling the stop flag; while `ping` is given, send a `ping` event every 5 s.
/// Ok(false) if stopped.
fn wait(s: &mut TcpStream, core: &Core<Messages>, d: Duration, ping: bool) -> io::Result<bool> {
    let stopped = || core.stopped();
    let p = sse("ping", &json!({"type":"ping"}));
    http::wait(s, &stopped, d, ping.then_some((p.as_str(), PING_EVERY)))
}

fn sse(event: &str, data: &Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

/// The usage every answer reports: a number of its own for each field (so that a sum that
/// mixes them up is wrong), `output` growing from `message_start` (1) to the end
/// ([`OUTPUT_TOKENS`]).
pub const INPUT_TOKENS: u64 = 11;
pub const CACHE_CREATION_TOKENS: u64 = 7;
pub const CACHE_READ_TOKENS: u64 = 3;
pub const OUTPUT_TOKENS: u64 = 5;

fn usage(output: u64, cache_read: u64) -> Value {
    json!({"input_tokens": INPUT_TOKENS, "cache_creation_input_tokens": CACHE_CREATION_TOKENS, "cache_read_input_tokens": cache_read, "output_tokens": output})
}

/// One content block of an answer: its `content_block_start`, its deltas, the whole block.
type Block = (Value, Vec<Value>, Value);

/// Answer a `/v1/messages` request with `reply`. `mark` is called right before the last
/// bytes of the reply are written (so a client holding the complete reply always finds
/// `sent_at` set). Ok(false) when no complete reply was sent (`Hang`, or stopped while waiting).
fn answer(
    s: &mut TcpStream,
    core: &Core<Messages>,
    reply: &Reply,
    stream: bool,
    model: &str,
    mark: &dyn Fn(),
) -> io::Result<bool> {
    // Unwrap nested Slow into one delay, and a Context into the usage it reports.
    let mut delay = Duration::ZERO;
    let mut cache_read = CACHE_READ_TOKENS;
    let mut r = reply;
    loop {
        match r {
            Reply::Slow(d, inner_r) => {
                delay += *d;
                r = inner_r;
            }
            Reply::Context(n, inner_r) => {
                cache_read = *n;
                r = inner_r;
            }
            _ => break,
        }
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
            let body = json!({"type":"error","error":{"type":error_type(*code),"message":msg}});
            mark();
            write_json(s, *code, &body, false)?;
            return Ok(true);
        }
        Reply::Limit { reset } => {
            if !wait(s, core, delay, false)? {
                return Ok(false);
            }
            let body = json!({"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your account's rate limit. Please try again later."}}).to_string();
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            let hdr = format!(
                "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\ncontent-length: {}\r\nrequest-id: req_standin\r\nretry-after: {}\r\nx-should-retry: false\r\nanthropic-ratelimit-unified-status: rejected\r\nanthropic-ratelimit-unified-reset: {reset}\r\nanthropic-ratelimit-unified-representative-claim: five_hour\r\nanthropic-ratelimit-unified-5h-status: rejected\r\nanthropic-ratelimit-unified-5h-reset: {reset}\r\nconnection: keep-alive\r\n\r\n",
                body.len(),
                reset.saturating_sub(now)
            );
            mark();
            s.write_all(hdr.as_bytes())?;
            s.write_all(body.as_bytes())?;
            s.flush()?;
            return Ok(true);
        }
        Reply::Slow(..) | Reply::Repeat(..) | Reply::Context(..) => unreachable!("flattened"),
        _ => {}
    }
    let n = core.id();
    let msg_id = format!("msg_standin_{n:06}");
    // Each content block: (its start, its deltas, the whole block); and the stop reason.
    let text_block = |t: &str| -> Block {
        let deltas = split_text(t)
            .into_iter()
            .map(|p| json!({"type":"text_delta","text":p}))
            .collect();
        (
            json!({"type":"text","text":""}),
            deltas,
            json!({"type":"text","text":t}),
        )
    };
    let tool_block = |name: &str, input: &Value| -> Block {
        let id = format!("toolu_standin_{n:06}");
        let js = input.to_string();
        let deltas = split_text(&js)
            .into_iter()
            .map(|p| json!({"type":"input_json_delta","partial_json":p}))
            .collect();
        (
            json!({"type":"tool_use","id":id,"name":name,"input":{}}),
            deltas,
            json!({"type":"tool_use","id":id,"name":name,"input":input}),
        )
    };
    let (blocks, stop_reason): (Vec<Block>, &str) = match r {
        Reply::Text(t) | Reply::Question(t) => {
            let mut t = t.clone();
            if matches!(r, Reply::Question(_)) && !t.trim_end().ends_with('?') {
                t.push('?');
            }
            (vec![text_block(&t)], "end_turn")
        }
        Reply::ToolUse { name, input } => (vec![tool_block(name, input)], "tool_use"),
        Reply::SayThenTool { text, name, input } => {
            (vec![text_block(text), tool_block(name, input)], "tool_use")
        }
        _ => unreachable!(),
    };
    if !stream {
        if !wait(s, core, delay, false)? {
            return Ok(false);
        }
        let body = json!({
            "id": msg_id, "type": "message", "role": "assistant", "model": model,
            "content": blocks.iter().map(|b| b.2.clone()).collect::<Vec<_>>(), "stop_reason": stop_reason, "stop_sequence": null,
            "usage": usage(OUTPUT_TOKENS, cache_read),
        });
        mark();
        write_json(s, 200, &body, false)?;
        return Ok(true);
    }
    s.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\nrequest-id: req_standin\r\nconnection: keep-alive\r\ntransfer-encoding: chunked\r\n\r\n",
    )?;
    chunk(
        s,
        &sse(
            "message_start",
            &json!({"type":"message_start","message":{"id":msg_id,"type":"message","role":"assistant","model":model,
                "content":[],"stop_reason":null,"stop_sequence":null,"usage":usage(1, cache_read)}}),
        ),
    )?;
    if !delay.is_zero() {
        chunk(s, &sse("ping", &json!({"type":"ping"})))?;
        if !wait(s, core, delay, true)? {
            return Ok(false);
        }
    }
    let mut out = String::new();
    for (index, (start_block, deltas, _)) in blocks.into_iter().enumerate() {
        out += &sse(
            "content_block_start",
            &json!({"type":"content_block_start","index":index,"content_block":start_block}),
        );
        for d in deltas {
            out += &sse(
                "content_block_delta",
                &json!({"type":"content_block_delta","index":index,"delta":d}),
            );
        }
        out += &sse(
            "content_block_stop",
            &json!({"type":"content_block_stop","index":index}),
        );
    }
    out += &sse(
        "message_delta",
        &json!({"type":"message_delta","delta":{"stop_reason":stop_reason,"stop_sequence":null},"usage":{"output_tokens":OUTPUT_TOKENS}}),
    );
    out += &sse("message_stop", &json!({"type":"message_stop"}));
    mark();
    chunk(s, &out)?;
    s.write_all(b"0\r\n\r\n")?;
    s.flush()?;
    Ok(true)
}
