//! The agent monitor: real tmux, fake agents, Claude log fixtures, policies.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use common::TaskEnv;
use serde_json::Value;

mod exits;
mod hooks;
mod nudges;

fn pass(env: &TaskEnv) -> Value {
    env.ok(&["monitor", "--once"])
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
