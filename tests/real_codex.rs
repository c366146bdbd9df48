//! The real codex CLI (npm `@openai/codex`, pinned 0.169.0) inside orange tasks, offline,
//! against the stand-in Responses API on 127.0.0.1 (tests/common/responses_standin.rs),
//! reached through a `[model_providers.stub]` entry in codex's own config.toml (its
//! private `CODEX_HOME`), on a private tmux server with the background monitor running.
//!
//! Each test checks what orange reports (`task show --json`, the status line's
//! `@orange_status`, `task explain`) against what is true at that moment (the stand-in
//! knows what it answered and when, the test knows what it killed) and what codex really
//! did (a file in its worktree, the conversation it resumed).
//!
//! A missing `codex` fails these tests in CI and skips them elsewhere (`common::require`).

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::responses_standin::{Reply, ResponsesStandIn};
use common::rig::{self, AgentRig, Spec};
use common::{Env, TaskEnv};
use serde_json::Value;

/// A bound on waiting for a moment (never a timing assertion).
const PATIENCE: Duration = Duration::from_secs(90);
/// Long enough that a slow answer lasts until the test releases it.
const HELD: Duration = Duration::from_secs(600);

/// One real codex at a time (each takes a second of CPU to start; the suite runs beside).
static CODEX_SLOT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The rig of these tests (tests/common/rig.rs) with the Responses API stand-in.
type Rig = AgentRig<ResponsesStandIn>;

fn codex_installed() -> bool {
    rig::installed("codex")
}

/// How codex's home is set up.
#[derive(Clone, Copy, PartialEq)]
enum Home {
    /// A provider at the stand-in, the repository trusted by `orange doctor --trust`.
    SetUp,
    /// The provider, no trust (codex asks "Trust this folder?").
    Untrusted,
    /// Nothing: no provider, no credentials (codex's login screen).
    Fresh,
}

/// codex's own config.toml in `codex_home` (its `CODEX_HOME`): no update check, no
/// analytics, no plugins or daemon; with `url`, a `[model_providers.stub]` at the stand-in
/// as its model (the built-in `openai` provider cannot be re-pointed, and 0.169 ignores
/// `OPENAI_BASE_URL`), no request retries and `stream_retries` stream retries. The
/// environment codex needs besides HOME.
pub(crate) fn codex_home(
    codex_home: &Path,
    url: Option<&str>,
    stream_retries: u32,
) -> Vec<(&'static str, String)> {
    std::fs::create_dir_all(codex_home).unwrap();
    let mut config = String::from(
        "check_for_update_on_startup = false\n\n[analytics]\nenabled = false\n\n[features]\nplugins = false\nremote_plugin = false\napps = false\nin_app_updates = false\ndaemon_auto_start = false\n",
    );
    if let Some(url) = url {
        config = format!(
            "model = \"stub-model\"\nmodel_provider = \"stub\"\n{config}\n[model_providers.stub]\nname = \"stub\"\nbase_url = \"{url}\"\nwire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = {stream_retries}\n",
        );
    }
    std::fs::write(codex_home.join("config.toml"), config).unwrap();
    vec![("CODEX_HOME", codex_home.display().to_string())]
}

/// What a person does once per repository: `orange doctor --harness codex --trust`
/// records the trust in codex's own config, and says where.
fn trust(env: &TaskEnv, codex_home: &Path) {
    let r = env.ok(&["doctor", "--harness", "codex", "--trust"]);
    let config = codex_home.join("config.toml");
    assert_eq!(
        r["trust_recorded"].as_str(),
        Some(config.to_str().unwrap()),
        "{r}"
    );
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.contains("trust_level = \"trusted\""), "{text}");
}

/// A rig with the real codex, its home as `home` says.
fn codex(test: &'static str, home: Home, script: Vec<Reply>) -> Rig {
    let slot = CODEX_SLOT.lock().unwrap_or_else(|e| e.into_inner());
    let base = Env::with_repo("app");
    let user_home = base.root().join("codex-user");
    let api = ResponsesStandIn::start(script);
    let url = api.base_url();
    let provider = (home != Home::Fresh).then_some(url.as_str());
    let mut extra = codex_home(&user_home.join(".codex"), provider, 2);
    extra.push(("HOME", user_home.display().to_string()));
    let env = rig::agent_env(base, &extra, &[]);
    if home == Home::SetUp {
        trust(&env, &user_home.join(".codex"));
    }
    AgentRig::start(Spec {
        test,
        agent: "codex",
        patience: PATIENCE,
        slot: Some(slot),
        env,
        api,
        home: user_home,
    })
}

