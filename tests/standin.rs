//! Tests of the stand-in Messages API alone (tests/common/standin.rs), with a raw TcpStream
//! client. The `#[ignore]`d `standin_serve` is a runner for exploring the real claude by hand.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common::raw_http::{self, read_resp, send, Resp};
use crate::common::standin;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use standin::{Reply, StandIn};

impl Resp {
    /// (event name, data) pairs of an SSE body.
    fn events(&self) -> Vec<(String, Value)> {
        self.body
            .split("\n\n")
            .filter(|e| !e.trim().is_empty())
            .map(|e| {
                let mut name = String::new();
                let mut data = Value::Null;
                for l in e.lines() {
                    if let Some(v) = l.strip_prefix("event: ") {
                        name = v.to_string();
                    } else if let Some(v) = l.strip_prefix("data: ") {
                        data = serde_json::from_str(v).unwrap();
                    }
                }
                (name, data)
            })
            .collect()
    }
}

fn connect(si: &StandIn) -> (TcpStream, BufReader<TcpStream>) {
    raw_http::connect(si.port())
}

/// One request on a connection of its own.
fn req(si: &StandIn, method: &str, path: &str, body: &Value) -> Resp {
    let (mut s, mut r) = connect(si);
    send(&mut s, method, path, &raw_http::body_text(body));
    read_resp(&mut r)
}

/// A body like claude's turn requests: it has tools.
fn turn(stream: bool) -> Value {
    json!({"model":"claude-test","max_tokens":32000,"stream":stream,
        "tools":[{"name":"Bash","input_schema":{"type":"object"}}],
        "messages":[{"role":"user","content":[{"type":"text","text":"hello"}]}]})
}

#[test]
fn plain_json_text_and_script_exhaustion() {
    let si = StandIn::start(vec![Reply::text("first answer")]);
    assert!(si.base_url().starts_with("http://127.0.0.1:"));
    let r = req(&si, "POST", "/v1/messages", &turn(false));
    assert_eq!(r.status, 200);
    let j = r.json();
    assert_eq!(j["type"], "message");
    assert_eq!(j["stop_reason"], "end_turn");
    assert_eq!(j["content"][0]["text"], "first answer");
    assert!(si.sent_at(0).is_some());
    // exhausted: "done"
    let j = req(&si, "POST", "/v1/messages?beta=true", &turn(false)).json();
    assert_eq!(j["content"][0]["text"], "done");
    let reqs = si.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs.iter().all(|r| r.scripted));
    assert_eq!(reqs[0].reply_index, Some(0));
    assert_eq!(reqs[1].reply_index, None);
    assert_eq!(reqs[1].path, "/v1/messages?beta=true");
    assert_eq!(reqs[0].last_user_text(), "hello");
}

