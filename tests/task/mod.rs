//! Tasks end to end: real git, a real tmux server on a private socket with a hostile
//! config, and a fake agent (tests/fixtures/fake-agent.sh) as a user harness.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::path::PathBuf;

use common::TaskEnv;
use serde_json::Value;

mod branches;
mod lifecycle;
mod sessions;

fn ws_of(env: &TaskEnv, v: &Value) -> PathBuf {
    env.ws_path(v["workspace"].as_str().unwrap())
}