/// The agent's state and the signal that told it (`task show --json`).
fn agent_is(t: &Value, state: &str) -> bool {
    t["agent"]["state"] == state
}

/// Everything a person does with one codex, moment by moment: the task prompt (starting
/// with `--`) reaches it as its first message; it calls its shell tool and the file lands
/// in the worktree; a slow answer is `working`; the end of its turn is `waiting`; its
/// session id (SessionStart) is the task's; `/exit` leaves it dead (exit 0); respawn runs
/// `codex resume <that id>` and the model is sent the earlier turns; `kill -9` is dead.
#[test]
fn codex_works_in_its_pane_ends_its_turn_and_respawn_resumes_it() {
    if !codex_installed() {
        return;
    }
    let rig = codex(
        "codex_works",
        Home::SetUp,
        vec![
            Reply::exec("printf edited > codex-was-here.txt"),
            Reply::slow(HELD, Reply::text("All done: the file is there.")),
        ],
    );
    let summary = "--version is not an option: write codex-was-here.txt";
    let id = rig.create("codex/works", summary);
    // Interactive: its interface, the prompt after `--` (never taken for an option).
    let argv = rig.agent_argv(&id);
    // codex's npm launcher (node) runs its native binary.
    assert!(
        argv.iter().take(2).any(|a| a.ends_with("codex")),
        "{argv:?}"
    );
    assert!(!argv.iter().any(|a| a == "exec"), "{argv:?}");
    let dd = argv
        .iter()
        .position(|a| a == "--")
        .expect("-- before the prompt");
    assert!(argv[dd + 1].starts_with(summary), "{argv:?}");
    assert!(argv.iter().any(|a| a == "--dangerously-bypass-hook-trust"));
    rig.wait_turns(&id, 1);
    let first = &rig.api.turns()[0];
    // Its turn is in progress from its first request on: working (UserPromptSubmit).
    rig.status_since("working (turn in progress)", &id, "working", first.at);
    assert!(
        first.user_texts().iter().any(|t| t.starts_with(summary)),
        "the summary reaches codex verbatim as its first message: {:?}",
        first.user_texts()
    );
    // The tool call ran in the worktree.
    let file = rig.workspace(&id).join("codex-was-here.txt");
    common::wait_for("codex's shell call to write the file", 60, || file.exists());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "edited");
    // The slow answer: working, by its hooks; the session id it told is the task's.
    rig.wait_turns(&id, 2);
    let session = first.header("session-id").unwrap().to_string();
    let t = rig.wait_moment("slow answer", &id, "working", |t| agent_is(t, "working"));
    assert_eq!(t["agent"]["signal"], "hook", "{t}");
    assert_eq!(t["agent_session_id"], session.as_str(), "{t}");
    assert_eq!(
        rig.api.turns()[1].tool_outputs().len(),
        1,
        "codex sent its tool's output in the next turn"
    );
    let explain = rig.explain(&id);
    assert!(explain.contains("working"), "{explain}");
    // The end of its turn: waiting for input (Stop).
    let released = Instant::now();
    rig.api.release();
    let t = rig.wait_moment_since("end of turn", &id, "waiting for input", released, |t| {
        agent_is(t, "waiting")
    });
    assert_eq!(t["agent"]["signal"], "hook", "{t}");
    assert_eq!(t["status"], "working", "{t}");
    let explain = rig.explain(&id);
    assert!(explain.contains("waiting"), "{explain}");
    assert!(rig.screen(&id).contains("All done"), "{}", rig.screen(&id));
    // `/exit`, typed by the person: codex ends (exit 0), orange sees it dead.
    let pane = rig.pane(&id);
    rig.env.tmux.ok(&["send-keys", "-t", &pane, "-l", "/exit"]);
    common::wait_for("/exit typed", 10, || rig.screen(&id).contains("/exit"));
    rig.env.tmux.ok(&["send-keys", "-t", &pane, "Enter"]);
    let exited = Instant::now();
    let t = rig.wait_moment_since("/exit", &id, "exited", exited, |t| agent_is(t, "dead"));
    assert_eq!(t["session"]["exit_status"], 0, "{t}");
    let explain = rig.explain(&id);
    assert!(explain.contains("orange task respawn"), "{explain}");
    // Closed by the person: no crash, the person told once.
    let t = rig.wait_moment("/exit told", &id, "", |t| {
        t["agent"]["escalated"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("closed (exit 0)"))
    });
    assert_eq!(t["crash_count"].as_u64().unwrap_or(0), 0, "{t}");
    assert_eq!(rig.env.history_events(&id, "agent.closed").len(), 1, "{t}");

    // Respawn: the same conversation, by its id (never --last).
    let turns_before = rig.api.turns().len();
    rig.env.ok(&["task", "respawn", &id]);
    let argv = rig.agent_argv(&id);
    let at = argv.iter().position(|a| a == "resume").expect("resume");
    assert_eq!(argv[at + 1], session, "{argv:?}");
    assert!(!argv.iter().any(|a| a == "--last"), "{argv:?}");
    rig.wait_turns(&id, turns_before + 1);
    let resumed = rig.api.turns()[turns_before].clone();
    assert_eq!(resumed.header("session-id"), Some(session.as_str()));
    let texts = resumed.user_texts();
    assert!(
        texts.iter().any(|t| t.starts_with(summary))
            && texts.iter().any(|t| t.starts_with("Resuming:")),
        "the respawned codex continues its conversation (the first prompt as history): {texts:?}"
    );
    rig.wait_moment("respawned turn ended", &id, "waiting for input", |t| {
        agent_is(t, "waiting") && t["session"]["state"] == "live"
    });
    // kill -9 (its launcher and the native codex: the pane's process group): dead.
    let pid = rig.pane_pid(&id);
    let killed = Instant::now();
    Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .status()
        .unwrap();
    // Its first end without an outcome (the /exit was no crash): a crash, not stuck yet;
    // the agent dead by signal 9.
    let t = rig.wait_moment_since("kill -9", &id, "killed", killed, |t| {
        agent_is(t, "dead") && t["session"]["exit_signal"] == 9 && t["crash_count"] == 1
    });
    assert_eq!(t["status"], "working", "{t}");
    assert!(
        t["agent"]["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("killed by signal 9")),
        "{t}"
    );
    assert_eq!(t["crash_count"], 1, "{t}");
}