#[test]
fn sse_framing_text_and_tool_use_on_one_keepalive_connection() {
    let long = "a fairly long answer that will be split into several text deltas by the stand-in";
    let si = StandIn::start(vec![
        Reply::text(long),
        Reply::tool("Bash", json!({"command":"touch x","description":"touch"})),
        Reply::Question("Shall I go on".into()),
    ]);
    let (mut s, mut r) = connect(&si);
    send(
        &mut s,
        "POST",
        "/v1/messages?beta=true",
        &turn(true).to_string(),
    );
    let resp = read_resp(&mut r);
    assert_eq!(resp.status, 200);
    assert!(resp
        .header("content-type")
        .unwrap()
        .starts_with("text/event-stream"));
    let ev = resp.events();
    let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"message_start"));
    assert_eq!(
        &names[names.len() - 3..],
        &["content_block_stop", "message_delta", "message_stop"]
    );
    assert_eq!(names[1], "content_block_start");
    assert!(
        names
            .iter()
            .filter(|n| **n == "content_block_delta")
            .count()
            > 1
    );
    for (n, d) in &ev {
        assert_eq!(d["type"], *n, "data.type matches the event name");
    }
    let text: String = ev
        .iter()
        .filter(|(n, _)| n == "content_block_delta")
        .map(|(_, d)| d["delta"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(text, long);
    let md = &ev.iter().find(|(n, _)| n == "message_delta").unwrap().1;
    assert_eq!(md["delta"]["stop_reason"], "end_turn");
    assert!(md["usage"]["output_tokens"].is_number());

    // same connection (keep-alive): the tool call
    send(
        &mut s,
        "POST",
        "/v1/messages?beta=true",
        &turn(true).to_string(),
    );
    let ev = read_resp(&mut r).events();
    let start = &ev
        .iter()
        .find(|(n, _)| n == "content_block_start")
        .unwrap()
        .1;
    assert_eq!(start["content_block"]["type"], "tool_use");
    assert_eq!(start["content_block"]["name"], "Bash");
    assert!(start["content_block"]["id"]
        .as_str()
        .unwrap()
        .starts_with("toolu_"));
    let js: String = ev
        .iter()
        .filter(|(n, _)| n == "content_block_delta")
        .map(|(_, d)| {
            assert_eq!(d["delta"]["type"], "input_json_delta");
            d["delta"]["partial_json"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&js).unwrap(),
        json!({"command":"touch x","description":"touch"})
    );
    let md = &ev.iter().find(|(n, _)| n == "message_delta").unwrap().1;
    assert_eq!(md["delta"]["stop_reason"], "tool_use");

    send(&mut s, "POST", "/v1/messages", &turn(true).to_string());
    let ev = read_resp(&mut r).events();
    let text: String = ev
        .iter()
        .filter(|(n, _)| n == "content_block_delta")
        .map(|(_, d)| d["delta"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(text, "Shall I go on?");
    assert_eq!(si.turns().len(), 3);
}

#[test]
fn error_statuses_and_repeat() {
    let si = StandIn::start(vec![
        Reply::status(401),
        Reply::status(429),
        Reply::status(500),
        Reply::repeat(2, Reply::status(529)),
        Reply::Status(400, "prompt is too long".into()),
        Reply::text("after errors"),
    ]);
    let expect = [
        (401, "authentication_error"),
        (429, "rate_limit_error"),
        (500, "api_error"),
        (529, "overloaded_error"),
        (529, "overloaded_error"),
        (400, "invalid_request_error"),
    ];
    for (k, (code, ty)) in expect.iter().enumerate() {
        let r = req(&si, "POST", "/v1/messages", &turn(k % 2 == 0));
        assert_eq!(r.status, *code);
        let j = r.json();
        assert_eq!(j["type"], "error");
        assert_eq!(j["error"]["type"], *ty);
        assert!(j["error"]["message"].is_string());
        assert!(si.sent_at(k).is_some());
    }
    let j = req(&si, "POST", "/v1/messages", &turn(false)).json();
    assert_eq!(j["content"][0]["text"], "after errors");
    assert_eq!(si.remaining(), 0);
}

#[test]
fn side_requests_do_not_consume_the_script() {
    let si = StandIn::start(vec![Reply::text("the real answer")]);
    // no tools: a side request (title generation, quota probe)
    let side = json!({"model":"claude-haiku","max_tokens":1,"messages":[{"role":"user","content":"quota"}]});
    let r = req(&si, "POST", "/v1/messages?beta=true", &side);
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["type"], "message");
    let side_stream =
        json!({"model":"claude-haiku","max_tokens":512,"stream":true,"tools":[],"messages":[]});
    let r = req(&si, "POST", "/v1/messages", &side_stream);
    assert_eq!(r.events().last().unwrap().0, "message_stop");
    let r = req(
        &si,
        "POST",
        "/v1/messages/count_tokens?beta=true",
        &turn(false),
    );
    assert_eq!(r.status, 200);
    assert!(r.json()["input_tokens"].is_number());
    assert_eq!(req(&si, "GET", "/", &Value::Null).status, 200);
    let r = req(&si, "GET", "/v1/models", &Value::Null);
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["type"], "not_found_error");
    assert_eq!(si.remaining(), 1, "nothing consumed yet");
    assert_eq!(si.count(|r| r.scripted), 0);
    let j = req(&si, "POST", "/v1/messages", &turn(false)).json();
    assert_eq!(j["content"][0]["text"], "the real answer");
    assert_eq!(si.count(|r| !r.scripted), 5);
    assert!(si.wait_requests(1, Duration::from_secs(1)));
    assert!(!si.wait_requests(2, Duration::from_millis(200)));
}

#[test]
fn chunked_request_body() {
    let si = StandIn::start(vec![Reply::text("chunked ok")]);
    let (mut s, mut r) = connect(&si);
    let body = turn(false).to_string();
    let (a, b) = body.split_at(body.len() / 2);
    let msg = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    );
    s.write_all(msg.as_bytes()).unwrap();
    assert_eq!(read_resp(&mut r).json()["content"][0]["text"], "chunked ok");
    assert_eq!(si.requests()[0].body["model"], "claude-test");
}

#[test]
fn slow_stream_sends_message_start_first() {
    let si = StandIn::start(vec![Reply::slow(
        Duration::from_millis(700),
        Reply::text("slow"),
    )]);
    let (mut s, mut r) = connect(&si);
    let t0 = Instant::now();
    send(&mut s, "POST", "/v1/messages", &turn(true).to_string());
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert!(line.starts_with("HTTP/1.1 200"));
    // read until message_start shows up
    let mut seen = String::new();
    while !seen.contains("message_start") {
        line.clear();
        r.read_line(&mut line).unwrap();
        seen.push_str(&line);
    }
    // The order, not the clock: message_start is here while the reply is not complete,
    // and it completes after that.
    let started = Instant::now();
    assert!(si.sent_at(0).is_none(), "message_start before the delay");
    let sent = si.wait_sent(0, Duration::from_secs(5)).expect("sent");
    assert!(sent > started, "completed after message_start");
    eprintln!(
        "message_start after {:?}, complete after {:?} (the delay: 700 ms)",
        started - t0,
        sent - t0
    );
}

#[test]
fn hang_then_drop_closes_everything() {
    let si = StandIn::start(vec![Reply::Hang]);
    let port = si.port();
    let (mut s, mut r) = connect(&si);
    send(&mut s, "POST", "/v1/messages", &turn(true).to_string());
    assert!(si.wait_requests(1, Duration::from_secs(5)));
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut b = [0u8; 1];
    assert!(r.get_mut().read(&mut b).is_err(), "no answer while hanging");
    assert!(si.sent_at(0).is_none());
    let t0 = Instant::now();
    drop(si);
    eprintln!("drop took {:?}", t0.elapsed());
    // the listener is gone
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "port closed after drop"
    );
    // the hanging connection is closed by the server within ~100 ms
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let n = r.get_mut().read(&mut b).unwrap_or(0);
    assert_eq!(n, 0, "EOF on the hanging connection");
}

