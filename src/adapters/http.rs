//! HTTP requests to the notification channels (ntfy, a webhook, Slack), through `curl`
//! (TLS, proxies and timeouts as the system has them, no HTTP stack in orange), and the
//! detached `orange hook deliver FILE` that sends a notification in the background so a
//! monitor pass never waits for a channel.
//!
//! A token never appears on a command line: the request's URL, method and headers go to
//! curl in a config file only this user can read (`--config`), the body on its standard
//! input. Every request has a deadline ([`TIMEOUT`], curl's `--max-time`, and orange kills
//! a curl that outlives it by a second).

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{OrangeError, Result};

/// The longest a request to a channel may take.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// One request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub method: String,
    pub url: String,
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    #[serde(default)]
    pub body: String,
}

/// What came back.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub status: u16,
    pub body: String,
}

/// A value in curl's config syntax: double-quoted, `\` and `"` escaped (control
/// characters are refused before: they would end the line).
fn quoted(v: &str) -> Result<String> {
    if v.chars().any(char::is_control) {
        return Err(OrangeError::invalid(format!(
            "an HTTP header or URL holds a control character: {:?}",
            crate::text::safe_line(v)
        )));
    }
    Ok(format!(
        "\"{}\"",
        v.replace('\\', "\\\\").replace('"', "\\\"")
    ))
}

/// Send `req` and wait at most `timeout` for its answer. A connection that fails, a
/// timeout and curl's absence are errors; any HTTP status is an answer.
pub fn send(req: &Request, timeout: Duration) -> Result<Response> {
    let mut config = tempfile::NamedTempFile::new()
        .map_err(|e| OrangeError::io("creating curl's config file", e))?;
    let mut text = format!(
        "url = {}\nrequest = {}\nsilent\nshow-error\nmax-time = {}\nwrite-out = \"\\n%{{http_code}}\"\n",
        quoted(&req.url)?,
        quoted(&req.method)?,
        timeout.as_secs_f64()
    );
    for (k, v) in &req.headers {
        text.push_str(&format!("header = {}\n", quoted(&format!("{k}: {v}"))?));
    }
    if !req.body.is_empty() {
        text.push_str("data-binary = \"@-\"\n");
    }
    config
        .write_all(text.as_bytes())
        .map_err(|e| OrangeError::io("writing curl's config file", e))?;
    let mut child = Command::new("curl")
        .arg("--config")
        .arg(config.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| OrangeError::io("starting curl", e))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(req.body.as_bytes());
    }
    // Read its output on threads: a full pipe must not stall the deadline below.
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut out, &mut b);
        b
    });
    let err_reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut err, &mut b);
        b
    });
    let deadline = Instant::now() + timeout + Duration::from_secs(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(OrangeError::BackendCommandFailed(format!(
                    "{} {}: no answer within {}s",
                    req.method,
                    req.url,
                    timeout.as_secs()
                )));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(OrangeError::io("waiting for curl", e)),
        }
    };
    let out = String::from_utf8_lossy(&reader.join().unwrap_or_default()).into_owned();
    let err = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
    if !status.success() {
        return Err(OrangeError::BackendCommandFailed(format!(
            "{} {}: {}",
            req.method,
            req.url,
            crate::text::safe_line(err.trim())
        )));
    }
    let (body, code) = out.rsplit_once('\n').unwrap_or(("", out.as_str()));
    let status = code.trim().parse().unwrap_or(0);
    Ok(Response {
        status,
        body: body.to_string(),
    })
}

/// Start `orange hook deliver FILE` (this very binary), detached: it sends what FILE
/// holds and logs what failed. Not waited for (reaped by a watcher thread, killed if it
/// outlives `limit`).
pub fn deliver_detached(file: &std::path::Path, limit: Duration) -> Result<()> {
    let exe =
        std::env::current_exe().map_err(|e| OrangeError::io("finding this orange binary", e))?;
    crate::adapters::shell::spawn_limited(
        &exe.display().to_string(),
        &["hook".into(), "deliver".into(), file.display().to_string()],
        limit,
    )
}