/// An error codex retries (`Reconnecting... k/N` while its next attempt hangs): retrying;
/// then it gives up (no hook says so; its screen does): error, with its kind.
#[test]
fn codex_retrying_then_giving_up_on_an_error_is_seen() {
    if !codex_installed() {
        return;
    }
    let mut script = vec![
        Reply::status(500, "orange stand-in: overloaded"),
        Reply::slow(HELD, Reply::status(500, "orange stand-in: overloaded")),
    ];
    script.extend((0..20).map(|_| Reply::status(500, "orange stand-in: overloaded")));
    let rig = codex("codex_errors", Home::SetUp, script);
    let id = rig.create("codex/errors", "say hello");
    rig.wait_turns(&id, 2);
    let retried = rig.api.turns()[1].at;
    let t = rig.wait_moment_since("retrying", &id, "retrying", retried, |t| {
        agent_is(t, "retrying")
    });
    assert_eq!(t["agent"]["signal"], "screen", "{t}");
    assert!(rig.screen(&id).contains("Reconnecting"));
    rig.api.release();
    // It gives up after its last attempt (its own backoff first): from that request on.
    let t = rig.wait_moment("gave up", &id, "error: overloaded", |t| {
        agent_is(t, "error")
    });
    let last = rig.api.turns().last().unwrap().at;
    rig.record_now(
        &id,
        "gave up (from its last request; upper bound)",
        last.elapsed(),
    );
    assert_eq!(t["agent"]["error_kind"], "overloaded", "{t}");
    assert!(
        t["agent"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("high demand")),
        "{t}"
    );
    let explain = rig.explain(&id);
    assert!(explain.contains("error"), "{explain}");
    // codex is alive: the error is the turn's, not a death.
    assert_eq!(t["session"]["state"], "live", "{t}");
}

