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

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::rig::{self, AgentRig, Spec};
use common::standin::{Reply, StandIn};
use common::{Env, TaskEnv};
use serde_json::{json, Value};

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

/// What claude says of itself (`~/.claude/sessions/<pid>.json` in its HOME, by the
/// agent's pid): `idle`, `busy` or `waiting`.
fn claude_status(rig: &Rig, id: &str) -> Option<String> {
    let pid = rig.agent_pid(id);
    let file = rig.home.join(format!(".claude/sessions/{pid}.json"));
    let v: Value = serde_json::from_slice(&std::fs::read(file).ok()?).ok()?;
    v["status"].as_str().map(str::to_string)
}

fn id_of(t: &Value) -> &str {
    t["id"].as_str().unwrap()
}

/// A user text of the prompt orange gives (the stand-in's first turn).
fn first_turn_text(api: &StandIn) -> String {
    api.turns()
        .first()
        .map(|r| r.last_user_text())
        .unwrap_or_default()
}

#[test]
fn a_set_up_claude_works_edits_its_worktree_and_ends_its_turn() {
    if !claude_installed() {
        return;
    }
    let rig = claude(
        "turn",
        Home::SET_UP,
        vec![
            Reply::slow(
                Duration::from_secs(6),
                Reply::bash("echo written-by-claude > claude-was-here.txt"),
            ),
            Reply::text("I wrote the file. The task is done."),
        ],
    );
    let id = rig.create("real/turn", "Write claude-was-here.txt");
    // Working: claude sent its first turn (the prompt orange gave it) and waits for it.
    assert!(
        rig.api.wait_requests(1, PATIENCE),
        "claude never called the API"
    );
    let asked = Instant::now();
    assert!(
        first_turn_text(&rig.api).contains("Write claude-was-here.txt"),
        "{}",
        first_turn_text(&rig.api)
    );
    rig.status_since("working (turn in progress)", &id, "working", asked);
    // A slow reply is still work: it never shows as waiting while the reply streams.
    let t = rig.wait_task("the hook to say working", &id, |t| {
        t["agent"]["state"] == "working"
    });
    assert_eq!(t["agent"]["signal"], "hook", "{t}");
    while rig.api.sent_at(0).is_none() {
        let line = rig.status_line(&id);
        assert!(line.contains("working"), "a slow reply showed as {line:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    rig.record(
        "slow reply (6 s): working throughout",
        "working",
        Duration::ZERO,
    );
    // End of turn.
    let sent = rig
        .api
        .wait_sent(1, PATIENCE)
        .expect("the final text was sent");
    let line = rig.status_since("end of turn", &id, "waiting for input", sent);
    assert!(!line.contains("question"), "{line}");
    // What the agent really did: the tool ran in its own worktree.
    let ws = rig.workspace(&id);
    assert_eq!(
        std::fs::read_to_string(ws.join("claude-was-here.txt")).unwrap_or_default(),
        "written-by-claude\n"
    );
    assert!(!rig.env.repo.join("claude-was-here.txt").exists());
    // The tool result went back to the API.
    assert!(rig.api.turns()[1].tool_results().len() == 1);
    // First run screens never showed: orange's settings skip the bypass warning.
    let settings: Value = serde_json::from_str(
        &std::fs::read_to_string(ws.join(".claude/settings.local.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(settings["skipDangerousModePermissionPrompt"], true);
    assert!(settings["hooks"]["PermissionRequest"].is_array());
    assert!(settings["hooks"]["StopFailure"].is_array());
    let t = rig.task(&id);
    assert_eq!(t["agent"]["state"], "waiting", "{t}");
    assert!(t["agent"].get("blocker").is_none(), "{t}");
}

/// The question claude's only turn ends on ([`question_is_never_nudged`]).
pub(crate) const QUESTION: &str = "I found two login forms.\n\nShould I change both of them?";

#[test]
fn a_question_is_never_answered_by_a_nudge() {
    if !claude_installed() {
        return;
    }
    let rig = claude(
        "question",
        Home::SET_UP,
        vec![Reply::Question(QUESTION.into())],
    );
    std::fs::write(
        rig.env.home.join("config.toml"),
        "[policy]\nidle_grace = \"2s\"\n",
    )
    .unwrap();
    let id = rig.create("real/question", "Fix the login form");
    question_is_never_nudged(&rig, &id, "end of turn on a question");
}

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

#[test]
fn an_approval_prompt_blocks_and_no_keystroke_reaches_it() {
    if !claude_installed() {
        return;
    }
    let rig = claude(
        "approval",
        Home::SET_UP,
        vec![Reply::bash("touch approved.txt"), Reply::text("Touched.")],
    );
    // A person who wants to approve tool calls: claude asks before running Bash.
    std::fs::write(
        rig.env.home.join("config.toml"),
        "[harness.claude]\npermission_mode = \"manual\"\n[policy]\nidle_grace = \"1s\"\nmax_nudges = 1\n",
    )
    .unwrap();
    let id = rig.create("real/approval", "Touch approved.txt");
    let sent = rig
        .api
        .wait_sent(0, PATIENCE)
        .expect("the tool call was sent");
    let line = rig.status_since("approval prompt", &id, "blocked: approval", sent);
    assert!(line.contains("approval"), "{line}");
    let t = rig.task(&id);
    assert_eq!(t["agent"]["state"], "blocked", "{t}");
    // The hook (PermissionRequest) comes as claude draws the prompt.
    common::wait_for("the approval prompt on screen", 10, || {
        rig.screen(&id).contains("Do you want to proceed?")
    });
    // Several monitor passes and idle graces later: still asking, nothing typed, one
    // escalation. Something that must NOT happen: every look for 4 s finds it so.
    common::holds_for(
        "the approval prompt, untouched",
        GRACES + Duration::from_secs(1),
        || {
            let screen = rig.screen(&id);
            let prompt = screen.contains("Do you want to proceed?");
            let touched = rig.workspace(&id).join("approved.txt").exists();
            let nudged = rig.history(&id, "agent.nudged");
            let ok = prompt && !touched && nudged.is_empty();
            if !ok {
                eprintln!(
                    "prompt {prompt}, touched {touched}, nudged {nudged:?}\n{screen}\ntask: {}\nhooks:\n{}",
                    rig.task(&id),
                    std::fs::read_to_string(rig.env.home.join("orange.log")).unwrap_or_default()
                );
            }
            ok
        },
    );
    assert!(rig.screen(&id).contains("Do you want to proceed?"));
    assert!(!rig.workspace(&id).join("approved.txt").exists());
    assert!(rig.history(&id, "agent.nudged").is_empty());
    assert_eq!(rig.history(&id, "agent.escalated").len(), 1);
    let explain = String::from_utf8_lossy(
        &rig.env
            .cmd_in(&rig.env.repo, &["task", "explain", &id])
            .output()
            .unwrap()
            .stdout,
    )
    .into_owned();
    assert!(explain.contains("approve"), "{explain}");
    // The person approves (Enter on "1. Yes"): the tool runs, the turn ends.
    rig.env
        .tmux
        .ok(&["send-keys", "-t", &rig.pane(&id), "Enter"]);
    rig.wait_turns(&id, 2);
    assert!(rig.workspace(&id).join("approved.txt").exists());
    assert!(
        rig.agent_argv(&id).iter().any(|a| a == "manual"),
        "{:?}",
        rig.agent_argv(&id)
    );
    // Now idle after a turn that was not a question: ONE nudge (max_nudges = 1), which
    // arrives whole as the next turn (no Escape, no stray keys); then, idle again without
    // progress, an escalation instead of another nudge.
    rig.wait_turns(&id, 3);
    assert_eq!(
        rig.api.turns()[2].last_user_text(),
        "Please continue with the task."
    );
    let t = rig.wait_task("the escalation", &id, |t| {
        t["agent"]["escalated"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("without progress"))
    });
    assert_eq!(rig.history(&id, "agent.nudged").len(), 1, "{t}");
    // Something that must NOT happen: for 3 s, every look finds no second nudge.
    common::holds_for("no second nudge", GRACES, || rig.api.turns().len() == 3);
    assert_eq!(rig.api.turns().len(), 3, "no second nudge");
}

/// Claude Code 2.1 holds back its `permission_prompt` Notification while the person typed
/// in the last 6 s (anthropics/claude-code#58909): the approval is told by the
/// PermissionRequest hook, at once and with the tool's name, whatever was typed just
/// before; the next hook (PostToolUse, Stop) clears it.
#[test]
fn an_approval_asked_just_after_typing_is_told_by_its_hook() {
    if !claude_installed() {
        return;
    }
    let rig = claude(
        "approval-typed",
        Home::SET_UP,
        vec![
            Reply::slow(Duration::from_secs(3), Reply::bash("touch typed.txt")),
            Reply::text("Touched."),
        ],
    );
    std::fs::write(
        rig.env.home.join("config.toml"),
        "[harness.claude]\npermission_mode = \"manual\"\n",
    )
    .unwrap();
    let id = rig.create("real/approval-typed", "Touch typed.txt");
    rig.wait_turns(&id, 1);
    // While the reply is slow, the person types into the pane (no Enter).
    let pane = rig.pane(&id);
    rig.env
        .tmux
        .ok(&["send-keys", "-t", &pane, "-l", "draft note"]);
    rig.screen_shows(&id, "draft note");
    let sent = rig
        .api
        .wait_sent(0, PATIENCE)
        .expect("the tool call was sent");
    rig.status_since("approval after typing", &id, "blocked: approval", sent);
    let t = rig.task(&id);
    assert_eq!(t["agent"]["state"], "blocked", "{t}");
    assert_eq!(t["agent"]["blocker"], "approval", "{t}");
    assert_eq!(t["agent"]["hook_event"], "PermissionRequest", "{t}");
    assert!(
        t["agent"]["detail"].as_str().unwrap_or("").contains("Bash"),
        "the tool is named: {t}"
    );
    // Several monitor passes later (the screen shows the dialog too): still told by the
    // hook, which said it first.
    common::wait_for("the approval prompt on screen", 10, || {
        rig.screen(&id).contains("Do you want to proceed?")
    });
    common::holds_for("the hook's word stands", GRACES, || {
        let t = rig.task(&id);
        t["agent"]["state"] == "blocked" && t["agent"]["signal"] == "hook"
    });
    // The person approves: the next hooks (PostToolUse, Stop) clear the block.
    rig.env.tmux.ok(&["send-keys", "-t", &pane, "Enter"]);
    let t = rig.wait_task("the block to clear", &id, |t| {
        t["agent"]["state"] != "blocked"
    });
    assert!(t["agent"].get("blocker").is_none(), "{t}");
    assert!(rig.workspace(&id).join("typed.txt").exists());
}

#[test]
fn a_claude_started_without_a_prompt_waits_for_the_first_one_typed_in_its_pane() {
    if !claude_installed() {
        return;
    }
    let rig = claude("no-prompt", Home::SET_UP, vec![Reply::text("Fixed it.")]);
    // Idle for longer than the grace, over and over: still never nudged nor escalated.
    std::fs::write(
        rig.env.home.join("config.toml"),
        "[policy]\nidle_grace = \"1s\"\nmax_nudges = 1\n",
    )
    .unwrap();
    // No summary: claude starts interactive, with no prompt argument.
    let id = rig.create("real/noprompt", "");
    let t = rig.task(&id);
    assert_eq!(t["summary"], "real/noprompt", "{t}");
    assert_eq!(t["awaiting_prompt"], true, "{t}");
    let argv = rig.agent_argv(&id);
    assert!(!argv.iter().any(|a| a == "--"), "{argv:?}");
    let started = rig.screen_shows(&id, "bypass permissions on");
    rig.status_since(
        "started without a prompt",
        &id,
        "waiting for a first prompt",
        started,
    );
    let t = rig.task(&id);
    assert_eq!(t["agent"]["state"], "waiting", "{t}");
    assert_eq!(t["agent"]["hook_event"], "SessionStart", "{t}");
    // Something that must NOT happen: for 3 s (the grace and several monitor passes over)
    // nothing is typed into claude and nothing is escalated.
    common::holds_for("no nudge, no escalation", GRACES, || {
        rig.history(&id, "agent.nudged").is_empty()
            && rig.history(&id, "agent.escalated").is_empty()
            && rig.api.turns().is_empty()
    });
    let t = rig.task(&id);
    assert!(t["agent"].get("escalated").is_none(), "{t}");
    assert_eq!(t["summary"], "real/noprompt", "{t}");
    // The person types the first prompt in the pane.
    let pane = rig.pane(&id);
    rig.env
        .tmux
        .ok(&["send-keys", "-t", &pane, "-l", "Fix the login form"]);
    rig.screen_shows(&id, "Fix the login form");
    rig.env.tmux.ok(&["send-keys", "-t", &pane, "Enter"]);
    let typed = Instant::now();
    rig.wait_turns(&id, 1);
    assert!(
        first_turn_text(&rig.api).contains("Fix the login form"),
        "{}",
        first_turn_text(&rig.api)
    );
    let t = rig.wait_task("the typed prompt to become the summary", &id, |t| {
        t["summary"] == "Fix the login form"
    });
    rig.record(
        "first typed prompt is the summary",
        "Fix the login form",
        typed.elapsed(),
    );
    assert!(t.get("awaiting_prompt").is_none(), "{t}");
    let changed = rig.history(&id, "summary.changed");
    assert_eq!(changed.len(), 1, "{t}");
    assert_eq!(changed[0]["summary"], "Fix the login form", "{t}");
    assert_eq!(changed[0]["via"], "hook", "{t}");
    // From then on an agent like any other: idle after its turn, it is nudged.
    rig.wait_turns(&id, 2);
    assert_eq!(
        rig.api.turns()[1].last_user_text(),
        "Please continue with the task."
    );
    rig.wait_task("the nudge in the history", &id, |t| {
        t["history"]
            .as_array()
            .is_some_and(|h| h.iter().any(|e| e["event"] == "agent.nudged"))
    });
}

/// Errors: claude retries them by itself (`attempt k/N` on screen, transcript silent),
/// then gives up; orange shows retrying, then the error with its kind and message.
fn api_error(test: &'static str, status: u16, kind: &str) {
    let rig = claude_with(
        test,
        Home::SET_UP,
        vec![Reply::repeat(40, Reply::status(status))],
        &[
            ("CLAUDE_CODE_MAX_RETRIES", "4"),
            ("API_TIMEOUT_MS", "20000"),
        ],
        is_root(),
    );
    let id = rig.create(&format!("real/e{status}"), "Say hello");
    let first = rig.api.wait_sent(0, PATIENCE).expect("an error was sent");
    rig.status_since(&format!("{status}: retrying"), &id, "retrying", first);
    // The retry is on claude's screen only; orange says which error and which attempt.
    let t = rig.task(&id);
    assert_eq!(t["agent"]["state"], "retrying", "{t}");
    let detail = t["agent"]["detail"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // ("API error, attempt 1/4" at first; claude names the status from a later attempt.)
    assert!(detail.contains("attempt"), "{t}");
    // After its last attempt claude gives up: the error, measured from that last reply.
    let line = rig.status_shows(
        &format!("{status}: error after the retries"),
        &id,
        &format!("error: {kind}"),
    );
    let shown = Instant::now();
    let last = rig.api.turns().len() - 1;
    let gave_up = rig.api.sent_at(last).expect("the last error was sent");
    rig.record_now(
        &id,
        &format!("{status}: error after the last retry"),
        shown.saturating_duration_since(gave_up),
    );
    assert!(line.contains(kind), "{line}");
    let t = rig.wait_task("the monitor to handle the error", &id, |t| {
        !rig.history(id_of(t), "agent.error").is_empty()
    });
    assert_eq!(t["agent"]["state"], "error", "{t}");
    assert_eq!(t["agent"]["error_kind"], kind, "{t}");
    // Claude's own message is kept ("API Error: 529 Overloaded. …", "Invalid API key · …").
    let detail = t["agent"]["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains(&status.to_string()) || detail.contains("API key"),
        "the message is kept: {t}"
    );
    assert_eq!(rig.history(&id, "agent.error").len(), 1, "{t}");
}

#[test]
fn error_401_is_unauthorized() {
    if !claude_installed() {
        return;
    }
    api_error("e401", 401, "unauthorized");
}

#[test]
fn error_429_is_rate_limited() {
    if !claude_installed() {
        return;
    }
    api_error("e429", 429, "rate_limited");
}

#[test]
fn error_500_is_server() {
    if !claude_installed() {
        return;
    }
    api_error("e500", 500, "server");
}

#[test]
fn error_529_is_overloaded() {
    if !claude_installed() {
        return;
    }
    api_error("e529", 529, "overloaded");
}

/// Claude's argv after a respawn or a restore: the first launch's permission mode and the
/// same conversation.
fn assert_resumed(rig: &Rig, id: &str, conv: &str) {
    let argv = rig.agent_argv(id);
    assert!(
        argv.contains(&"--dangerously-skip-permissions".to_string()),
        "{argv:?}"
    );
    assert!(!argv.iter().any(|a| a == "acceptEdits"), "{argv:?}");
    assert!(
        argv.windows(2).any(|w| w[0] == "--resume" && w[1] == conv),
        "{argv:?}"
    );
}

#[test]
fn exit_respawn_and_restore_keep_the_conversation() {
    if !claude_installed() {
        return;
    }
    let mut rig = claude(
        "lifecycle",
        Home::SET_UP,
        vec![
            Reply::text("First answer: remember the word PAPAYA."),
            Reply::text("Resumed after /exit."),
            Reply::text("Resumed after the restore."),
        ],
    );
    let id = rig.create("real/life", "Remember a word");
    let conv = rig.conversation(&id);
    let sent = rig.api.wait_sent(0, PATIENCE).unwrap();
    rig.status_since("end of turn", &id, "waiting for input", sent);
    // /exit: claude ends with status 0 without reporting an outcome.
    rig.env
        .tmux
        .ok(&["send-keys", "-t", &rig.pane(&id), "-l", "/exit"]);
    rig.screen_shows(&id, "/exit");
    let typed = Instant::now();
    rig.env
        .tmux
        .ok(&["send-keys", "-t", &rig.pane(&id), "Enter"]);
    rig.status_since("/exit", &id, "exited 0", typed);
    let t = rig.wait_task("the exit's last lines", &id, |t| {
        t["agent"]["last_lines"].is_array()
    });
    assert!(
        t["agent"]["last_lines"].to_string().contains("--resume"),
        "claude's last words (how to resume) are kept: {t}"
    );
    // Closed by the person: no crash, the person told once.
    let t = rig.wait_task("/exit told", &id, |t| {
        t["agent"]["escalated"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("closed (exit 0)"))
    });
    assert_eq!(t["crash_count"].as_u64().unwrap_or(0), 0, "{t}");
    assert_eq!(rig.env.history_events(&id, "agent.closed").len(), 1, "{t}");
    // Respawn: the same conversation, the same permission mode.
    rig.env.ok(&["task", "respawn", &id]);
    assert_resumed(&rig, &id, &conv);
    rig.wait_turns(&id, 2);
    assert!(
        rig.api.turns()[1].body.to_string().contains("PAPAYA"),
        "the respawned claude continues the conversation"
    );
    let sent = rig.api.wait_sent(1, PATIENCE).unwrap();
    rig.status_since("respawn → end of turn", &id, "waiting for input", sent);
    // A reboot: the monitor and the tmux server die together; a new server; restore.
    rig.stop_monitor();
    rig.env.tmux.ok(&["kill-server"]);
    common::wait_for("the old server to exit", 10, || {
        !rig.env.tmux.tmux(&["list-sessions"]).status.success()
    });
    let mut server = Command::new("tmux");
    server
        .args([
            "-L",
            &rig.env.tmux.socket,
            "-f",
            rig.env.tmux.conf.to_str().unwrap(),
            "new-session",
            "-d",
            "-s",
            "keepalive",
        ])
        .env("PATH", &rig.env.path)
        .env_remove("TMUX");
    for (k, v) in &rig.env.extra {
        server.env(k, v);
    }
    common::wait_for("a new tmux server", 10, || {
        server.output().map(|o| o.status.success()).unwrap_or(false)
    });
    let restored = rig.env.ok(&["restore", "--yes"]);
    assert_eq!(
        restored["restored"].as_array().unwrap().len(),
        1,
        "{restored}"
    );
    assert_resumed(&rig, &id, &conv);
    rig.wait_turns(&id, 3);
    assert!(rig.api.turns()[2].body.to_string().contains("PAPAYA"));
    let sent = rig.api.wait_sent(2, PATIENCE).unwrap();
    // Without a monitor the hooks alone keep the status line right.
    rig.status_since(
        "restore → end of turn (hooks only)",
        &id,
        "waiting for input",
        sent,
    );
}

#[test]
fn a_killed_claude_is_dead_and_respawn_resumes_it() {
    if !claude_installed() {
        return;
    }
    let rig = claude(
        "kill",
        Home::SET_UP,
        vec![
            Reply::text("Remember the word MANGO."),
            Reply::text("Back again."),
        ],
    );
    let id = rig.create("real/kill", "Remember a word");
    let conv = rig.conversation(&id);
    let sent = rig.api.wait_sent(0, PATIENCE).unwrap();
    rig.status_since("end of turn", &id, "waiting for input", sent);
    let pid = rig.pane_pid(&id);
    let killed = Instant::now();
    Command::new("kill").args(["-9", &pid]).status().unwrap();
    rig.status_since("kill -9", &id, "killed (signal 9)", killed);
    let t = rig.wait_task("the death to be handled", &id, |t| {
        t["agent"]["escalated"].is_object()
    });
    assert_eq!(t["agent"]["state"], "dead", "{t}");
    assert!(
        t["agent"]["detail"]
            .as_str()
            .unwrap()
            .contains("killed by signal 9"),
        "{t}"
    );
    assert_eq!(t["crash_count"], 1, "{t}");
    // SIGKILL may cut claude off before it saved its conversation (it writes its
    // transcript lazily): respawn resumes what was saved, or starts a new conversation
    // rather than a `--resume` that would exit at once ("No conversation found").
    rig.env.ok(&["task", "respawn", &id]);
    let now = rig.conversation(&id);
    rig.wait_turns(&id, 2);
    let messages = rig.api.turns()[1].body["messages"]
        .as_array()
        .unwrap()
        .len();
    if now == conv {
        assert_resumed(&rig, &id, &conv);
        assert!(messages > 1, "a resumed conversation carries its history");
    } else {
        let argv = rig.agent_argv(&id);
        assert!(
            argv.windows(2)
                .any(|w| w[0] == "--session-id" && w[1] == now),
            "{argv:?}"
        );
        assert!(
            argv.contains(&"--dangerously-skip-permissions".to_string()),
            "{argv:?}"
        );
    }
    let sent = rig.api.wait_sent(1, PATIENCE).unwrap();
    rig.status_since(
        "kill → respawn → end of turn",
        &id,
        "waiting for input",
        sent,
    );
}

/// A first-run screen: the status line says blocked and why, `task explain` says what to
/// do, and through several monitor passes no keystroke reaches claude (the screen stays,
/// claude stays alive: Escape or Enter there would have made it exit).
fn blocked_by(
    test: &'static str,
    home: Home,
    label: &str,
    on_screen: &str,
    advice: &str,
) -> (Rig, String) {
    let rig = claude(test, home, vec![Reply::text("Hello.")]);
    let id = rig.create(&format!("real/{test}"), "Say hello");
    let started = rig.screen_shows(&id, on_screen);
    rig.status_since(
        &format!("first run: {label}"),
        &id,
        &format!("blocked: {label}"),
        started,
    );
    // Something that must NOT happen: for 3 s (several monitor passes), every look finds
    // the dialog still up, claude alive and nothing sent.
    common::holds_for("the first-run screen, untouched", GRACES, || {
        rig.screen(&id).contains(on_screen)
            && rig.task(&id)["session"]["state"] == "live"
            && rig.api.turns().is_empty()
    });
    let t = rig.task(&id);
    assert_eq!(t["agent"]["state"], "blocked", "{t}");
    assert_eq!(t["session"]["state"], "live", "{t}");
    assert!(rig.screen(&id).contains(on_screen), "{}", rig.screen(&id));
    assert_eq!(rig.api.turns().len(), 0);
    assert_eq!(rig.history(&id, "agent.escalated").len(), 1, "{t}");
    assert!(rig.history(&id, "agent.nudged").is_empty());
    let explain = rig.text(&["task", "explain", &id]);
    assert!(explain.contains(advice), "{explain}");
    (rig, id)
}

#[test]
fn first_run_onboarding_is_blocked_not_answered() {
    if !claude_installed() {
        return;
    }
    blocked_by(
        "onboarding",
        Home {
            onboarded: false,
            key_approved: true,
            trusted: true,
        },
        "first-run setup",
        "Choose the text style",
        "finish it once",
    );
}

#[test]
fn first_run_api_key_confirmation_is_blocked_not_answered() {
    if !claude_installed() {
        return;
    }
    blocked_by(
        "apikey",
        Home {
            onboarded: true,
            key_approved: false,
            trusted: true,
        },
        "API key",
        "Do you want to use this API key?",
        "choose Yes",
    );
}

#[test]
fn an_untrusted_repository_is_blocked_and_doctor_says_how_to_trust_it() {
    if !claude_installed() {
        return;
    }
    let home = Home {
        onboarded: true,
        key_approved: true,
        trusted: false,
    };
    let doctor = {
        // Before anything runs: doctor names the missing trust.
        let probe = claude("doctor-probe", home, vec![]);
        probe.env.ok(&["doctor", "--harness", "claude"])
    };
    assert_eq!(doctor["ok"], false, "{doctor}");
    let trust = doctor["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "trust")
        .unwrap()
        .clone();
    assert_eq!(trust["ok"], false, "{doctor}");
    assert!(trust["fix"]
        .as_str()
        .unwrap()
        .contains("orange doctor --trust"));
    let (rig, id) = blocked_by(
        "trust",
        home,
        "folder trust",
        "Yes, I trust this folder",
        "orange doctor --trust",
    );
    // The person answers the dialog (its default is "No, exit": Down, then Enter once the
    // selection moved).
    let before = rig.screen(&id);
    rig.env
        .tmux
        .ok(&["send-keys", "-t", &rig.pane(&id), "Down"]);
    common::wait_until("the selection to move", PATIENCE, || {
        rig.screen(&id) != before
    });
    rig.env
        .tmux
        .ok(&["send-keys", "-t", &rig.pane(&id), "Enter"]);
    rig.wait_turns(&id, 1);
    let sent = rig.api.wait_sent(0, PATIENCE).unwrap();
    rig.status_since(
        "trust answered → end of turn",
        &id,
        "waiting for input",
        sent,
    );
    assert!(rig.task(&id)["agent"].get("blocker").is_none());
}

#[test]
fn a_fresh_home_offline_exits_and_orange_says_why() {
    if !claude_installed() {
        return;
    }
    // Onboarding checks api.anthropic.com first (not the base URL): offline, claude exits 1.
    let rig = claude("fresh", Home::FRESH, vec![]);
    let id = rig.create("real/fresh", "Say hello");
    let started = rig.pane_dies(&id);
    rig.status_since("fresh HOME offline: exit", &id, "exited 1", started);
    let t = rig.wait_task("the death to be explained", &id, |t| {
        t["agent"]["blocker"] == "onboarding"
    });
    assert!(
        t["agent"]["last_lines"]
            .to_string()
            .contains("Unable to connect to Anthropic services"),
        "{t}"
    );
    assert_eq!(t["crash_count"], 0, "not a crash to retry: {t}");
    assert!(t["agent"]["escalated"].is_object(), "{t}");
    let explain = rig.text(&["task", "explain", &id]);
    assert!(
        explain.contains("approving the key there skips the connectivity check"),
        "{explain}"
    );
}

#[test]
fn as_root_without_is_sandbox_claude_refuses_and_orange_says_what_to_do() {
    if !claude_installed() {
        return;
    }
    if !is_root() {
        // Not root here: claude accepts the flag, and doctor agrees.
        let rig = claude("root", Home::SET_UP, vec![]);
        let d = rig.env.ok(&["doctor", "--harness", "claude"]);
        assert!(d.to_string().contains("not running as root"), "{d}");
        return;
    }
    let rig = claude_with("root", Home::SET_UP, vec![], &[], false);
    let d = rig.env.ok(&["doctor", "--harness", "claude"]);
    let root = d["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "root")
        .unwrap()
        .clone();
    assert_eq!(root["ok"], false, "{d}");
    let id = rig.create("real/root", "Say hello");
    let started = rig.pane_dies(&id);
    rig.status_since("root refusal", &id, "exited 1", started);
    let t = rig.wait_task("the refusal to be explained", &id, |t| {
        t["agent"]["blocker"] == "root_refusal"
    });
    assert_eq!(t["crash_count"], 0, "a refusal is not a crash: {t}");
    assert!(
        t["agent"]["detail"]
            .as_str()
            .unwrap()
            .contains("IS_SANDBOX=1"),
        "{t}"
    );
    let show = rig.text(&["task", "show", &id]);
    assert!(
        show.contains("cannot be used with root/sudo privileges"),
        "{show}"
    );
}

#[test]
fn a_rejected_api_key_is_an_unauthorized_error_with_claudes_advice() {
    if !claude_installed() {
        return;
    }
    let rig = claude("login", Home::SET_UP, vec![Reply::text("Hello.")]);
    // The person once answered "No" to "Use this API key?": claude then answers every
    // prompt with "Not logged in · Please run /login" (a StopFailure) and sends nothing.
    let home = rig
        .env
        .extra
        .iter()
        .find(|(k, _)| k == "HOME")
        .map(|(_, v)| PathBuf::from(v))
        .unwrap();
    let path = home.join(".claude.json");
    let mut cfg: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let tail = &KEY[KEY.len() - 20..];
    cfg["customApiKeyResponses"] = json!({"approved": [], "rejected": [tail]});
    std::fs::write(&path, serde_json::to_vec_pretty(&cfg).unwrap()).unwrap();
    let id = rig.create("real/login", "Say hello");
    let started = rig.screen_shows(&id, "Not logged in");
    rig.status_since(
        "rejected key: not logged in",
        &id,
        "error: unauthorized",
        started,
    );
    let t = rig.wait_task("the error to be handled", &id, |t| {
        t["agent"]["escalated"].is_object()
    });
    assert!(
        t["agent"]["detail"]
            .as_str()
            .unwrap()
            .contains("Please run /login"),
        "claude's own advice is the detail: {t}"
    );
    // Escalated, and the status line still says what is wrong.
    assert!(rig.status_line(&id).contains("error: unauthorized"));
    assert_eq!(rig.api.turns().len(), 0);
    assert!(rig.history(&id, "agent.nudged").is_empty());
}

#[test]
fn a_turn_the_person_cuts_short_with_escape_is_waiting() {
    if !claude_installed() {
        return;
    }
    let rig = claude(
        "esc",
        Home::SET_UP,
        vec![Reply::slow(
            Duration::from_secs(60),
            Reply::text("too late"),
        )],
    );
    let id = rig.create("real/esc", "Take your time");
    rig.wait_turns(&id, 1);
    rig.status_since("slow reply in flight", &id, "working", Instant::now());
    // Claude itself counts the turn as running (what Escape then cuts short).
    common::wait_until("claude's session file to say busy", PATIENCE, || {
        claude_status(&rig, &id).as_deref() == Some("busy")
    });
    // The person presses Escape while the request waits: claude drops the turn. No hook
    // fires and the transcript ends on the prompt; only claude's session file says idle.
    let pressed = Instant::now();
    rig.env
        .tmux
        .ok(&["send-keys", "-t", &rig.pane(&id), "Escape"]);
    rig.status_since(
        "Esc while a request waits",
        &id,
        "waiting for input",
        pressed,
    );
    assert_eq!(rig.task(&id)["session"]["state"], "live");
}

/// Issue 13 with the real client: Claude Code runs in a task on a "remote host" (the rig's
/// home, tmux server and stand-in API, behind a real sshd on 127.0.0.1), started from this
/// machine's orange over ssh; what this machine's status shows follows what claude does
/// there, through the local monitor's one fetch per pass.
#[test]
fn a_remote_claude_started_over_ssh_is_seen_working_then_waiting_here() {
    if !claude_installed() {
        return;
    }
    let rig = claude(
        "remote",
        Home::SET_UP,
        vec![
            // Long enough for the passes here to see it while it is true (a pass is one
            // ssh call, well under a second).
            Reply::slow(
                Duration::from_secs(8),
                Reply::bash("echo remote > remote-was-here.txt"),
            ),
            Reply::text("Written."),
        ],
    );
    let local = TaskEnv::from_env(Env::with_repo("here"));
    let Some(sshd) = common::sshd::Sshd::start(&local.root()) else {
        return;
    };
    // The host's orange with the environment a person's remote profile would give it.
    let wrapper = local.root().join("orange-there");
    let mut script = String::from("#!/bin/sh\n");
    for (k, v) in &rig.env.extra {
        script.push_str(&format!("export {k}='{v}'\n"));
    }
    script.push_str(&format!(
        "export PATH='{}'\nexec '{}' \"$@\"\n",
        rig.env.path,
        common::bin().display()
    ));
    std::fs::write(&wrapper, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut add = sshd.host_add_args("box");
    add.extend([
        "--orange-bin".to_string(),
        wrapper.display().to_string(),
        "--remote-home".to_string(),
        rig.env.home.display().to_string(),
        "--remote-socket".to_string(),
        rig.env.tmux.socket.clone(),
    ]);
    local.ok(&add.iter().map(String::as_str).collect::<Vec<_>>());
    // The rig registered the repository there already: adopted, not added twice.
    let p = local.ok(&[
        "project",
        "add",
        "--host",
        "box",
        rig.env.repo.to_str().unwrap(),
    ]);
    assert_eq!(p["name"], "app", "{p}");
    let t = local.ok(&[
        "task",
        "create",
        "--project",
        "app",
        "real/remote",
        "Write remote-was-here.txt",
        "--harness",
        "claude",
    ]);
    assert_eq!(t["host"], "box", "{t}");
    let id = t["id"].as_str().unwrap().to_string();
    assert!(
        rig.api.wait_requests(1, PATIENCE),
        "claude never called the API"
    );
    // What this machine shows, from its own monitor passes (one ssh fetch each).
    let item_here = |want: &str| -> Value {
        let start = Instant::now();
        loop {
            local.ok(&["monitor", "--once"]);
            let st = local.ok(&["status", "--format", "json"]);
            let item = st["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|i| i["id"] == id.as_str())
                .cloned()
                .unwrap_or(Value::Null);
            if item["reason"].as_str().is_some_and(|r| r.contains(want)) {
                return item;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "waited for {want:?} here: {st}\nthere: {}\nscreen:\n{}",
                rig.task(&id),
                rig.screen(&id)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let working = item_here("working");
    assert_eq!(working["host"], "box", "{working}");
    assert_eq!(working["bucket"], "working");
    assert!(
        rig.api.sent_at(0).is_none(),
        "the slow reply was already sent"
    );
    rig.api
        .wait_sent(1, PATIENCE)
        .expect("the final text was sent");
    let waiting = item_here("waiting for input");
    assert_eq!(waiting["bucket"], "waiting", "{waiting}");
    // What claude really did, there: the tool ran in the task's worktree there.
    let ws = rig.workspace(&id);
    assert_eq!(
        std::fs::read_to_string(ws.join("remote-was-here.txt")).unwrap_or_default(),
        "remote\n"
    );
    // And the person here sees it in task list --all with its host.
    let all = local.ok(&["task", "list", "--all"]);
    let mine = all
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] == id.as_str())
        .unwrap();
    assert_eq!(mine["host"], "box", "{all}");
}

/// The real claude under `--sandbox bwrap`: it runs (as root too: orange tells
/// it it is sandboxed, which the test's own environment does not), its Bash tool works in
/// its worktree and cannot write $HOME, its hooks reach orange (the state comes from a
/// hook), and its own state (`~/.claude`, `~/.claude.json`) is written for real.
#[test]
fn a_sandboxed_claude_works_in_its_worktree_and_its_hooks_reach_orange() {
    if !claude_installed() || !crate::sandbox::bwrap_usable() {
        return;
    }
    let rig = claude_with(
        "sandbox",
        Home::SET_UP,
        vec![
            Reply::bash(
                "echo inside > sandboxed.txt; echo x > \"$HOME/notes/escaped.txt\"; echo rc=$?",
            ),
            Reply::text("Done, in the sandbox."),
        ],
        &[],
        // No IS_SANDBOX from here: as root, claude would refuse to start without it.
        false,
    );
    let home = rig.env.root().join("claude-home");
    std::fs::create_dir_all(home.join("notes")).unwrap();
    let config_before = std::fs::read_to_string(home.join(".claude.json")).unwrap();
    let v = rig.env.ok(&[
        "task",
        "create",
        "real/sandbox",
        "Write sandboxed.txt",
        "--harness",
        "claude",
        "--sandbox",
        "bwrap",
    ]);
    let id = v["id"].as_str().unwrap().to_string();
    assert_eq!(v["sandbox"], "bwrap", "{v}");
    assert_eq!(rig.agent_argv(&id)[4], "bwrap");
    rig.wait_turns(&id, 2);
    let sent = rig
        .api
        .wait_sent(1, PATIENCE)
        .expect("the final text was sent");
    rig.status_since("end of a sandboxed turn", &id, "waiting for input", sent);
    let t = rig.wait_task("a hook from inside the sandbox", &id, |t| {
        t["agent"]["state"] == "waiting" && t["agent"]["signal"] == "hook"
    });
    assert_eq!(t["sandbox"], "bwrap", "{t}");
    // What the agent really did.
    let ws = rig.workspace(&id);
    assert_eq!(
        std::fs::read_to_string(ws.join("sandboxed.txt")).unwrap_or_default(),
        "inside\n"
    );
    assert!(!home.join("notes/escaped.txt").exists());
    let result = rig.api.turns()[1].tool_results()[0].to_string();
    assert!(result.contains("Read-only file system"), "{result}");
    assert!(result.contains("rc=1"), "{result}");
    // Its own state was written where it lives: the conversation, and ~/.claude.json.
    let conv = rig.conversation(&id);
    let transcripts = walk(&home.join(".claude/projects"));
    assert!(
        transcripts
            .iter()
            .any(|p| p.ends_with(format!("{conv}.jsonl"))),
        "{transcripts:?}"
    );
    let config_after = std::fs::read_to_string(home.join(".claude.json")).unwrap();
    assert_ne!(
        config_before, config_after,
        "claude could not write ~/.claude.json"
    );
    serde_json::from_str::<Value>(&config_after).expect("~/.claude.json is still JSON");
}

/// Issue 14: token use from Claude Code's own transcript. One answer of two content blocks
/// (a text, then a tool call: two transcript lines with the same message id and usage)
/// and a final text: `task show` counts each answer once with its last usage, and
/// `orange status` sums the open tasks; a harness that reports nothing is unknown.
#[test]
fn token_use_is_what_the_api_reported_once_per_answer() {
    if !claude_installed() {
        return;
    }
    use common::standin::{CACHE_CREATION_TOKENS, CACHE_READ_TOKENS, INPUT_TOKENS, OUTPUT_TOKENS};
    // A project name with `_` (its workspaces `my_app--N`): Claude Code names the
    // transcript's directory with every such character as `-`.
    let rig = claude_in_repo(
        "tokens",
        "my_app",
        Home::SET_UP,
        vec![
            Reply::say_then_bash("I will write the file.", "echo tokens > tokens.txt"),
            Reply::text("Written. The task is done."),
        ],
        &[],
        is_root(),
    );
    std::fs::write(
        rig.env.home.join("config.toml"),
        "[harness.quiet]\ncommand = \": {prompt}; sleep 600\"\n",
    )
    .unwrap();
    let id = rig.create("real/tokens", "Write tokens.txt");
    let quiet = rig.env.ok(&[
        "task",
        "create",
        "real/quiet",
        "Nothing",
        "--harness",
        "quiet",
    ]);
    let quiet = id_of(&quiet).to_string();
    rig.api
        .wait_sent(1, PATIENCE)
        .expect("the final text was sent");
    rig.status_shows("end of turn", &id, "waiting for input");
    let answers = rig.api.turns().len() as u64;
    assert_eq!(answers, 2, "two answers, as scripted");
    let expected = json!({
        "input": answers * INPUT_TOKENS,
        "output": answers * OUTPUT_TOKENS,
        "cache_creation": answers * CACHE_CREATION_TOKENS,
        "cache_read": answers * CACHE_READ_TOKENS,
    });
    let conv = rig.conversation(&id);
    let log = orange::orchestration::agent::claude_log_path_in(
        &rig.env.root().join("claude-home/.claude"),
        &rig.workspace(&id),
        &conv,
    );
    // The first answer is two lines of one message: counted once. Claude may write its
    // last line after its Stop hook told the end of the turn: waited for.
    let mut transcript = String::new();
    let answer_lines = |t: &str| {
        t.lines()
            .filter(|l| l.contains("\"type\":\"assistant\"") && l.contains("msg_standin_"))
            .count()
    };
    let written = common::poll(PATIENCE, || {
        transcript = std::fs::read_to_string(&log).unwrap_or_default();
        (answer_lines(&transcript) >= 3).then_some(())
    });
    assert!(
        written.is_some(),
        "two lines for the first answer, one for the second:\n{transcript}"
    );
    let t = rig.wait_task("the tokens of both answers", &id, |t| {
        t["tokens"] == expected
    });
    assert_eq!(t["tokens"], expected, "{t}\ntranscript:\n{transcript}");
    let shown = rig.text(&["task", "show", &id]);
    assert!(
        shown.contains("tokens: 42 in (6 cached) · 10 out"),
        "{shown}"
    );
    // The harness that reports nothing: unknown, never zero.
    let q = rig.task(&quiet);
    assert!(q["tokens"].is_null(), "{q}");
    let shown = rig.text(&["task", "show", &quiet]);
    assert!(
        shown.contains("tokens: unknown (quiet does not report them)"),
        "{shown}"
    );
    let list = rig.env.ok(&["task", "list"]);
    let of = |tid: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|x| x["id"] == tid)
            .map(|x| x["tokens"].clone())
            .unwrap()
    };
    assert_eq!(of(&id), expected, "{list}");
    assert!(of(&quiet).is_null(), "{list}");
    // The status sums the open tasks' tokens and counts the unknown ones.
    let status = rig.env.ok(&["status", "--format", "json"]);
    let mut sum = expected.clone();
    sum["tasks"] = json!(1);
    sum["unknown"] = json!(1);
    assert_eq!(status["tokens"], sum, "{status}");
}

/// Issue 14: a sub-agent's answers (Claude Code 2.1 writes its transcript apart, under
/// `<conversation>/subagents/agent-*.jsonl`) count in its task's tokens too.
#[test]
fn a_sub_agents_tokens_count_in_its_task() {
    if !claude_installed() {
        return;
    }
    use common::standin::{CACHE_CREATION_TOKENS, CACHE_READ_TOKENS, INPUT_TOKENS, OUTPUT_TOKENS};
    // Claude Code 2.1.330 runs the sub-agent in the background: the main agent answers the
    // launch (turn 2) while the sub-agent asks (turn 2 or 3), and answers its notification
    // (turn 4). Which text goes to which does not matter here: every answer counts once.
    let rig = claude(
        "subagent-tokens",
        Home::SET_UP,
        vec![
            Reply::tool(
                "Agent",
                json!({"description": "Look around", "prompt": "Say hello.", "subagent_type": "general-purpose"}),
            ),
            Reply::text("Waiting for the sub-agent."),
            Reply::text("Hello."),
            Reply::text("The sub-agent said hello. Done."),
        ],
    );
    let id = rig.create("real/subagent", "Ask a sub-agent");
    rig.api
        .wait_sent(3, PATIENCE)
        .expect("four answers were sent");
    let expected = |answers: u64| {
        json!({
            "input": answers * INPUT_TOKENS,
            "output": answers * OUTPUT_TOKENS,
            "cache_creation": answers * CACHE_CREATION_TOKENS,
            "cache_read": answers * CACHE_READ_TOKENS,
        })
    };
    let t = rig.wait_task("the tokens of every answer", &id, |t| {
        t["tokens"] == expected(rig.api.turns().len() as u64)
    });
    let turns = rig.api.turns();
    assert_eq!(t["tokens"], expected(turns.len() as u64), "{t}");
    assert_eq!(turns.iter().filter(|r| r.is_subagent()).count(), 1);
    // Where they were: the sub-agent's answer in its own transcript.
    let conv = rig.conversation(&id);
    let dir = rig.env.root().join("claude-home/.claude/projects").join(
        rig.workspace(&id)
            .canonicalize()
            .unwrap()
            .to_string_lossy()
            .replace(['/', '.'], "-"),
    );
    let sub: Vec<PathBuf> = walk(&dir.join(&conv).join("subagents"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(sub.len(), 1, "{:?}", walk(&dir));
    let text = std::fs::read_to_string(&sub[0]).unwrap();
    assert!(
        text.lines()
            .any(|l| l.contains("\"isSidechain\":true") && l.contains("\"usage\"")),
        "{text}"
    );
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Is `pid` running (not gone, not a zombie)?
fn process_runs(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        let state = s[s.rfind(')').unwrap_or(0) + 1..]
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_string();
        state != "Z" && state != "X"
    })
}

/// Issue 24: `task send` reaches the real Claude Code as ONE turn whose text is exactly
/// the message (several lines, quotes, substitutions, a control character removed); one
/// sent while claude works is held and typed in by the monitor when its turn ends, as a
/// turn of its own; `task respawn --force` stops the running claude and resumes its
/// conversation.
#[test]
fn task_send_reaches_claude_as_one_turn_and_respawn_force_resumes_it() {
    if !claude_installed() {
        return;
    }
    let rig = claude(
        "send",
        Home::SET_UP,
        vec![
            Reply::text("Ready. The word is KIWI."),
            Reply::slow(Duration::from_secs(8), Reply::text("Noted both lines.")),
            Reply::text("Noted PEAR."),
            Reply::text("Back after the restart."),
        ],
    );
    let id = rig.create("real/send", "Remember a word");
    let conv = rig.conversation(&id);
    let sent = rig.api.wait_sent(0, PATIENCE).unwrap();
    rig.status_since("end of turn", &id, "waiting for input", sent);
    let message = "Two lines for you:\nfirst \"quoted\" $(not run) `nor this` #{session_name} 100%%\x1b[31m\nsecond; the end";
    let v = rig.env.ok(&["task", "send", &id, message]);
    // (Seen twice, in a soak and in a whole suite: held, the agent "working" right after
    // the status line said waiting, and its Stop hook ~0.1 s later. What orange knew then
    // is printed — the raw agent record first, read at once: which hook, which signal —
    // and what the stand-in was asked, to find which signal said so.)
    let knew = || {
        let dir = rig.env.home.join(format!("tasks/app/{id}"));
        let info = std::fs::read_to_string(orange::orchestration::agent::info_path(&dir));
        let asked: Vec<String> = rig.api.turns().iter().map(|t| t.last_user_text()).collect();
        format!(
            "{v}\nagent.json: {}\nthe stand-in was asked: {asked:?}\ntask: {}\ntranscript tail: {:?}",
            info.unwrap_or_default(),
            rig.task(&id),
            std::fs::read_to_string(orange::orchestration::agent::claude_log_path_in(
                &rig.env.root().join("claude-home/.claude"),
                &rig.workspace(&id),
                &conv,
            ))
            .unwrap_or_default()
            .lines()
            .rev()
            .take(4)
            .collect::<Vec<_>>()
        )
    };
    assert_eq!(v["outcome"], "sent", "{}", knew());
    assert_eq!(v["agent_state"], "waiting", "{}", knew());
    rig.wait_turns(&id, 2);
    let want = "Two lines for you:\nfirst \"quoted\" $(not run) `nor this` #{session_name} 100%%[31m\nsecond; the end";
    let got = rig.api.turns()[1].last_user_text();
    assert!(got.contains(want), "the turn's text: {got:?}");
    // While that turn works (its reply is slow), a second message is held…
    rig.wait_task("the turn to be working", &id, |t| {
        t["agent"]["state"] == "working"
    });
    let v = rig.env.ok(&["task", "send", &id, "One more note: PEAR."]);
    assert_eq!(v["outcome"], "held", "{v}");
    assert_eq!(rig.api.turns().len(), 2);
    // … and the monitor types it in when the turn ends: a turn of its own.
    rig.wait_turns(&id, 3);
    let got = rig.api.turns()[2].last_user_text();
    assert!(got.contains("One more note: PEAR."), "{got:?}");
    assert!(!got.contains("Two lines"), "{got:?}");
    let sent = rig.api.wait_sent(2, PATIENCE).unwrap();
    rig.status_since("held message → end of turn", &id, "waiting for input", sent);
    common::holds_for("no turn per line, none twice", GRACES, || {
        rig.api.turns().len() == 3
    });
    assert!(rig.task(&id).get("held").is_none());
    // respawn --force: the running claude is stopped, its conversation resumed.
    let old = rig.pane_pid(&id);
    let v = rig.env.ok(&[
        "task", "respawn", &id, "--force", "--yes", "--reason", "testing",
    ]);
    assert_eq!(v["forced"], true, "{v}");
    assert!(!process_runs(&old), "claude {old} still runs: {v}");
    assert_resumed(&rig, &id, &conv);
    rig.wait_turns(&id, 4);
    let turn = &rig.api.turns()[3];
    let body = turn.body.to_string();
    assert!(body.contains("KIWI") && body.contains("PEAR"), "{body}");
    assert!(
        turn.last_user_text().contains("restarted by hand: testing"),
        "{}",
        turn.last_user_text()
    );
    let sent = rig.api.wait_sent(3, PATIENCE).unwrap();
    rig.status_since(
        "respawn --force → end of turn",
        &id,
        "waiting for input",
        sent,
    );
}

/// Claude Code's agent teams (`CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1`, `teammateMode:
/// "tmux"`): the lead's Agent call with a `name` splits the task's window and starts the
/// teammate there. The teammate shows under the task with its state; what orange types
/// goes to the lead, even with the teammate's pane active.
#[test]
fn a_real_teammate_shows_under_its_task_and_keystrokes_reach_only_the_lead() {
    if !claude_installed() {
        return;
    }
    let rig = claude_with(
        "teams",
        Home::SET_UP,
        vec![
            Reply::tool(
                "Agent",
                json!({"description": "research it", "name": "researcher", "prompt": "Look around and report.", "subagent_type": "general-purpose"}),
            ),
            Reply::text("On it."),
            Reply::text("Reported."),
            Reply::text("Hello back."),
        ],
        &[("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS", "1")],
        is_root(),
    );
    let home = PathBuf::from(&rig.env.extra.iter().find(|(k, _)| k == "HOME").unwrap().1);
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::write(
        home.join(".claude/settings.json"),
        r#"{"teammateMode":"tmux"}"#,
    )
    .unwrap();
    let id = rig.create("real/teams", "Research with a teammate");
    let lead = rig.pane(&id);
    let conv = rig.conversation(&id);
    let t = rig.wait_task("a teammate row", &id, |t| {
        t["teammates"].as_array().is_some_and(|a| !a.is_empty())
    });
    let mate = t["teammates"][0].clone();
    let mate_pane = mate["pane_id"].as_str().unwrap().to_string();
    assert_ne!(mate_pane, lead, "{t}");
    assert!(!mate["name"].as_str().unwrap_or("").is_empty(), "{t}");
    // claude split the lead's own window.
    let window = |p: &str| rig.env.tmux.ok(&["display", "-p", "-t", p, "#{window_id}"]);
    assert_eq!(window(&mate_pane), window(&lead));
    assert_eq!(rig.pane(&id), lead, "still bound to the lead pane");
    // Both turns end (the lead's and the teammate's): three turns sent.
    rig.wait_turns(&id, 3);
    let t = rig.wait_task("the lead and its teammate waiting", &id, |t| {
        t["agent"]["state"] == "waiting" && t["teammates"][0]["state"] == "waiting"
    });
    let show = rig.text(&["task", "show", &id]);
    assert!(show.contains("teammates ("), "{show}\n{t}");
    // The teammate's pane is the active one: task send still types into the lead.
    rig.env.tmux.ok(&["select-pane", "-t", &mate_pane]);
    let sent = rig.env.ok(&["task", "send", &id, "hello lead"]);
    assert_eq!(sent["outcome"], "sent", "{sent}");
    assert!(
        rig.api.wait_until(PATIENCE, |reqs| reqs
            .iter()
            .any(|r| r.last_user_text().contains("hello lead"))),
        "the message was never sent to the API"
    );
    let got: Vec<_> = rig
        .api
        .turns()
        .into_iter()
        .filter(|r| r.last_user_text().contains("hello lead"))
        .collect();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].session_id(), Some(conv.as_str()), "the lead got it");
}
