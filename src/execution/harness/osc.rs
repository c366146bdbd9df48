//! The status an agent reports of itself as OSC 7501 (Claude Code 2.1.330 does, once its
//! terminal answered its probe: the pty layer, `adapters::pty`, answers it and keeps the
//! newest report in the agent's directory). The grammar, as the pinned claude writes it:
//!
//! ```text
//! ESC ] 7501 ; state=<idle|working|blocked|done|error|clear>:app=<name>
//!              [:id=<child>][:kind=<permission|question|auth>][:progress=<0-100>]
//!              [:title=<base64>][:msg=<base64>]  BEL (or ST, ESC \)
//! ```
//!
//! `id` marks a child's report (a sub-agent; the layer keeps only the program's own);
//! `kind` comes with `blocked` only (none: a dialog of its own); `progress` with `working`
//! and `blocked`; `title` (≤ 192 characters) and `msg` (≤ 2048) are base64 of UTF-8 text.
//! `clear` says it stopped reporting (it exits). What a report says is the agent's data:
//! its words are made safe here ([`crate::text::safe_line`]) before orange keeps them.

use std::path::{Path, PathBuf};

use crate::adapters::pty::status;
use crate::execution::harness::state::{classify_error, Blocker, ErrorKind, HookSays, State};

/// The longest message kept from a report (characters).
const MAX_TEXT: usize = 2048;

/// One report, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// `idle`, `working`, `blocked`, `done`, `error`, `clear` (or another word a later
    /// program may send: then it says nothing).
    pub state: String,
    pub kind: Option<String>,
    pub progress: Option<u8>,
    pub title: Option<String>,
    pub msg: Option<String>,
}

/// A report's payload (`state=…:app=……`, its terminator gone); `None` when it has no
/// `state`.
pub fn parse(payload: &[u8]) -> Option<Report> {
    let text = String::from_utf8_lossy(payload);
    let mut r = Report {
        state: String::new(),
        kind: None,
        progress: None,
        title: None,
        msg: None,
    };
    for field in text.split(':') {
        let Some((k, v)) = field.split_once('=') else {
            continue;
        };
        match k {
            "state" => r.state = word(v),
            "kind" => r.kind = Some(word(v)).filter(|w| !w.is_empty()),
            "progress" => r.progress = v.parse::<u8>().ok().map(|p| p.min(100)),
            "title" => r.title = Some(text_of(v)),
            "msg" => r.msg = Some(text_of(v)),
            _ => {}
        }
    }
    (!r.state.is_empty()).then_some(r)
}

/// A word of the grammar: letters, digits, `_` and `-`, at most 32 (anything else in it
/// is dropped).
fn word(v: &str) -> String {
    v.chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        .take(32)
        .collect()
}

/// A text field: base64 of UTF-8 (as claude sends it; a value that is not base64 is taken
/// as it is), made safe for one line, cut at [`MAX_TEXT`] characters.
fn text_of(v: &str) -> String {
    let raw = base64(v).map_or_else(|| v.to_string(), crate::text::lossy);
    crate::text::safe_line(raw.trim())
        .chars()
        .take(MAX_TEXT)
        .collect()
}

/// Standard base64 (padding optional); `None` for anything else.
fn base64(v: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(v.trim_end_matches('='))
        .ok()
}

impl Report {
    /// What the report says in orange's words: its state (done is waiting: the turn
    /// ended), what blocks it, its error; `None` for `clear` and words orange does not
    /// know. A question it asks (`blocked`, kind `question`) is waiting on the person
    /// (never nudged), its words the question.
    pub fn says(&self) -> Option<HookSays> {
        let msg = self.msg.clone().filter(|m| !m.is_empty());
        let mut says = match self.state.as_str() {
            "working" => HookSays::state(State::Working),
            "idle" | "done" => HookSays::state(State::Waiting),
            "blocked" if self.kind.as_deref() == Some("question") => HookSays {
                detail: msg.or_else(|| self.title.clone()),
                ..HookSays::state(State::Waiting)
            },
            "blocked" => HookSays {
                blocker: Some(match self.kind.as_deref() {
                    Some("permission") => Blocker::Approval,
                    Some("auth") => Blocker::Login,
                    _ => Blocker::Prompt,
                }),
                detail: msg,
                ..HookSays::state(State::Blocked)
            },
            "error" => HookSays {
                error: Some(msg.as_deref().map_or(ErrorKind::Other, classify_error)),
                detail: msg,
                ..HookSays::state(State::Error)
            },
            _ => return None,
        };
        says.progress = false;
        Some(says)
    }

    /// `blocked (permission)`, `working`: the report in short, for `task explain`.
    pub fn summary(&self) -> String {
        match &self.kind {
            Some(k) => format!("{} ({k})", self.state),
            None => self.state.clone(),
        }
    }
}

/// What the pty layer of a pane left in the agent's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// The agent's own pid (the pane's process is the layer).
    pub agent_pid: u32,
    /// The newest report and when it came (Unix ms); `None` before the first.
    pub report: Option<(Report, u64)>,
}

/// The layer's status file in an agent's directory.
pub fn status_file(agent_dir: &Path) -> PathBuf {
    agent_dir.join(status::FILE)
}

