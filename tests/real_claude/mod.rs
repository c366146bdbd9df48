//! The real Claude Code CLI (npm `@anthropic-ai/claude-code`, pinned in
//! scripts/test-deps.versions) inside orange tasks, offline, against the stand-in Messages
//! API on 127.0.0.1 (tests/common/standin.rs), on a private tmux server with the hostile
//! config and with the background monitor running as `orange.tmux` starts it.
//!
//! Each test checks what orange reports (`task show`, the status line's `@orange_status`,
//! `task explain`) against what is true at that moment (the stand-in knows what it sent,
//! the test knows what it killed) and what the agent really did (files in its worktree).
//! No timing is asserted: latencies are written to `$ORANGE_LATENCY_LOG` (one JSON line per
//! moment) for `scripts/bench-latency.sh`.
//!
//! A missing `claude` fails these tests in CI and skips them elsewhere, saying SKIP
//! (`common::require`): `scripts/install-test-deps.sh` installs it.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::rig::{self, AgentRig, Spec};
use common::standin::{Reply, StandIn};
use common::{Env, TaskEnv};
use serde_json::{json, Value};

mod errors;
mod respawn;
mod setups;
mod turns;

pub(crate) const KEY: &str = "sk-ant-test-0123456789abcdefghij";

/// How long a moment may take to show before the test gives up (not a timing assertion:
/// a bound on waiting, far above what is expected on a loaded machine).
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

/// How long a test watches for something that must NOT happen (a nudge, a keystroke):
/// longer than the idle graces the tests configure (1-2 s) and several monitor passes
/// (every 500 ms).
const GRACES: Duration = Duration::from_secs(3);

pub(crate) fn is_root() -> bool {
    orange::adapters::shell::is_root()
}

/// What the HOME of the claude under test holds (`~/.claude.json`): each missing piece
/// brings back one of Claude Code's first-run screens.
#[derive(Clone, Copy, PartialEq)]
pub(crate) struct Home {
    /// `hasCompletedOnboarding` (else: theme, security notes).
    onboarded: bool,
    /// The API key approved (else: "Use this API key?"; offline, before onboarding, a
    /// connectivity check that fails and exits).
    key_approved: bool,
    /// The repository trusted with `orange doctor --trust` (else: the folder-trust dialog).
    trusted: bool,
}

impl Home {
    pub(crate) const SET_UP: Home = Home {
        onboarded: true,
        key_approved: true,
        trusted: true,
    };
    const FRESH: Home = Home {
        onboarded: false,
        key_approved: false,
        trusted: false,
    };
}

/// The rig of these tests (tests/common/rig.rs) with claude's stand-in Messages API.
pub(crate) type Rig = AgentRig<StandIn>;

/// Every test here starts with this: false (the test returns) when the real Claude Code
/// CLI is missing outside CI; missing in CI, the test fails (`common::require`).
pub(crate) fn claude_installed() -> bool {
    rig::installed("claude")
}

