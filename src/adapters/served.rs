//! A host's `orange serve --stdio` as a broker (`adapters::broker`) talks to it: the
//! protocol (one JSON value a line; see the broker's documentation) and the server itself,
//! an `ssh … orange serve --stdio` session on the host's shared connection: started and
//! checked (its hello: the protocol, a compatible version), asked one request at a time,
//! and told apart when it dies — before it accepted a request (never run: the broker
//! starts another) or after (a dropped connection or a failed command).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::ssh::{last_line, Ssh, SshError};

/// The server protocol's version (the first line a server prints).
pub const PROTOCOL: u32 = 1;
/// How long a server may take to say hello: its login shell may be slow (a `.bashrc` that
/// waits for a lock), and a command run the old way would have waited for it too; past
/// this the host counts as unreachable (and the server's slot is freed).
const HELLO_WAIT: Duration = Duration::from_secs(120);

// --- the protocol --------------------------------------------------------------------

/// The server's first line.
#[derive(Debug, Serialize, Deserialize)]
pub struct Hello {
    pub orange_serve: u32,
    pub version: String,
}

/// One command for a server (or, without `id`, for a broker).
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Request {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// The command line after the program name.
    #[serde(default)]
    pub args: Vec<String>,
    /// Its standard input, when it has one: text…
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    /// …or bytes that are not UTF-8, in hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin_hex: Option<String>,
    /// For a broker: stop (its host was removed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quit: bool,
    /// For a broker: the asking orange's version (a broker of another one steps aside).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl Request {
    pub fn new(args: &[String], stdin: Option<&[u8]>) -> Request {
        let mut r = Request {
            args: args.to_vec(),
            ..Request::default()
        };
        match stdin.map(std::str::from_utf8) {
            Some(Ok(text)) => r.stdin = Some(text.to_string()),
            Some(Err(_)) => r.stdin_hex = stdin.map(hex),
            None => {}
        }
        r
    }

    /// The standard input it carries (empty when none).
    pub fn input(&self) -> Vec<u8> {
        match (&self.stdin, &self.stdin_hex) {
            (Some(s), _) => s.as_bytes().to_vec(),
            (None, Some(h)) => unhex(h),
            _ => Vec::new(),
        }
    }
}

/// What a server says it accepted a request.
#[derive(Debug, Serialize, Deserialize)]
pub struct Accepted {
    pub id: u64,
    pub accepted: bool,
}

/// A server's answer: what the command exited with and printed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answer {
    pub id: u64,
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .filter_map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}

/// The same major and minor version (the `--json` contract changes with them).
pub fn compatible(a: &str, b: &str) -> bool {
    let mm = |v: &str| v.split('.').take(2).collect::<Vec<_>>().join(".");
    !b.is_empty() && mm(a) == mm(b)
}

// --- the server ---------------------------------------------------------------------------

/// Why a server could not start.
pub(super) enum StartError {
    Unreachable(String),
    NotFound(String),
    NoServe(String),
    Failed(String),
}

/// How a request on a server ended without an answer.
pub(super) enum Died {
    /// Before the server accepted it: it never ran.
    Before,
    /// After: ssh's exit status, and its last words.
    After(Option<i32>, String),
}

/// One `ssh … orange serve --stdio`.
pub(super) struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    stderr_thread: Option<std::thread::JoinHandle<()>>,
}

/// Send each line of `out` to `tx`, until either ends.
fn forward_lines(out: impl Read, tx: std::sync::mpsc::Sender<String>) {
    for line in BufReader::new(out).lines() {
        let Ok(line) = line else { break };
        if tx.send(line).is_err() {
            break;
        }
    }
}

/// Keep the last 20 lines of `err` in `keep` (a server's last words), until it ends.
fn keep_last_lines(mut err: impl Read, keep: &Mutex<VecDeque<String>>) {
    let mut buf = [0u8; 4096];
    let mut pending = String::new();
    while let Ok(n) = err.read(&mut buf) {
        if n == 0 {
            break;
        }
        pending.push_str(&String::from_utf8_lossy(&buf[..n]));
        while let Some(i) = pending.find('\n') {
            let l: String = pending.drain(..=i).collect();
            if let Ok(mut k) = keep.lock() {
                k.push_back(l.trim_end().to_string());
                if k.len() > 20 {
                    k.pop_front();
                }
            }
        }
    }
    if !pending.trim().is_empty() {
        if let Ok(mut k) = keep.lock() {
            k.push_back(pending.trim_end().to_string());
        }
    }
}

