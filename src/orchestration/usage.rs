//! Token use per task, read from Claude Code's transcripts: the `usage` of its
//! assistant lines (input, output, cache creation, cache read).
//!
//! # How it is counted
//! Claude Code writes one JSONL line per content block of one API response, each line
//! repeating the response's `message.id` and its `usage` (`output_tokens` may grow from one
//! line to the next): each `message.id` counts once, with the usage of its LAST line. Lines
//! that do not parse are skipped; a line without a `message.id` counts by itself.
//!
//! # Incremental
//! `tasks/<project>/<id>/usage.json` keeps, per conversation (Claude's conversation id, the
//! task's `agent_session_id`: a respawn may start a new one, the task keeps them all) and per
//! transcript file (the conversation's `<conv>.jsonl`, and its sub-agents' transcripts under
//! `<conv>/subagents/`), the byte offset read so far, the file's identity (inode, length) and
//! the totals. An update reads only the bytes after the offset, and only whole lines (a line
//! still being written is read again, whole, later). A file that is shorter than its offset
//! or another file (its inode changed) is read again from the start.
//!
//! The monitor updates it for every active task it observes; `task show` updates it on
//! demand; `task list`, the sidebar and `orange status` read the file only.

use std::collections::BTreeMap;
use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::adapters::store;
use crate::error::Result;

/// Tokens of one task (or of many, summed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    /// Input tokens not read from or written to the prompt cache.
    pub input: u64,
    pub output: u64,
    /// Input tokens written to the prompt cache.
    pub cache_creation: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read: u64,
}

impl Tokens {
    /// Everything that went in: fresh input, cache writes and cache reads.
    pub fn all_input(&self) -> u64 {
        self.input + self.cache_creation + self.cache_read
    }

    pub fn is_zero(&self) -> bool {
        *self == Tokens::default()
    }
}

impl std::ops::AddAssign for Tokens {
    fn add_assign(&mut self, o: Tokens) {
        self.input += o.input;
        self.output += o.output;
        self.cache_creation += o.cache_creation;
        self.cache_read += o.cache_read;
    }
}

impl std::iter::Sum for Tokens {
    fn sum<I: Iterator<Item = Tokens>>(iter: I) -> Tokens {
        let mut t = Tokens::default();
        for x in iter {
            t += x;
        }
        t
    }
}

/// A count in a few characters: `999`, `1.2k`, `35k`, `1.2M`, `12M`, `3.4G`.
pub fn short_count(n: u64) -> String {
    if n < 1000 {
        return n.to_string();
    }
    let mut x = n as f64;
    for unit in ["k", "M", "G", "T"] {
        x /= 1000.0;
        if x < 9.95 {
            let s = format!("{x:.1}");
            return format!("{}{unit}", s.strip_suffix(".0").unwrap_or(&s));
        }
        if x < 999.5 {
            return format!("{x:.0}{unit}");
        }
    }
    format!("{:.0}P", x / 1000.0)
}

/// `1.2M in · 35k out` ("in": fresh input, cache writes and cache reads).
pub fn short_text(t: &Tokens) -> String {
    format!(
        "{} in · {} out",
        short_count(t.all_input()),
        short_count(t.output)
    )
}

/// Messages whose lines may still come (the last ones seen), kept apart from the totals:
/// a message's usage is replaced by its next line's.
const OPEN_MESSAGES: usize = 8;

/// One message whose usage may still change.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OpenMessage {
    pub id: String,
    pub tokens: Tokens,
}

/// What has been read of one transcript file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileState {
    /// Bytes consumed: every whole line before this offset is counted.
    pub offset: u64,
    /// The file's inode and length when it was last read.
    #[serde(default)]
    pub inode: u64,
    #[serde(default)]
    pub len: u64,
    /// Messages that are over (a later message came after them).
    #[serde(default)]
    pub committed: Tokens,
    /// The last messages seen, with the usage of their last line so far.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open: Vec<OpenMessage>,
    /// Lines skipped because they did not parse.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skipped: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The part of a transcript line that matters here.
#[derive(Deserialize)]
struct Line {
    #[serde(rename = "type")]
    kind: Option<String>,
    message: Option<Message>,
}

#[derive(Deserialize)]
struct Message {
    id: Option<String>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Usage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

impl FileState {
    /// Everything counted in this file, the open messages included.
    pub fn tokens(&self) -> Tokens {
        let mut t = self.committed;
        for m in &self.open {
            t += m.tokens;
        }
        t
    }