/// Runner for exploring the real claude by hand:
/// `STANDIN_SCRIPT='[{"text":"hi"},{"bash":"touch x"},{"status":529,"n":3},{"slow":5,"text":"x"},{"hang":true}]'
///  STANDIN_LOG=/tmp/req.jsonl STANDIN_SECS=600 cargo test --test runner standin::standin_serve -- --ignored --nocapture`
/// Prints `PORT <n>` and appends each request (method, path, scripted, body) to STANDIN_LOG.
#[test]
#[ignore]
fn standin_serve() {
    let script: Vec<Value> =
        serde_json::from_str(&std::env::var("STANDIN_SCRIPT").unwrap_or_else(|_| "[]".into()))
            .unwrap();
    let parse = |v: &Value| -> Reply {
        let mut r = if let Some(t) = v.get("text") {
            Reply::text(t.as_str().unwrap())
        } else if let Some(q) = v.get("question") {
            Reply::Question(q.as_str().unwrap().into())
        } else if let Some(c) = v.get("bash") {
            Reply::tool("Bash", json!({"command": c, "description": "run"}))
        } else if let Some(n) = v.get("tool") {
            Reply::tool(n.as_str().unwrap(), v["input"].clone())
        } else if let Some(c) = v.get("status") {
            match v.get("message").and_then(Value::as_str) {
                Some(m) => Reply::Status(c.as_u64().unwrap() as u16, m.into()),
                None => Reply::status(c.as_u64().unwrap() as u16),
            }
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
    let si = StandIn::start(script.iter().map(parse).collect());
    println!("PORT {}", si.port());
    if let Ok(f) = std::env::var("STANDIN_PORT_FILE") {
        std::fs::write(f, si.port().to_string()).unwrap();
    }
    let log = std::env::var("STANDIN_LOG").ok();
    let secs: u64 = std::env::var("STANDIN_SECS")
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
            let line = json!({"t": r.at.duration_since(t0).as_secs_f64(), "method": r.method, "path": r.path,
                "scripted": r.scripted, "reply_index": r.reply_index,
                "retry": r.header("x-stainless-retry-count"), "body": r.body});
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
