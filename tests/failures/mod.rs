//! Tasks and lanes that stay true through failures: a task that cannot start is
//! visible as `failed`, the queue never jams, crashes leave state the next command repairs.
//! Real git, a real tmux server with the hostile config, the fake agent.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use common::TaskEnv;

mod failed;
mod killed;
mod races;

fn bound(env: &TaskEnv) -> Vec<(String, String)> {
    let pool = env.pool_json();
    pool["workspaces"]
        .as_object()
        .unwrap()
        .iter()
        .filter_map(|(name, w)| Some((name.clone(), w["task"].as_str()?.to_string())))
        .collect()
}