/// Headless: `codex exec` runs one turn and exits 0: finished, the task goes to review,
/// no crash (today's one-shot counted each finished turn as a crash, then `stuck`).
#[test]
fn a_headless_codex_that_ends_its_turn_has_finished() {
    if !codex_installed() {
        return;
    }
    let rig = codex(
        "codex_headless",
        Home::SetUp,
        vec![
            Reply::exec("printf headless > headless.txt"),
            Reply::text("Finished."),
        ],
    );
    let id = rig.create_with("codex/headless", "write headless.txt", &["--headless"]);
    let t = rig.task(&id);
    assert_eq!(t["headless"], true, "{t}");
    let show = rig.explain(&id);
    assert!(!show.is_empty());
    let text = String::from_utf8_lossy(
        &rig.env
            .cmd_in(&rig.env.repo, &["task", "show", &id])
            .env_remove("ORANGE_JSON")
            .output()
            .unwrap()
            .stdout,
    )
    .into_owned();
    assert!(text.contains("codex, headless"), "{text}");
    let t = rig.wait_moment("finished", &id, "review", |t| t["status"] == "reviewing");
    assert_eq!(t["session"]["exit_status"], 0, "{t}");
    assert_eq!(t["crash_count"].as_u64().unwrap_or(0), 0, "{t}");
    assert!(
        rig.env.history_events(&id, "agent.crashed").is_empty(),
        "{t}"
    );
    assert_eq!(
        rig.env.history_events(&id, "agent.finished").len(),
        1,
        "{t}"
    );
    assert!(rig.workspace(&id).join("headless.txt").exists());
    // Its session id came from its SessionStart hook (headless too).
    assert!(t["agent_session_id"].as_str().is_some(), "{t}");
}

/// In a repository codex was not told to trust: `blocked: folder trust`, with what to do;
/// no keystroke answers it.
#[test]
fn an_untrusted_codex_is_blocked_on_folder_trust() {
    if !codex_installed() {
        return;
    }
    let rig = codex("codex_trust", Home::Untrusted, vec![]);
    let id = rig.create("codex/trust", "say hello");
    let t = rig.wait_moment("folder trust", &id, "blocked: folder trust", |t| {
        agent_is(t, "blocked")
    });
    assert_eq!(t["agent"]["blocker"], "folder_trust", "{t}");
    let explain = rig.explain(&id);
    assert!(explain.contains("orange doctor --trust"), "{explain}");
    assert!(rig.api.turns().is_empty(), "nothing answered the dialog");
    assert!(rig.screen(&id).contains("Trust this folder"));
    // doctor says so, and --trust records it.
    let r = rig.env.ok(&["doctor", "--harness", "codex"]);
    assert!(r.to_string().contains("not trusted yet"), "{r}");
    let r = rig.env.ok(&["doctor", "--harness", "codex", "--trust"]);
    assert_eq!(
        r["trust_recorded"].as_str(),
        Some(
            rig.home
                .join(".codex")
                .join("config.toml")
                .to_str()
                .unwrap()
        ),
        "{r}"
    );
}

/// No credentials: codex's login screen is `blocked: login` with what to do, never
/// working.
#[test]
fn codex_without_credentials_is_blocked_on_login() {
    if !codex_installed() {
        return;
    }
    let rig = codex("codex_login", Home::Fresh, vec![]);
    // Trust alone (no provider): the login screen comes first.
    rig.env.ok(&["doctor", "--harness", "codex", "--trust"]);
    let id = rig.create("codex/login", "say hello");
    let t = rig.wait_moment("login", &id, "blocked: login", |t| agent_is(t, "blocked"));
    assert_eq!(t["agent"]["blocker"], "login", "{t}");
    assert!(rig.screen(&id).contains("Sign in with ChatGPT"));
    let explain = rig.explain(&id);
    assert!(explain.contains("log in"), "{explain}");
    common::holds_for("never working", Duration::from_secs(2), || {
        !agent_is(&rig.task(&id), "working")
    });
}