    /// Count one whole line (without its newline).
    pub fn line(&mut self, line: &[u8]) {
        // Most lines (user turns, tool results, bookkeeping) carry no usage: not parsed.
        let Ok(text) = std::str::from_utf8(line) else {
            self.skipped += 1;
            return;
        };
        if !text.contains("\"usage\"") {
            return;
        }
        let Ok(l) = serde_json::from_str::<Line>(text) else {
            self.skipped += 1;
            return;
        };
        if l.kind.as_deref() != Some("assistant") {
            return;
        }
        let Some(m) = l.message else { return };
        let Some(u) = m.usage else { return };
        let tokens = Tokens {
            input: u.input_tokens.unwrap_or(0),
            output: u.output_tokens.unwrap_or(0),
            cache_creation: u.cache_creation_input_tokens.unwrap_or(0),
            cache_read: u.cache_read_input_tokens.unwrap_or(0),
        };
        let Some(id) = m.id.filter(|i| !i.is_empty()) else {
            self.committed += tokens;
            return;
        };
        if let Some(open) = self.open.iter_mut().find(|o| o.id == id) {
            open.tokens = tokens;
            return;
        }
        self.open.push(OpenMessage { id, tokens });
        if self.open.len() > OPEN_MESSAGES {
            let done = self.open.remove(0);
            self.committed += done.tokens;
        }
    }

    /// Read what was appended to the file since the last read. A file that shrank below
    /// the offset, or another file at the same path, is read again from the start. Returns
    /// whether anything changed; a missing file changes nothing.
    pub fn read(&mut self, path: &Path) -> std::io::Result<bool> {
        use std::os::unix::fs::MetadataExt;
        let mut f = match crate::adapters::store::open_regular(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        let meta = f.metadata()?;
        let (inode, len) = (meta.ino(), meta.len());
        let before = self.clone();
        if (self.inode != 0 && inode != self.inode) || len < self.offset {
            *self = FileState::default();
        }
        self.inode = inode;
        self.len = len;
        if len > self.offset {
            f.seek(SeekFrom::Start(self.offset))?;
            // Whole lines only, a buffer at a time: a large first read needs no large memory.
            let mut r = std::io::BufReader::with_capacity(256 * 1024, f.take(len - self.offset));
            let mut line = Vec::new();
            loop {
                line.clear();
                let n = r.read_until(b'\n', &mut line)?;
                if n == 0 || line.last() != Some(&b'\n') {
                    break;
                }
                self.line(&line[..n - 1]);
                self.offset += n as u64;
            }
        }
        Ok(*self != before)
    }
}

/// `usage.json`: per conversation, per transcript file (named relative to the transcripts'
/// directory: `<conv>.jsonl`, `<conv>/subagents/agent-….jsonl`), what was read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskUsage {
    pub conversations: BTreeMap<String, BTreeMap<String, FileState>>,
}

impl TaskUsage {
    pub fn tokens(&self) -> Tokens {
        self.conversations
            .values()
            .flat_map(|files| files.values())
            .map(FileState::tokens)
            .sum()
    }
}

pub fn path(task_dir: &Path) -> PathBuf {
    task_dir.join("usage.json")
}

/// `usage.json` as it is; `None` when missing or unreadable (it is derived data: an update
/// reads the transcripts again).
pub fn load(task_dir: &Path) -> Option<TaskUsage> {
    let bytes = std::fs::read(path(task_dir)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Does this harness leave a log orange reads tokens from? (Claude Code's transcript.)
pub fn harness_reports(harness: &str) -> bool {
    crate::execution::harness::kind_of(harness).reports_tokens()
}

/// A task's tokens as the readers show them (usage.json only, no transcript is read):
/// what was counted, zero for a claude task not read yet, `None` (unknown) for a harness
/// whose log says nothing.
pub fn tokens(task_dir: &Path, harness: &str) -> Option<Tokens> {
    match load(task_dir) {
        Some(u) => Some(u.tokens()),
        None => harness_reports(harness).then(Tokens::default),
    }
}

/// Read what the conversation `conv` (run in `workspace`) appended to its transcripts since
/// the last update and save `usage.json` when anything changed. Returns the task's usage.
pub fn update(task_dir: &Path, workspace: &Path, conv: &str) -> Result<TaskUsage> {
    let loaded = load(task_dir);
    let existed = loaded.is_some();
    let mut usage = loaded.unwrap_or_default();
    let files = usage.conversations.entry(conv.to_string()).or_default();
    let mut changed = false;
    for (name, p) in crate::execution::harness::claude::paths::transcripts(workspace, conv) {
        let state = files.entry(name).or_default();
        match state.read(&p) {
            Ok(c) => changed |= c,
            // An unreadable transcript is skipped this time (kept as read so far).
            Err(_) => continue,
        }
    }
    if changed || !existed {
        store::write_json_atomic(&path(task_dir), &usage)?;
    }
    Ok(usage)
}
