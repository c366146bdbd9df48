//! Where Claude Code keeps what orange reads: its config directory (ONE rule,
//! [`config_dir_in`]), its user file `.claude.json`, a conversation's transcript under
//! `projects/`, and what a running claude says of itself under `sessions/`.

use std::path::{Path, PathBuf};

use crate::adapters::store;

/// The user's home for Claude Code: `$HOME` when it is an absolute path, else `/` (no
/// home: nothing of claude's is found there).
pub fn user_home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// THE rule for Claude Code's own directory, given the user's home: `$CLAUDE_CONFIG_DIR`
/// when it is an absolute path (a relative one would be read from wherever orange runs),
/// else `<home>/.claude`. Transcripts, session files, the sandbox's writable state and
/// `orange doctor` all go through it.
pub fn config_dir_in(home: &Path) -> PathBuf {
    config_rule(
        std::env::var_os("CLAUDE_CONFIG_DIR").map(PathBuf::from),
        home,
    )
}

/// [`config_dir_in`] the user's home ([`user_home`]).
pub fn config_dir() -> PathBuf {
    config_dir_in(&user_home())
}

/// Claude Code's user file (onboarding, API key approvals, folder trust): `.claude.json`
/// in `$CLAUDE_CONFIG_DIR` when that is taken (see [`config_dir_in`]), else beside
/// `~/.claude` in the home.
pub fn user_file_in(home: &Path) -> PathBuf {
    user_file_rule(
        std::env::var_os("CLAUDE_CONFIG_DIR").map(PathBuf::from),
        home,
    )
}

/// [`user_file_in`] the user's home.
pub fn user_file() -> PathBuf {
    user_file_in(&user_home())
}

fn config_rule(claude_config_dir: Option<PathBuf>, home: &Path) -> PathBuf {
    claude_config_dir
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| home.join(".claude"))
}

fn user_file_rule(claude_config_dir: Option<PathBuf>, home: &Path) -> PathBuf {
    match claude_config_dir.filter(|p| p.is_absolute()) {
        Some(dir) => dir.join(".claude.json"),
        None => home.join(".claude.json"),
    }
}

/// What a running claude says of itself in `<config>/sessions/<pid>.json`: `idle`,
/// `busy` or `waiting` (Claude Code 2.1). The one source that sees a turn cut short by
/// Esc while its request waited (no hook fires, the transcript ends on the prompt).
pub fn session_status(pid: u32) -> Option<String> {
    session_status_of(&config_dir().join("sessions").join(format!("{pid}.json")))
}

/// [`session_status`] of a claude in a sandbox: its pid there is not the one seen here,
/// and its `sessions/` is its task's own directory (`dir`): the newest file in it.
pub fn session_status_in(dir: &Path) -> Option<String> {
    let newest = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())?;
    session_status_of(&newest.path())
}

fn session_status_of(path: &Path) -> Option<String> {
    let bytes = store::read_regular(path, 1 << 20).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    v.get("status")?.as_str().map(str::to_string)
}

/// Where a sandboxed claude's `sessions/<pid>.json` go: in the agent's own part of its
/// task's directory (its pid inside is not the one outside, and every sandbox's would be
/// the same).
pub fn sandbox_sessions(agent_dir: &Path) -> PathBuf {
    agent_dir.join("claude-sessions")
}

/// Claude Code's log of a session: `<config>/projects/<cwd, every character but a-z A-Z
/// 0-9 as ->/<id>.jsonl` (a name longer than 200 characters is cut there and given a hash
/// of Claude Code's own: found by its first 200 characters).
pub fn log_path(cwd: &Path, session_id: &str) -> PathBuf {
    log_path_in(&config_dir(), cwd, session_id)
}

/// The directory name Claude Code 2.1 gives a working directory under `projects/`: each
/// UTF-16 unit that is not an ASCII letter or digit becomes `-` (as its JavaScript does).
pub fn project_dir_name(cwd: &Path) -> String {
    cwd.to_string_lossy()
        .chars()
        .flat_map(|c| {
            let n = if c.is_ascii_alphanumeric() {
                0
            } else {
                c.len_utf16()
            };
            std::iter::repeat_n('-', n).chain((n == 0).then_some(c))
        })
        .collect()
}