/// `/clear` starts a new codex session in the same pane (SessionStart, source "clear", a
/// new id): the task follows it, and the new session's hooks still tell its state (a
/// nested agent's would be ignored).
#[test]
fn after_clear_the_task_follows_codex_s_new_session() {
    if !codex_installed() {
        return;
    }
    let rig = codex(
        "codex_clear",
        Home::SetUp,
        vec![
            Reply::text("First answer."),
            Reply::slow(HELD, Reply::text("Second answer.")),
        ],
    );
    let id = rig.create("codex/clear", "say hello");
    let t = rig.wait_moment("first turn ended", &id, "waiting for input", |t| {
        agent_is(t, "waiting") && t["agent_session_id"].is_string()
    });
    let first = t["agent_session_id"].as_str().unwrap().to_string();
    let pane = rig.pane(&id);
    rig.env.tmux.ok(&["send-keys", "-t", &pane, "-l", "/clear"]);
    common::wait_for("/clear typed", 10, || rig.screen(&id).contains("/clear"));
    rig.env.tmux.ok(&["send-keys", "-t", &pane, "Enter"]);
    let t = rig.wait_moment("cleared", &id, "", |t| {
        t["agent_session_id"].as_str().is_some_and(|s| s != first)
    });
    let second = t["agent_session_id"].as_str().unwrap().to_string();
    let learned = rig.env.history_events(&id, "agent.session");
    assert_eq!(learned.last().unwrap()["via"], "hook (/clear)", "{t}");
    rig.env
        .tmux
        .ok(&["send-keys", "-t", &pane, "-l", "after the clear"]);
    common::wait_for("typed", 10, || rig.screen(&id).contains("after the clear"));
    rig.env.tmux.ok(&["send-keys", "-t", &pane, "Enter"]);
    rig.wait_turns(&id, 2);
    let turn = rig.api.turns()[1].clone();
    assert_eq!(turn.header("session-id"), Some(second.as_str()));
    let t = rig.wait_moment("new session works", &id, "working", |t| {
        agent_is(t, "working") && t["agent"]["hook_event"] == "UserPromptSubmit"
    });
    assert_eq!(t["agent"]["signal"], "hook", "{t}");
    rig.api.release();
    rig.wait_moment("new session's turn ended", &id, "waiting for input", |t| {
        agent_is(t, "waiting") && t["agent"]["hook_event"] == "Stop"
    });
}

/// A codex of the person's own that asks before it runs a command (`[harness.codex]
/// command = "codex -a on-request -s workspace-write --"`; codex 0.169's `-a` takes only
/// on-request and never; the model asks to run outside its sandbox): orange still passes its
/// hooks, codex's approval prompt is `blocked: approval` (its PermissionRequest hook) in
/// the status line, `task show` and `task explain`; approved in the pane, the command
/// runs in the worktree and the task works, then waits.
#[test]
fn a_codex_that_asks_is_blocked_on_approval_until_answered() {
    if !codex_installed() {
        return;
    }
    let rig = codex(
        "codex_approval",
        Home::SetUp,
        vec![
            Reply::exec_escalated("printf approved > approved.txt"),
            Reply::slow(HELD, Reply::text("Done after the approval.")),
        ],
    );
    let config = rig.env.home.join("config.toml");
    let mut cfg = std::fs::read_to_string(&config).unwrap_or_default();
    cfg.push_str("\n[harness.codex]\ncommand = \"codex -a on-request -s workspace-write --\"\n");
    std::fs::write(&config, cfg).unwrap();
    let id = rig.create("codex/approve", "write approved.txt");
    // `sh -c '<the command>'`: its line.
    let line = rig.agent_argv(&id).join(" ");
    assert!(
        line.contains("codex --dangerously-bypass-hook-trust -c 'hooks.SessionStart="),
        "orange's hooks ride along a codex command of one's own: {line}"
    );
    assert!(
        !line.contains("--dangerously-bypass-approvals-and-sandbox"),
        "{line}"
    );
    rig.wait_turns(&id, 1);
    // The moment it became true: the stand-in sent the command that needs approving.
    let sent = rig.api.wait_sent(0, PATIENCE).unwrap();
    let t = rig.wait_moment_since(
        "tool-approval prompt",
        &id,
        "blocked: approval",
        sent,
        |t| agent_is(t, "blocked"),
    );
    assert_eq!(t["agent"]["blocker"], "approval", "{t}");
    assert_eq!(t["agent"]["signal"], "hook", "{t}");
    assert_eq!(t["agent"]["hook_event"], "PermissionRequest", "{t}");
    let explain = rig.explain(&id);
    assert!(explain.contains("approve"), "{explain}");
    let ws = rig.workspace(&id);
    assert!(!ws.join("approved.txt").exists(), "not before the approval");
    common::wait_for("codex's approval prompt on screen", 60, || {
        rig.screen(&id).contains("Yes, proceed")
    });
    // The first choice ("Yes, proceed"): Enter.
    let pane = rig.pane(&id);
    rig.env.tmux.ok(&["send-keys", "-t", &pane, "Enter"]);
    common::wait_for("the approved command's file", 60, || {
        ws.join("approved.txt").exists()
    });
    assert_eq!(
        std::fs::read_to_string(ws.join("approved.txt")).unwrap(),
        "approved"
    );
    rig.wait_turns(&id, 2);
    let t = rig.wait_moment("working after the approval", &id, "working", |t| {
        agent_is(t, "working")
    });
    assert_eq!(t["agent"]["signal"], "hook", "{t}");
    rig.api.release();
    rig.wait_moment(
        "end of turn after the approval",
        &id,
        "waiting for input",
        |t| agent_is(t, "waiting"),
    );
}

