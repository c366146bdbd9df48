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

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::responses_standin::{Reply, ResponsesStandIn};
use common::{record, strip_styles, Env, TaskEnv};
use serde_json::Value;

/// A bound on waiting for a moment (never a timing assertion).
const PATIENCE: Duration = Duration::from_secs(90);
/// Long enough that a slow answer lasts until the test releases it.
const HELD: Duration = Duration::from_secs(600);

/// One real codex at a time (each takes a second of CPU to start; the suite runs beside).
static CODEX_SLOT: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn codex_installed() -> bool {
    let found = common::find_program(&std::env::var("PATH").unwrap_or_default(), "codex");
    common::require(
        "codex",
        found.is_some(),
        "these tests drive the real codex (npm)",
    )
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

struct Rig {
    _slot: std::sync::MutexGuard<'static, ()>,
    env: TaskEnv,
    api: ResponsesStandIn,
    monitor: Option<Child>,
    codex_home: PathBuf,
    test: &'static str,
}

impl Drop for Rig {
    fn drop(&mut self) {
        if let Some(mut m) = self.monitor.take() {
            let _ = m.kill();
            let _ = m.wait();
        }
    }
}

impl Rig {
    fn new(test: &'static str, home: Home, script: Vec<Reply>) -> Rig {
        let slot = CODEX_SLOT.lock().unwrap_or_else(|e| e.into_inner());
        let env = Env::with_repo("app");
        let user_home = env.root().join("codex-user");
        let codex_home = user_home.join(".codex");
        std::fs::create_dir_all(&codex_home).unwrap();
        let api = ResponsesStandIn::start(script);
        let mut config = String::from(
            "check_for_update_on_startup = false\n\n[analytics]\nenabled = false\n\n[features]\nplugins = false\nremote_plugin = false\napps = false\nin_app_updates = false\ndaemon_auto_start = false\n",
        );
        if home != Home::Fresh {
            config = format!(
                "model = \"stub-model\"\nmodel_provider = \"stub\"\n{config}\n[model_providers.stub]\nname = \"stub\"\nbase_url = \"{}\"\nwire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 2\n",
                api.base_url()
            );
        }
        std::fs::write(codex_home.join("config.toml"), config).unwrap();
        let extra: Vec<(&str, String)> = vec![
            ("HOME", user_home.display().to_string()),
            ("CODEX_HOME", codex_home.display().to_string()),
            ("NO_PROXY", "127.0.0.1,localhost".into()),
            ("no_proxy", "127.0.0.1,localhost".into()),
        ];
        let env = TaskEnv::real(env, &extra);
        for k in ["OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY"] {
            let _ = env.tmux.tmux(&["set-environment", "-g", "-u", k]);
        }
        env.add_project(&[]);
        if home == Home::SetUp {
            // What a person does once per repository: orange records the trust, and says
            // where.
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
        let monitor = env
            .cmd_in(&env.repo, &["monitor", "--interval", "500ms"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Rig {
            _slot: slot,
            env,
            api,
            monitor: Some(monitor),
            codex_home,
            test,
        }
    }

    fn create(&self, branch: &str, summary: &str, more: &[&str]) -> String {
        let mut args = vec!["task", "create", branch, summary, "--harness", "codex"];
        args.extend(more);
        let v = self.env.ok(&args);
        v["id"].as_str().unwrap().to_string()
    }

    fn task(&self, id: &str) -> Value {
        self.env.task(id)
    }

    fn pane(&self, id: &str) -> String {
        self.task(id)["tmux_pane_id"].as_str().unwrap().to_string()
    }

    fn screen(&self, id: &str) -> String {
        self.env
            .tmux
            .ok(&["capture-pane", "-p", "-J", "-t", &self.pane(id)])
    }

    /// What the status line shows for the task's session (`@orange_status`), unstyled.
    fn status_line(&self, id: &str) -> String {
        let sid = self.task(id)["tmux_session_id"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let out = self
            .env
            .tmux
            .tmux(&["show-options", "-qv", "-t", &sid, "@orange_status"]);
        strip_styles(&String::from_utf8_lossy(&out.stdout))
    }

    /// `orange task explain ID` as a person reads it.
    fn explain(&self, id: &str) -> String {
        let out = self
            .env
            .cmd_in(&self.env.repo, &["task", "explain", id])
            .env_remove("ORANGE_JSON")
            .output()
            .unwrap();
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }

    /// Wait until the status line shows `needle` and `task show` agrees (`pred`); the
    /// task as then seen.
    fn wait_moment(
        &self,
        moment: &str,
        id: &str,
        needle: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        self.wait_moment_since(moment, id, needle, None, pred)
    }

    /// [`Rig::wait_moment`]; with `since` (when it became true), how long the status line
    /// took to show it goes to `$ORANGE_LATENCY_LOG` (the docs' table; never asserted).
    fn wait_moment_since(
        &self,
        moment: &str,
        id: &str,
        needle: &str,
        since: Option<Instant>,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let start = Instant::now();
        let mut shown: Option<Instant> = None;
        loop {
            let line = self.status_line(id);
            if line.contains(needle) {
                shown.get_or_insert_with(Instant::now);
            }
            let t = self.task(id);
            if line.contains(needle) && pred(&t) {
                if let (Some(since), Some(shown)) = (since, shown) {
                    record(self.test, moment, &line, shown.duration_since(since));
                }
                return t;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "[{}] {moment}: the status line never showed {needle:?} with task show agreeing (last: {line:?}); task: {t}\nscreen:\n{}",
                self.test,
                self.screen(id)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn wait_turns(&self, id: &str, n: usize) {
        assert!(
            self.api.wait_turns(n, PATIENCE),
            "[{}] codex sent {} turn(s), not {n}; task: {}\nscreen:\n{}",
            self.test,
            self.api.turns().len(),
            self.task(id),
            self.screen(id)
        );
    }

    fn workspace(&self, id: &str) -> PathBuf {
        self.env
            .ws_path(self.task(id)["workspace"].as_str().unwrap())
    }

    /// The command line of the pane's process (codex itself).
    fn agent_argv(&self, id: &str) -> Vec<String> {
        let pid = self.agent_pid(id);
        let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        raw.split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect()
    }

    fn agent_pid(&self, id: &str) -> String {
        self.env
            .tmux
            .ok(&["display", "-p", "-t", &self.pane(id), "#{pane_pid}"])
    }
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
    let rig = Rig::new(
        "codex_works",
        Home::SetUp,
        vec![
            Reply::exec("printf edited > codex-was-here.txt"),
            Reply::slow(HELD, Reply::text("All done: the file is there.")),
        ],
    );
    let summary = "--version is not an option: write codex-was-here.txt";
    let id = rig.create("codex/works", summary, &[]);
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
    let t = rig.wait_moment_since(
        "end of turn",
        &id,
        "waiting for input",
        Some(released),
        |t| agent_is(t, "waiting"),
    );
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
    let t = rig.wait_moment_since("/exit", &id, "exited", Some(exited), |t| {
        agent_is(t, "dead")
    });
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
    let pid = rig.agent_pid(&id);
    let killed = Instant::now();
    Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .status()
        .unwrap();
    // Its first end without an outcome (the /exit was no crash): a crash, not stuck yet;
    // the agent dead by signal 9.
    let t = rig.wait_moment_since("kill -9", &id, "killed", Some(killed), |t| {
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
    let rig = Rig::new("codex_errors", Home::SetUp, script);
    let id = rig.create("codex/errors", "say hello", &[]);
    rig.wait_turns(&id, 2);
    let retried = rig.api.turns()[1].at;
    let t = rig.wait_moment_since("retrying", &id, "retrying", Some(retried), |t| {
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
    record(
        rig.test,
        "gave up (from its last request; upper bound)",
        "error: overloaded",
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
    let rig = Rig::new(
        "codex_headless",
        Home::SetUp,
        vec![
            Reply::exec("printf headless > headless.txt"),
            Reply::text("Finished."),
        ],
    );
    let id = rig.create("codex/headless", "write headless.txt", &["--headless"]);
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
    let rig = Rig::new("codex_trust", Home::Untrusted, vec![]);
    let id = rig.create("codex/trust", "say hello", &[]);
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
        Some(rig.codex_home.join("config.toml").to_str().unwrap()),
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
    let rig = Rig::new("codex_login", Home::Fresh, vec![]);
    // Trust alone (no provider): the login screen comes first.
    rig.env.ok(&["doctor", "--harness", "codex", "--trust"]);
    let id = rig.create("codex/login", "say hello", &[]);
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
    let rig = Rig::new(
        "codex_clear",
        Home::SetUp,
        vec![
            Reply::text("First answer."),
            Reply::slow(HELD, Reply::text("Second answer.")),
        ],
    );
    let id = rig.create("codex/clear", "say hello", &[]);
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
    let rig = Rig::new(
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
    let id = rig.create("codex/approve", "write approved.txt", &[]);
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
    let t = rig.wait_moment("approval prompt", &id, "blocked: approval", |t| {
        agent_is(t, "blocked")
    });
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
    let rig = Rig::new(
        "codex_sandbox",
        Home::SetUp,
        vec![Reply::text("First answer."), Reply::text("Resumed answer.")],
    );
    let id = rig.create("codex/sandbox", "say hello", &["--sandbox", "bwrap"]);
    assert_eq!(rig.agent_argv(&id)[0], "bwrap");
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
    assert_eq!(argv[0], "bwrap", "{argv:?}");
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