/// What claude needs in `dir` (its HOME) to run against the stand-in at `url`: the
/// environment (the stand-in, the key, no traffic of its own; with `sandbox`, told it runs
/// in a sandbox (`IS_SANDBOX=1`), which it needs to accept
/// `--dangerously-skip-permissions` as root) and `~/.claude.json` as `home` says. The
/// trust is not in it: see [`trust`].
pub(crate) fn claude_home(
    dir: &Path,
    url: &str,
    home: Home,
    sandbox: bool,
) -> Vec<(&'static str, String)> {
    std::fs::create_dir_all(dir).unwrap();
    let mut cfg = json!({});
    if home.onboarded {
        cfg["hasCompletedOnboarding"] = json!(true);
    }
    if home.key_approved {
        let tail = &KEY[KEY.len() - 20..];
        cfg["customApiKeyResponses"] = json!({"approved": [tail], "rejected": []});
    }
    if home != Home::FRESH {
        std::fs::write(
            dir.join(".claude.json"),
            serde_json::to_vec_pretty(&cfg).unwrap(),
        )
        .unwrap();
    }
    let mut env = vec![
        ("HOME", dir.display().to_string()),
        ("ANTHROPIC_BASE_URL", url.to_string()),
        ("ANTHROPIC_API_KEY", KEY.to_string()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
        ("DISABLE_AUTOUPDATER", "1".into()),
    ];
    if sandbox {
        env.push(("IS_SANDBOX", "1".into()));
    }
    env
}

/// What a person does once per repository: `orange doctor --harness claude --trust`
/// records the trust.
pub(crate) fn trust(env: &TaskEnv) {
    let r = env.ok(&["doctor", "--harness", "claude", "--trust"]);
    assert!(r["trust_recorded"].is_string(), "{r}");
}

/// A rig with the real claude, its HOME as `home` says.
pub(crate) fn claude(test: &'static str, home: Home, script: Vec<Reply>) -> Rig {
    claude_with(test, home, script, &[], is_root())
}

/// [`claude`] with more environment; `sandbox`: see [`claude_home`].
pub(crate) fn claude_with(
    test: &'static str,
    home: Home,
    script: Vec<Reply>,
    more_env: &[(&str, &str)],
    sandbox: bool,
) -> Rig {
    claude_in_repo(test, "app", home, script, more_env, sandbox)
}

/// [`claude_with`], the repository (and so the project and its workspaces) named `repo`.
fn claude_in_repo(
    test: &'static str,
    repo: &str,
    home: Home,
    script: Vec<Reply>,
    more_env: &[(&str, &str)],
    sandbox: bool,
) -> Rig {
    assert!(
        claude_on_path(),
        "[{test}] the real Claude Code CLI is not on PATH (the test must start with `if !claude_installed() {{ return; }}`)"
    );
    let base = Env::with_repo(repo);
    let dir = base.root().join("claude-home");
    let api = StandIn::start(script);
    let mut extra = claude_home(&dir, &api.base_url(), home, sandbox);
    extra.extend(more_env.iter().map(|(k, v)| (*k, v.to_string())));
    let env = rig::agent_env(base, &extra, &[]);
    if home.trusted {
        trust(&env);
    }
    AgentRig::start(Spec {
        test,
        agent: "claude",
        patience: PATIENCE,
        slot: None,
        env,
        api,
        home: dir,
    })
}

fn claude_on_path() -> bool {
    common::find_program(&std::env::var("PATH").unwrap_or_default(), "claude").is_some()
}

fn id_of(t: &Value) -> &str {
    t["id"].as_str().unwrap()
}

/// The question claude's only turn ends on ([`question_is_never_nudged`]).
pub(crate) const QUESTION: &str = "I found two login forms.\n\nShould I change both of them?";

/// Task `id`'s claude ends its only turn on [`QUESTION`] (the idle grace 2 s): the status
/// line says so (`moment` in the latency log), it is escalated with the question, and
/// nothing is nudged or typed into claude.
pub(crate) fn question_is_never_nudged(rig: &Rig, id: &str, moment: &str) {
    let sent = rig
        .api
        .wait_sent(0, PATIENCE)
        .expect("the question was sent");
    rig.status_since(moment, id, "question for you", sent);
    // Well past the idle grace: escalated (it needs the person), never nudged.
    let t = rig.wait_task("the escalation", id, |t| {
        t["agent"]["escalated"].is_object()
    });
    assert!(
        t["agent"]["escalated"]["reason"]
            .as_str()
            .unwrap()
            .contains("Should I change both of them?"),
        "{t}"
    );
    // Something that must NOT happen: for 3 s (the grace and several monitor passes
    // over), every look finds no nudge and nothing typed.
    common::holds_for("no nudge, nothing typed into claude", GRACES, || {
        rig.history(id, "agent.nudged").is_empty() && rig.api.turns().len() == 1
    });
    assert!(rig.history(id, "agent.nudged").is_empty());
    assert_eq!(rig.api.turns().len(), 1, "nothing was typed into claude");
}
