//! A stand-in for the notification channels on 127.0.0.1: ntfy (publishing to a topic,
//! and the poll API `GET <topic>/json?poll=1&since=…` answered in ntfy's JSON lines), a
//! webhook and a Slack incoming webhook. It records every request it receives, and by its
//! path it can misbehave: `/hang…` holds the request until [`NotifyStandin::release`] (or
//! until the client gives up: [`NotifyStandin::held`] counts those still open), `/fail…`
//! answers 500. Only std + serde_json.
#![allow(dead_code)]

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::http_standin::{self, Handler, Request};

/// One request as received.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    /// Names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    stopped: AtomicBool,
    released: AtomicBool,
    held: AtomicUsize,
    received: Mutex<Vec<Received>>,
    /// The reply topic's messages, in ntfy's JSON message format.
    replies: Mutex<Vec<Value>>,
}

pub struct NotifyStandin {
    pub port: u16,
    state: Arc<State>,
}

impl Handler for State {
    fn stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    fn handle(&self, s: &mut TcpStream, req: Request) -> io::Result<()> {
        self.received.lock().unwrap().push(Received {
            method: req.method.clone(),
            path: req.path.clone(),
            headers: req.headers.clone(),
            body: String::from_utf8_lossy(&req.body).into_owned(),
        });
        let path = req.path.clone();
        if path.starts_with("/hang") {
            self.held.fetch_add(1, Ordering::SeqCst);
            let gone = hold(s, self);
            self.held.fetch_sub(1, Ordering::SeqCst);
            if gone {
                return Ok(());
            }
            return text(s, 200, "text/plain", "released");
        }
        if path.starts_with("/fail") {
            return text(s, 500, "text/plain", "stand-in failure");
        }
        if let Some((_, query)) = path.split_once("/json?") {
            let since = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("since="))
                .unwrap_or("all")
                .to_string();
            let replies = self.replies.lock().unwrap().clone();
            let after: Vec<&Value> = match replies.iter().position(|m| m["id"] == since.as_str()) {
                Some(i) => replies[i + 1..].iter().collect(),
                None => match since.parse::<u64>() {
                    Ok(t) => replies
                        .iter()
                        .filter(|m| m["time"].as_u64() >= Some(t))
                        .collect(),
                    Err(_) => replies.iter().collect(),
                },
            };
            let body: String = after.iter().map(|m| format!("{m}\n")).collect();
            return text(s, 200, "application/x-ndjson", &body);
        }
        // A publish (ntfy answers with the message it stored), a webhook, Slack.
        text(
            s,
            200,
            "application/json",
            &json!({"id": "pub", "event": "message"}).to_string(),
        )
    }
}

/// Hold the request until released or stopped; whether the client went away first.
fn hold(s: &mut TcpStream, st: &State) -> bool {
    let _ = s.set_nonblocking(true);
    let mut buf = [0u8; 1];
    loop {
        if st.released.load(Ordering::SeqCst) || st.stopped.load(Ordering::SeqCst) {
            let _ = s.set_nonblocking(false);
            return false;
        }
        match s.peek(&mut buf) {
            Ok(0) => return true,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Ok(_) => {
                // More bytes (not expected): drain them.
                let _ = s.read(&mut buf);
            }
            Err(_) => return true,
        }
        std::thread::sleep(http_standin::POLL);
    }
}

fn text(s: &mut TcpStream, status: u16, ctype: &str, body: &str) -> io::Result<()> {
    let hdr = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        http_standin::reason(status),
        body.len()
    );
    s.write_all(hdr.as_bytes())?;
    s.write_all(body.as_bytes())?;
    s.flush()
}

impl NotifyStandin {
    pub fn start() -> NotifyStandin {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(State::default());
        let h = state.clone();
        std::thread::spawn(move || http_standin::accept_loop(listener, h, "notify-standin"));
        NotifyStandin { port, state }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Everything received so far.
    pub fn received(&self) -> Vec<Received> {
        self.state.received.lock().unwrap().clone()
    }

    /// What was received on paths starting with `prefix`.
    pub fn on(&self, prefix: &str) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|r| r.path.starts_with(prefix))
            .collect()
    }

    /// Requests to `/hang…` still held open (their client still waiting).
    pub fn held(&self) -> usize {
        self.state.held.load(Ordering::SeqCst)
    }

    /// Let the held requests go (answered 200).
    pub fn release(&self) {
        self.state.released.store(true, Ordering::SeqCst);
    }

    /// A message published on the reply topic, as ntfy stores it: its id.
    pub fn reply(&self, title: &str, message: &str) -> String {
        let mut replies = self.state.replies.lock().unwrap();
        let id = format!("rPly{:06}", replies.len() + 1);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let mut m = json!({
            "id": id,
            "time": now,
            "expires": now + 43200,
            "event": "message",
            "topic": "reply",
            "message": message,
        });
        if !title.is_empty() {
            m["title"] = title.into();
        }
        replies.push(m);
        id
    }
}

impl Drop for NotifyStandin {
    fn drop(&mut self) {
        self.state.stopped.store(true, Ordering::SeqCst);
        self.state.released.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// A port nothing listens on (bound, then closed).
pub fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}
