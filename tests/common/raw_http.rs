//! A raw HTTP/1.1 client for the stand-ins' own tests (tests/standin.rs,
//! tests/chat_standin.rs): a request written by hand on a TcpStream and its response read
//! back as it comes (a Content-Length or a chunked body), so a test sees the wire format
//! a real client receives.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;

/// One response: its status, its headers (names lower-cased), its body (chunks joined).
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Resp {
    /// The body as JSON (the test fails when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
    /// The value of header `k` (lower case).
    pub fn header(&self, k: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }
}

/// A connection to 127.0.0.1:`port` (reads time out after 10 s) and a reader on it.
pub fn connect(port: u16) -> (TcpStream, BufReader<TcpStream>) {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let r = BufReader::new(s.try_clone().unwrap());
    (s, r)
}

/// Write a request with a JSON `body` (may be empty).
pub fn send(s: &mut TcpStream, method: &str, path: &str, body: &str) {
    let req = format!(
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
}

/// `body` as a request's text: nothing for `Null`.
pub fn body_text(body: &Value) -> String {
    if body.is_null() {
        String::new()
    } else {
        body.to_string()
    }
}

/// Read one response.
pub fn read_resp(r: &mut BufReader<TcpStream>) -> Resp {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .expect("status line")
        .parse()
        .unwrap();
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':').unwrap();
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let h = |k: &str| headers.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let mut body = Vec::new();
    if h("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        loop {
            line.clear();
            r.read_line(&mut line).unwrap();
            let n = usize::from_str_radix(line.trim(), 16).unwrap();
            if n == 0 {
                line.clear();
                r.read_line(&mut line).unwrap();
                break;
            }
            let mut buf = vec![0; n + 2];
            r.read_exact(&mut buf).unwrap();
            body.extend_from_slice(&buf[..n]);
        }
    } else if let Some(n) = h("content-length") {
        let mut buf = vec![0; n.parse().unwrap()];
        r.read_exact(&mut buf).unwrap();
        body = buf;
    }
    Resp {
        status,
        headers,
        body: String::from_utf8(body).unwrap(),
    }
}
