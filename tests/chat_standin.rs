//! Tests of the stand-in Chat Completions API (tests/common/chat_standin.rs): its wire format
//! with a raw TcpStream client, and one real turn of the real pi against it (a tool call that
//! writes a file in the working directory, then text). The `#[ignore]`d `chat_standin_serve`
//! is a runner for exploring pi or opencode by hand.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;
use crate::common::chat_standin;
use crate::common::raw_http::{self, read_resp, send, Resp};

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use chat_standin::{ChatStandIn, Reply};
use serde_json::{json, Value};

impl Resp {
    /// The `data:` payloads of an SSE body, in order (`[DONE]` as a JSON string).
    fn data(&self) -> Vec<Value> {
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap_or_else(|_| Value::String(d.into())))
            .collect()
    }
}

/// One request on one keep-alive connection.
fn req(c: &mut (TcpStream, BufReader<TcpStream>), method: &str, path: &str, body: &Value) -> Resp {
    send(&mut c.0, method, path, &raw_http::body_text(body));
    read_resp(&mut c.1)
}

fn connect(si: &ChatStandIn) -> (TcpStream, BufReader<TcpStream>) {
    raw_http::connect(si.port())
}

/// A body like an agent's turn: it has tools.
fn turn(stream: bool, user: &str) -> Value {
    json!({"model":"m1","stream":stream,"stream_options":{"include_usage":true},
        "tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object"}}}],
        "messages":[{"role":"system","content":"sys"},{"role":"user","content":[{"type":"text","text":user}]}]})
}

#[test]
fn streamed_text_and_tool_call_chunks_end_with_done() {
    let si = ChatStandIn::start(vec![
        Reply::text("hello there"),
        Reply::say_then_bash("on it", "touch x"),
    ]);
    let mut c = connect(&si);
    let r = req(&mut c, "POST", "/v1/chat/completions", &turn(true, "hi"));
    assert_eq!(r.status, 200);
    let d = r.data();
    assert_eq!(d.last().unwrap(), &json!("[DONE]"), "{}", r.body);
    assert_eq!(d[0]["object"], "chat.completion.chunk");
    assert_eq!(d[0]["model"], "m1");
    assert_eq!(d[0]["choices"][0]["delta"]["role"], "assistant");
    let text: String = d
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "hello there");
    let finish: Vec<&str> = d
        .iter()
        .filter_map(|c| c["choices"][0]["finish_reason"].as_str())
        .collect();
    assert_eq!(finish, ["stop"]);
    let usage = &d[d.len() - 2];
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["prompt_tokens"], chat_standin::PROMPT_TOKENS);

    // Same connection (keep-alive), the other path: text then a tool call.
    let r = req(&mut c, "POST", "/chat/completions", &turn(true, "go"));
    let d = r.data();
    let args: String = d
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&args).unwrap()["command"],
        "touch x"
    );
    let first_call = d
        .iter()
        .find(|c| c["choices"][0]["delta"]["tool_calls"][0]["id"].is_string())
        .expect("a tool call with an id");
    assert_eq!(
        first_call["choices"][0]["delta"]["tool_calls"][0]["function"]["name"],
        "bash"
    );
    assert!(d
        .iter()
        .any(|c| c["choices"][0]["finish_reason"] == "tool_calls"));
    assert_eq!(d.last().unwrap(), &json!("[DONE]"));

    let turns = si.turns();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[0].last_user_text(), "hi");
    assert_eq!(turns[0].system_text(), "sys");
    assert_eq!(turns[1].tool_names(), ["bash"]);
    assert_eq!(turns[1].reply_index, Some(1));
    assert!(si.sent_at(1).is_some());
}

#[test]
fn errors_plain_json_models_and_side_requests() {
    let si = ChatStandIn::start(vec![
        Reply::repeat(2, Reply::status(503)),
        Reply::text("ok!"),
    ]);
    let mut c = connect(&si);
    let m = req(&mut c, "GET", "/v1/models", &Value::Null);
    assert_eq!(m.json()["data"][0]["id"], chat_standin::MODEL);
    // A request without tools (a title) is answered and does not consume the script.
    let side = json!({"model":"m","messages":[{"role":"user","content":"title?"}]});
    let r = req(&mut c, "POST", "/v1/chat/completions", &side);
    assert_eq!(r.json()["choices"][0]["message"]["content"], "ok");
    for _ in 0..2 {
        let r = req(&mut c, "POST", "/v1/chat/completions", &turn(false, "x"));
        assert_eq!(r.status, 503);
        assert_eq!(r.json()["error"]["type"], "server_error");
    }
    let r = req(&mut c, "POST", "/v1/chat/completions", &turn(false, "x"));
    assert_eq!(r.json()["choices"][0]["message"]["content"], "ok!");
    assert_eq!(r.json()["choices"][0]["finish_reason"], "stop");
    // Exhausted: "done".
    let r = req(&mut c, "POST", "/v1/chat/completions", &turn(false, "x"));
    assert_eq!(r.json()["choices"][0]["message"]["content"], "done");
    assert_eq!(req(&mut c, "GET", "/nope", &Value::Null).status, 404);
    assert_eq!(si.turns().len(), 4);
    assert_eq!(si.requests().len(), 7);
}