/// Longest project directory name Claude Code keeps whole.
const NAME_MAX: usize = 200;

/// [`log_path`] under the Claude config directory `config`.
pub fn log_path_in(config: &Path, cwd: &Path, session_id: &str) -> PathBuf {
    let canonical = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let name = project_dir_name(&canonical);
    let projects = config.join("projects");
    let file = format!("{session_id}.jsonl");
    if name.len() > NAME_MAX {
        // The name is ASCII: cutting at a byte is cutting at a character.
        let prefix = format!("{}-", &name[..NAME_MAX]);
        let found = std::fs::read_dir(&projects)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
            })
            .map(|p| p.join(&file))
            .find(|p| p.exists());
        if let Some(p) = found {
            return p;
        }
    }
    projects.join(name).join(file)
}

/// Claude Code's transcripts of a conversation run in `workspace`: the conversation's own,
/// then its sub-agents' (`<conv>/subagents/*.jsonl`), each with its name relative to the
/// transcripts' directory.
pub fn transcripts(workspace: &Path, conv: &str) -> Vec<(String, PathBuf)> {
    let main = log_path(workspace, conv);
    let mut out = vec![(format!("{conv}.jsonl"), main.clone())];
    let sub = main.with_extension("").join("subagents");
    if let Ok(dir) = std::fs::read_dir(&sub) {
        let mut subs: Vec<(String, PathBuf)> = dir
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .filter_map(|p| {
                let name = p.file_name()?.to_string_lossy().into_owned();
                Some((format!("{conv}/subagents/{name}"), p))
            })
            .collect();
        subs.sort();
        out.extend(subs);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_path_replaces_slashes_and_dots() {
        let p = log_path_in(
            Path::new("/cfg"),
            Path::new("/nonexistent/my.app/ws--1"),
            "abc",
        );
        assert_eq!(
            p,
            PathBuf::from("/cfg/projects/-nonexistent-my-app-ws--1/abc.jsonl")
        );
    }

    #[test]
    fn claude_project_names_are_what_claude_2_1_makes() {
        // Seen with the real CLI: `/tmp/nm/a_b c.d+e` → `-tmp-nm-a-b-c-d-e`.
        assert_eq!(
            project_dir_name(Path::new("/tmp/nm/a_b c.d+e")),
            "-tmp-nm-a-b-c-d-e"
        );
        assert_eq!(project_dir_name(Path::new("/h/é😀")), "-h----");
        // Longer than 200: cut, with a hash of Claude Code's; found by the prefix.
        let d = tempfile::tempdir().unwrap();
        let long = d.path().join("x".repeat(230));
        std::fs::create_dir_all(&long).unwrap();
        let name = project_dir_name(&long.canonicalize().unwrap());
        let dir = d
            .path()
            .join("projects")
            .join(format!("{}-4gjse8", &name[..200]));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("c.jsonl"), "").unwrap();
        assert_eq!(log_path_in(d.path(), &long, "c"), dir.join("c.jsonl"));
    }

    #[test]
    fn one_rule_for_the_config_directory_and_the_user_file() {
        let home = Path::new("/h");
        assert_eq!(config_rule(None, home), home.join(".claude"));
        assert_eq!(user_file_rule(None, home), home.join(".claude.json"));
        let set = Some(PathBuf::from("/cfg"));
        assert_eq!(config_rule(set.clone(), home), PathBuf::from("/cfg"));
        assert_eq!(
            user_file_rule(set, home),
            PathBuf::from("/cfg/.claude.json")
        );
        // A relative one is not taken: it would name a different place in every directory.
        let relative = Some(PathBuf::from("cfg"));
        assert_eq!(config_rule(relative.clone(), home), home.join(".claude"));
        assert_eq!(user_file_rule(relative, home), home.join(".claude.json"));
    }
}
