//! The HTTP/1.1 layer the stand-in model servers share (tests/common/standin.rs, the
//! Anthropic Messages API; tests/common/chat_standin.rs, OpenAI Chat Completions): accepting
//! connections, reading requests (keep-alive, Content-Length or chunked bodies), writing JSON
//! and chunked streams, waiting while polling a stop flag. Only std + serde_json.
#![allow(dead_code)]

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

/// How often blocked connection threads look at the stop flag.
pub const POLL: Duration = Duration::from_millis(100);

/// A stand-in's answers: its stop flag, and what it answers to one request.
pub trait Handler: Send + Sync + 'static {
    fn stopped(&self) -> bool;
    fn handle(&self, s: &mut TcpStream, req: Request) -> io::Result<()>;
}

/// Serve each connection of `listener` on its own thread (named `name`) until stopped.
pub fn accept_loop<H: Handler>(listener: TcpListener, h: Arc<H>, name: &str) {
    for conn in listener.incoming() {
        if h.stopped() {
            break;
        }
        let Ok(stream) = conn else { continue };
        let c = h.clone();
        let _ = thread::Builder::new().name(name.into()).spawn(move || {
            let _ = serve(stream, &*c);
        });
    }
}

/// A reader over the connection (plain TCP, or TLS over it: tests/common/gh_standin.rs)
/// that polls the stop flag while waiting for bytes.
struct Conn<'a, S> {
    s: S,
    buf: Vec<u8>,
    stopped: &'a dyn Fn() -> bool,
}

impl<S: Read> Conn<'_, S> {
    /// Read more bytes into `buf`; Ok(false) on EOF or stop.
    fn fill(&mut self) -> io::Result<bool> {
        let mut tmp = [0u8; 16384];
        loop {
            if (self.stopped)() {
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

pub struct Request {
    pub method: String,
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

fn read_request<S: Read + Write>(c: &mut Conn<S>) -> io::Result<Option<Request>> {
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

fn serve<H: Handler>(stream: TcpStream, h: &H) -> io::Result<()> {
    stream.set_read_timeout(Some(POLL))?;
    stream.set_nodelay(true)?;
    let s = stream.try_clone()?;
    let r = serve_stream(s, &|| h.stopped(), &mut |s, req| h.handle(s, req));
    let _ = stream.shutdown(Shutdown::Both);
    r
}

/// Read requests from `s` (keep-alive) until EOF, `Connection: close` or `stopped`,
/// answering each with `answer`.
pub fn serve_stream<S: Read + Write>(
    s: S,
    stopped: &dyn Fn() -> bool,
    answer: &mut dyn FnMut(&mut S, Request) -> io::Result<()>,
) -> io::Result<()> {
    let mut c = Conn {
        s,
        buf: Vec::new(),
        stopped,
    };
    while let Some(req) = read_request(&mut c)? {
        if stopped() {
            break;
        }
        let close = req
            .headers
            .iter()
            .any(|(k, v)| k == "connection" && v.eq_ignore_ascii_case("close"));
        answer(&mut c.s, req)?;
        if close || stopped() {
            break;
        }
    }
    Ok(())
}

/// The request's JSON body (`Null` if empty; a `String` holding the raw text if not JSON,
/// or saying it was compressed).
pub fn json_body(req: &Request) -> Value {
    let encoded = req
        .headers
        .iter()
        .find(|(k, _)| k == "content-encoding")
        .map(|(_, v)| v.clone())
        .filter(|v| !v.eq_ignore_ascii_case("identity"));
    if req.body.is_empty() {
        Value::Null
    } else if let Some(enc) = encoded {
        Value::String(format!(
            "<undecoded content-encoding: {enc}, {} bytes>",
            req.body.len()
        ))
    } else {
        serde_json::from_slice(&req.body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&req.body).into_owned()))
    }
}

pub fn reason(status: u16) -> &'static str {
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
        529 => "Site Overloaded",
        _ => "Status",
    }
}

/// A JSON response; `id_header` names the request id header (`request-id`, `x-request-id`).
pub fn write_json(
    s: &mut impl Write,
    status: u16,
    v: &Value,
    head: bool,
    id_header: &str,
) -> io::Result<()> {
    let body = v.to_string();
    let hdr = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{id_header}: req_standin\r\nconnection: keep-alive\r\n\r\n",
        reason(status),
        body.len()
    );
    s.write_all(hdr.as_bytes())?;
    if !head {
        s.write_all(body.as_bytes())?;
    }
    s.flush()
}

/// One chunk of a chunked body.
pub fn chunk(s: &mut TcpStream, data: &str) -> io::Result<()> {
    s.write_all(format!("{:x}\r\n{data}\r\n", data.len()).as_bytes())?;
    s.flush()
}

/// Sleep `d` (`Duration::MAX`: until stopped), polling `stopped`; with `ping`, send it as a
/// chunk every `every`. Ok(false) if stopped.
pub fn wait(
    s: &mut TcpStream,
    stopped: &dyn Fn() -> bool,
    d: Duration,
    ping: Option<(&str, Duration)>,
) -> io::Result<bool> {
    let end = Instant::now().checked_add(d); // None: forever (until stopped)
    let every = ping.map_or(Duration::MAX, |p| p.1);
    let mut next_ping = Instant::now().checked_add(every);
    loop {
        if stopped() {
            return Ok(false);
        }
        let now = Instant::now();
        if end.is_some_and(|e| now >= e) {
            return Ok(true);
        }
        if let (Some((text, _)), Some(at)) = (ping, next_ping) {
            if now >= at {
                chunk(s, text)?;
                next_ping = now.checked_add(every);
            }
        }
        thread::sleep(end.map_or(POLL, |e| POLL.min(e - now)));
    }
}

/// Split into pieces of about 40 bytes on char boundaries (several deltas, like the real API).
pub fn split_text(t: &str) -> Vec<String> {
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