/// Under `--sandbox bwrap` the task's state is read-only to codex's SessionStart hook: the
/// monitor learns the session id from codex's rollout (`rollout-<time>-<uuid>.jsonl` of
/// the task's workspace, history `agent.session` via `rollout`), and respawn resumes that
/// very conversation (`codex resume <id>`: the model is sent the earlier turn).
#[test]
fn a_sandboxed_codex_s_session_is_learned_from_its_rollout_and_resumed() {
    if !codex_installed() || !crate::sandbox::bwrap_usable() {
        return;
    }
    let rig = codex(
        "codex_sandbox",
        Home::SetUp,
        vec![Reply::text("First answer."), Reply::text("Resumed answer.")],
    );
    let id = rig.create_with("codex/sandbox", "say hello", &["--sandbox", "bwrap"]);
    assert!(rig.agent_under_bwrap(&id), "{:?}", rig.agent_argv(&id));
    rig.wait_turns(&id, 1);
    let session = rig.api.turns()[0].header("session-id").unwrap().to_string();
    let t = rig.wait_moment("first turn ended", &id, "waiting for input", |t| {
        agent_is(t, "waiting") && t["agent_session_id"].is_string()
    });
    assert_eq!(t["agent_session_id"], session.as_str(), "{t}");
    let learned = rig.env.history_events(&id, "agent.session");
    assert_eq!(learned.len(), 1, "{learned:?}");
    assert_eq!(learned[0]["via"], "rollout", "{learned:?}");
    // Respawn: the same conversation, by its id, still in the sandbox.
    let turns_before = rig.api.turns().len();
    rig.env.ok(&["task", "respawn", &id, "--force", "--yes"]);
    common::wait_for("the respawned codex", 30, || {
        rig.agent_argv(&id).iter().any(|a| a == "resume")
    });
    let argv = rig.agent_argv(&id);
    assert!(rig::under_bwrap(&argv), "{argv:?}");
    let at = argv.iter().position(|a| a == "resume").unwrap();
    assert_eq!(argv[at + 1], session, "{argv:?}");
    rig.wait_turns(&id, turns_before + 1);
    let resumed = rig.api.turns()[turns_before].clone();
    assert_eq!(resumed.header("session-id"), Some(session.as_str()));
    assert!(
        resumed
            .user_texts()
            .iter()
            .any(|t| t.starts_with("say hello")),
        "the resumed codex sends the earlier turn: {:?}",
        resumed.user_texts()
    );
    assert_eq!(rig.env.history_events(&id, "agent.session").len(), 1);
}