#[test]
fn slow_stream_sends_its_first_chunk_at_once() {
    let si = ChatStandIn::start(vec![Reply::slow(
        Duration::from_millis(1500),
        Reply::text("late"),
    )]);
    let (mut s, r) = connect(&si);
    let body = turn(true, "x").to_string();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: h\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    let mut r = r;
    let mut line = String::new();
    // Headers, then the first chunk's data line, before the reply is complete.
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        if line.starts_with("data: ") {
            break;
        }
    }
    assert!(line.contains("\"role\":\"assistant\""), "{line}");
    assert!(si.sent_at(0).is_none(), "the reply is still pending");
    assert!(si.wait_sent(0, Duration::from_secs(10)).is_some());
}

/// pi's agent directory pointed at `si`: a custom `openai-completions` provider as default.
pub fn pi_agent_dir(dir: &Path, si: &ChatStandIn) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("models.json"),
        json!({"providers": {"standin": {
            "baseUrl": si.base_url(), "api": "openai-completions", "apiKey": "standin-key",
            "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
            "models": [{"id": chat_standin::MODEL}]
        }}})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("settings.json"),
        json!({"defaultProvider": "standin", "defaultModel": chat_standin::MODEL,
            "enableInstallTelemetry": false, "quietStartup": true})
        .to_string(),
    )
    .unwrap();
}

/// The real pi, one-shot (`pi -p`), completes a turn against the stand-in: it runs the
/// scripted `bash` tool call (the file appears in its working directory), sends the tool's
/// output back, prints the final text and exits 0.
#[test]
fn real_pi_completes_a_tool_turn() {
    let found = common::find_program(&std::env::var("PATH").unwrap_or_default(), "pi");
    if !common::require("pi", found.is_some(), "this test drives the real pi") {
        return;
    }
    let pi = found.unwrap();
    let si = ChatStandIn::start(vec![
        Reply::bash("echo made > made.txt && echo tool-ran"),
        Reply::text("all finished"),
    ]);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let agent = home.join(".pi/agent");
    pi_agent_dir(&agent, &si);
    let out = Command::new(pi)
        .args(["-p", "make the file"])
        .current_dir(&work)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("PI_CODING_AGENT_DIR", &agent)
        .env("PI_OFFLINE", "1")
        .env("PI_SKIP_VERSION_CHECK", "1")
        .env("PI_TELEMETRY", "0")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("all finished"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(work.join("made.txt")).unwrap(),
        "made\n"
    );
    let turns = si.turns();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[0].last_user_text(), "make the file");
    let results = turns[1].tool_results();
    assert_eq!(results.len(), 1, "{:?}", turns[1].body);
    assert!(
        chat_standin::content_text(&results[0]["content"]).contains("tool-ran"),
        "{results:?}"
    );
}

/// Runner for exploring pi or opencode by hand:
/// `CHAT_SCRIPT='[{"text":"hi"},{"bash":"touch x"},{"status":503,"n":3},{"slow":5,"text":"x"},{"hang":true}]'
///  CHAT_LOG=/tmp/req.jsonl CHAT_SECS=600 CHAT_PORT_FILE=/tmp/port cargo test --test runner
///  chat_standin::chat_standin_serve -- --ignored --nocapture`
#[test]
#[ignore]
fn chat_standin_serve() {
    let script: Vec<Value> =
        serde_json::from_str(&std::env::var("CHAT_SCRIPT").unwrap_or_else(|_| "[]".into()))
            .unwrap();
    let parse = |v: &Value| -> Reply {
        let mut r = if let Some(t) = v.get("text") {
            Reply::text(t.as_str().unwrap())
        } else if let Some(q) = v.get("question") {
            Reply::question(q.as_str().unwrap())
        } else if let Some(c) = v.get("bash") {
            Reply::bash(c.as_str().unwrap())
        } else if let Some(n) = v.get("tool") {
            Reply::tool(n.as_str().unwrap(), v["arguments"].clone())
        } else if let Some(c) = v.get("status") {
            Reply::status(c.as_u64().unwrap() as u16)
        } else if v.get("hang").is_some() {
            Reply::Hang
        } else {
            panic!("bad script entry {v}")
        };
        if let Some(s) = v.get("slow").and_then(Value::as_f64) {
            r = Reply::slow(Duration::from_secs_f64(s), r);
        }
        if let Some(n) = v.get("n").and_then(Value::as_u64) {
            r = Reply::repeat(n as usize, r);
        }
        r
    };
    let si = ChatStandIn::start(script.iter().map(parse).collect());
    println!("PORT {}", si.port());
    if let Ok(f) = std::env::var("CHAT_PORT_FILE") {
        std::fs::write(f, si.port().to_string()).unwrap();
    }
    let log = std::env::var("CHAT_LOG").ok();
    let secs: u64 = std::env::var("CHAT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let end = Instant::now() + Duration::from_secs(secs);
    let t0 = Instant::now();
    let mut done = 0;
    while Instant::now() < end {
        si.wait_until(Duration::from_millis(500), |r| r.len() > done);
        let reqs = si.requests();
        for r in &reqs[done..] {
            let line = json!({"t": r.at.duration_since(t0).as_secs_f64(), "method": r.method,
                "path": r.path, "scripted": r.scripted, "reply_index": r.reply_index, "body": r.body});
            if let Some(p) = &log {
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .unwrap();
                writeln!(f, "{line}").unwrap();
            }
            println!(
                "REQ {:.2}s {} {} scripted={} idx={:?}",
                r.at.duration_since(t0).as_secs_f64(),
                r.method,
                r.path,
                r.scripted,
                r.reply_index
            );
        }
        done = reqs.len();
    }
}
