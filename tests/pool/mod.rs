//! The workspace pool against real git: init, acquire, release, gc, shutdown, healing.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::path::Path;

use common::{git, Env};
use serde_json::Value;

mod init;
mod slots;
mod upkeep;

fn acquire(env: &Env, label: &str) -> Value {
    env.ok(&["workspace", "acquire", "--task", label])
}

fn head(dir: &Path) -> String {
    git(dir, &["rev-parse", "HEAD"])
}
