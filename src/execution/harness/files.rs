//! Reading the session files pi and codex write themselves (JSON lines, in directories
//! named by the time), shared by `pi.rs` and `codex.rs`.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::adapters::store;

/// The most of a session file read for its first prompt.
const SESSION_READ: u64 = 1 << 20;

/// The user's home (`$HOME`, absolute only).
pub fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
}

/// The same directory, however written (pi and codex record the path they were started in).
/// How a program keys a folder in its own config (claude's trust, codex's): its
/// canonical path (as given when it does not exist).
pub fn folder_key(path: &Path) -> String {
    path.canonicalize()
        .unwrap_or_else(|_| path.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

pub fn same_dir(recorded: &str, workspace: &Path) -> bool {
    let canonical = workspace.canonicalize().ok();
    Path::new(recorded) == workspace || canonical.as_deref() == Some(Path::new(recorded))
}

/// The `*.jsonl` files of `dir` written at or after `since`, oldest name first (pi and
/// codex put the time in the name).
pub fn written_since(dir: &Path, since: SystemTime) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.metadata()
                .is_ok_and(|m| m.is_file() && m.modified().is_ok_and(|t| t >= since))
        })
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files
}

/// The JSON lines of a session file (its first MiB), unparsable ones skipped.
pub fn json_lines(path: &Path) -> impl Iterator<Item = serde_json::Value> {
    store::open_regular(path)
        .ok()
        .into_iter()
        .flat_map(|f| std::io::BufReader::new(f.take(SESSION_READ)).lines())
        .map_while(|l| l.ok())
        .filter_map(|l| serde_json::from_str(&l).ok())
}

/// The text of a message's `content`: a string, or its text blocks (`kinds`) joined.
pub fn content_text(content: &serde_json::Value, kinds: &[&str]) -> String {
    match content {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(blocks) => blocks
            .iter()
            .filter(|b| {
                b.get("type")
                    .and_then(|t| t.as_str())
                    .is_some_and(|t| kinds.contains(&t))
            })
            .filter_map(|b| b.get("text").and_then(|t| t.as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
pub mod tests {
    use std::path::Path;

    pub fn write(path: &Path, lines: &[serde_json::Value]) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(path, text).unwrap();
    }
}