/// What the layer running as `pane_pid` left in `agent_dir`; `None` without a layer (or
/// a file left by an earlier one, whose pid is not the pane's).
pub fn read(agent_dir: &Path, pane_pid: u32) -> Option<Reading> {
    let s = status::read(&status_file(agent_dir)).filter(|s| s.layer_pid == pane_pid)?;
    Some(Reading {
        agent_pid: s.agent_pid,
        report: parse(&s.payload).map(|r| (r, s.at_ms)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn claude_s_reports_read_as_orange_states() {
        let r = |p: &str| parse(p.as_bytes()).unwrap();
        let says = |p: &str| r(p).says();
        assert_eq!(
            says("state=working:app=claude-code:progress=40").unwrap(),
            HookSays::state(State::Working)
        );
        assert_eq!(r("state=working:progress=240").progress, Some(100));
        for idle in ["state=idle:app=claude-code", "state=done:app=claude-code"] {
            assert_eq!(says(idle).unwrap().state, State::Waiting);
        }
        let blocked = format!(
            "state=blocked:app=claude-code:kind=permission:msg={}",
            b64("Claude needs your permission to use Bash")
        );
        let s = says(&blocked).unwrap();
        assert_eq!(
            (s.state, s.blocker),
            (State::Blocked, Some(Blocker::Approval))
        );
        assert_eq!(
            s.detail.as_deref(),
            Some("Claude needs your permission to use Bash")
        );
        assert_eq!(
            says("state=blocked:kind=auth").unwrap().blocker,
            Some(Blocker::Login)
        );
        assert_eq!(
            says("state=blocked:app=x").unwrap().blocker,
            Some(Blocker::Prompt)
        );
        let q = format!("state=blocked:kind=question:msg={}", b64("Which file?"));
        let s = says(&q).unwrap();
        assert_eq!(
            (s.state, s.detail.as_deref()),
            (State::Waiting, Some("Which file?"))
        );
        let e = format!("state=error:msg={}", b64("API Error: 529 Overloaded"));
        let s = says(&e).unwrap();
        assert_eq!(
            (s.state, s.error),
            (State::Error, Some(ErrorKind::Overloaded))
        );
        assert_eq!(says("state=clear"), None);
        assert_eq!(says("state=dancing:app=x"), None);
        assert_eq!(parse(b"app=claude-code"), None);
        assert_eq!(
            r("state=blocked:kind=permission").summary(),
            "blocked (permission)"
        );
    }

    /// A report's words are the agent's: control characters and escapes in them (raw or
    /// inside the base64) reach orange's records only made visible, never raw.
    #[test]
    fn hostile_words_in_a_report_are_made_safe() {
        let evil = "\x1b]0;PWNED\x07\x1b[2J\r\nrm -rf ~\u{202e}";
        let p = format!(
            "state=blocked:kind=permission:title={}:msg={}",
            b64(evil),
            b64(evil)
        );
        let r = parse(p.as_bytes()).unwrap();
        for text in [r.title.as_deref().unwrap(), r.msg.as_deref().unwrap()] {
            assert!(!text.chars().any(|c| c.is_control()), "{text:?}");
            assert!(text.contains("␛]0;PWNED␇"), "{text:?}");
            assert!(!text.contains('\u{202e}'), "{text:?}");
        }
        // Not base64: taken as it is, made safe the same way.
        let raw = parse(b"state=error:msg=\x1b[31mboom\x07").unwrap();
        assert_eq!(raw.msg.as_deref(), Some("␛[31mboom␇"));
        // A state or kind word with junk in it keeps only its letters.
        let r = parse(b"state=idle\x1b[0m:kind=per\x07mission").unwrap();
        assert_eq!(
            (r.state.as_str(), r.kind.as_deref()),
            ("idle0m", Some("permission"))
        );
        // Long words are cut.
        let long = format!("state=error:msg={}", b64(&"x".repeat(5000)));
        assert_eq!(parse(long.as_bytes()).unwrap().msg.unwrap().len(), MAX_TEXT);
        // Invalid UTF-8 is shown as such.
        let bad = parse(b"state=error:msg=\xff\xfe").unwrap();
        assert_eq!(bad.msg.as_deref(), Some("\u{fffd}\u{fffd}"));
    }

    #[test]
    fn a_status_file_counts_only_for_the_pane_whose_layer_wrote_it() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path(), 10), None);
        let s = status::Status {
            layer_pid: 10,
            agent_pid: 11,
            at_ms: 5,
            payload: b"state=working:app=claude-code".to_vec(),
        };
        let mut w = status::Writer::create(&status_file(dir.path())).unwrap();
        w.write(&s).unwrap();
        let got = read(dir.path(), 10).unwrap();
        assert_eq!(got.agent_pid, 11);
        assert_eq!(got.report.unwrap().0.state, "working");
        // Another pane (a respawn without the layer, a file left from before): none.
        assert_eq!(read(dir.path(), 12), None);
        // Started, nothing reported yet.
        w.write(&status::Status {
            payload: vec![],
            ..s
        })
        .unwrap();
        assert_eq!(read(dir.path(), 10).unwrap().report, None);
    }
}
