//! The agent monitor: real tmux, fake agents, Claude log fixtures, policies.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::io::Write;

use common::TaskEnv;
use serde_json::Value;

mod exits;
mod hooks;
mod nudges;

fn pass(env: &TaskEnv) -> Value {
    env.ok(&["monitor", "--once"])
}

/// Run `orange hook agent EVENT` as Claude Code does: in the workspace, the payload on stdin.
fn hook(env: &TaskEnv, id: &str, event: &str, payload: Value) -> Value {
    let t = env.task(id);
    let ws = env.ws_path(t["workspace"].as_str().unwrap());
    let mut c = env.cmd_in(&ws, &["hook", "agent", event, "--json"]);
    c.env("ORANGE_TASK_ID", id)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `$CLAUDE_CONFIG_DIR/projects/<the workspace's path with / and . as ->`, created.
fn claude_log_dir(cfg: &std::path::Path, ws: &std::path::Path) -> std::path::PathBuf {
    let dir_name: String = ws
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .chars()
        .map(|c| if c == '/' || c == '.' { '-' } else { c })
        .collect();
    let log_dir = cfg.join("projects").join(dir_name);
    std::fs::create_dir_all(&log_dir).unwrap();
    log_dir
}