impl Server {
    /// Run `argv` (`orange serve --stdio` as the host runs it) through `ssh` with `env`,
    /// and wait for its hello.
    pub(super) fn start(
        ssh: &Ssh,
        env: &[(String, String)],
        argv: &[String],
    ) -> Result<Server, StartError> {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let mut child = ssh.spawn_stdio(&env, argv).map_err(|e| match e {
            SshError::NotFound => StartError::NotFound(e.to_string()),
            other => StartError::Failed(other.to_string()),
        })?;
        let stdin = child.stdin.take();
        let (tx, lines) = std::sync::mpsc::channel();
        if let Some(out) = child.stdout.take() {
            std::thread::spawn(move || forward_lines(out, tx));
        }
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let stderr_thread = child.stderr.take().map(|err| {
            let keep = Arc::clone(&stderr);
            std::thread::spawn(move || keep_last_lines(err, &keep))
        });
        Server {
            child,
            stdin,
            lines,
            stderr,
            stderr_thread,
        }
        .hello()
    }

    /// Wait for the server's hello line and check that it speaks our protocol and version.
    fn hello(mut self) -> Result<Server, StartError> {
        let until = Instant::now() + HELLO_WAIT;
        loop {
            match self
                .lines
                .recv_timeout(until.saturating_duration_since(Instant::now()))
            {
                // Whatever a login shell printed first is skipped.
                Ok(line) => {
                    let Ok(h) = serde_json::from_str::<Hello>(&line) else {
                        continue;
                    };
                    let mine = env!("CARGO_PKG_VERSION");
                    if h.orange_serve != PROTOCOL {
                        return Err(StartError::NoServe(format!(
                            "its `serve` speaks protocol {} and this orange {PROTOCOL}",
                            h.orange_serve
                        )));
                    }
                    if !compatible(mine, &h.version) {
                        return Err(StartError::NoServe(format!(
                            "orange {} there and {mine} here",
                            h.version
                        )));
                    }
                    return Ok(self);
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(StartError::Unreachable(format!(
                        "no answer within {}s",
                        HELLO_WAIT.as_secs()
                    )))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let (status, words) = self.ended();
                    return Err(match status {
                        Some(255) | None => StartError::Unreachable(words),
                        Some(127) => StartError::NotFound(words),
                        Some(c) => {
                            StartError::NoServe(format!("`serve` failed there (exit {c}): {words}"))
                        }
                    });
                }
            }
        }
    }

    /// Is its ssh still running?
    pub(super) fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// ssh's exit status (waited for) and its last words.
    pub(super) fn ended(&mut self) -> (Option<i32>, String) {
        drop(self.stdin.take());
        let status = self.child.wait().ok().and_then(|s| s.code());
        // Its stderr ends with it (the connection's master, if it started one, keeps
        // nothing of ours open).
        if let Some(t) = self.stderr_thread.take() {
            let _ = t.join();
        }
        let words = self
            .stderr
            .lock()
            .map(|k| k.iter().cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default();
        (status, last_line(&words))
    }

    pub(super) fn request(&mut self, req: &Request) -> Result<Answer, Died> {
        let id = req.id.unwrap_or(0);
        let mut line = serde_json::to_vec(req).map_err(|_| Died::Before)?;
        line.push(b'\n');
        let sent = match self.stdin.as_mut() {
            Some(w) => w.write_all(&line).and_then(|_| w.flush()).is_ok(),
            None => false,
        };
        if !sent {
            return Err(Died::Before);
        }
        let mut accepted = false;
        loop {
            let Ok(line) = self.lines.recv() else {
                if !accepted {
                    return Err(Died::Before);
                }
                let (status, words) = self.ended();
                return Err(Died::After(status, words));
            };
            if !accepted {
                if serde_json::from_str::<Accepted>(&line).is_ok_and(|a| a.id == id && a.accepted) {
                    accepted = true;
                }
                continue;
            }
            if let Ok(a) = serde_json::from_str::<Answer>(&line) {
                if a.id == id {
                    return Ok(a);
                }
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdin_is_carried_as_text_or_hex() {
        let r = Request::new(&["a".into()], Some(b"it's $(x)\n"));
        assert_eq!(r.stdin.as_deref(), Some("it's $(x)\n"));
        assert_eq!(r.input(), b"it's $(x)\n");
        let bytes = [0xffu8, 0, b'a'];
        let r = Request::new(&[], Some(&bytes));
        assert!(r.stdin.is_none());
        assert_eq!(r.input(), bytes);
        assert!(Request::new(&[], None).input().is_empty());
    }

    #[test]
    fn versions_are_compatible_on_major_and_minor() {
        assert!(compatible("0.1.0", "0.1.7"));
        assert!(!compatible("0.1.0", "0.2.0"));
        assert!(!compatible("0.1.0", ""));
    }
}
