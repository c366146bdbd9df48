//! The sidebar: snapshot tests of the pure render (several widths, empty and full sections,
//! CJK and emoji, tiny heights, a remote task), then `orange sidebar` end to end with real git and a real
//! tmux server: `--once` frames of a task whose fake agent changed files, and the loop
//! running in a tmux pane, read back with `capture-pane` as a user would see it.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::path::PathBuf;

use common::TaskEnv;
use unicode_width::UnicodeWidthStr;

mod once;
mod pane;
mod render;

/// Every line within `width` columns (by unicode-width), no trailing spaces, no control
/// characters; with a height, exactly that many lines.
fn check_frame(frame: &str, width: usize, height: Option<usize>) {
    for l in frame.lines() {
        assert!(
            l.width() <= width,
            "line {l:?} is {} columns, more than {width}:\n{frame}",
            l.width()
        );
        assert_eq!(l, l.trim_end(), "trailing spaces in {l:?}");
        assert!(!l.chars().any(char::is_control), "control char in {l:?}");
    }
    assert!(frame.ends_with('\n'));
    if let Some(h) = height {
        assert_eq!(
            frame.lines().count(),
            h,
            "frame of {h} lines expected:\n{frame}"
        );
    }
}

/// A task on `branch` whose fake-wait agent has started: its id and its workspace (for
/// the end-to-end tests of `once` and `pane`).
fn create_waiting_task(env: &TaskEnv, branch: &str, summary: &str) -> (String, PathBuf) {
    env.add_project(&["--pool-size", "2"]);
    let t = env.ok(&["task", "create", branch, summary, "--harness", "fake-wait"]);
    assert_eq!(t["outcome"], "spawned", "{t}");
    let id = t["id"].as_str().unwrap().to_string();
    let ws = env.ws_path(t["workspace"].as_str().unwrap());
    // The fake agent has started (it logs its environment first).
    env.agent_log(&id, "env");
    (id, ws)
}
