//! The real pi (0.73.1) driven through orange, interactive, against the stand-in Chat
//! Completions API on 127.0.0.1 (tests/common/chat_standin.rs), on a private tmux server with
//! a monitor running. At each moment the status line (`@orange_status`, what a person sees),
//! `task show --json` and `task explain` are checked against what is true.
//!
//! pi's own channel is orange's extension (`-e`, in the task's agent directory): it runs
//! `orange hook agent EVENT` for pi's session, input, agent, turn, message and tool events.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::chat_standin::{self, ChatStandIn, Reply};
use common::{Env, TaskEnv};
use serde_json::{json, Value};

/// A bound on a hang, not a measure: pi takes seconds to start on this 2-core machine.
const PATIENCE: Duration = Duration::from_secs(90);

/// One real pi at a time (they are slow to start; see other_harnesses.rs).
static SLOT: std::sync::Mutex<()> = std::sync::Mutex::new(());

struct Rig {
    _slot: std::sync::MutexGuard<'static, ()>,
    env: TaskEnv,
    api: ChatStandIn,
    monitor: Option<Child>,
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

fn pi_installed() -> bool {
    let found = common::find_program(&std::env::var("PATH").unwrap_or_default(), "pi");
    common::require("pi", found.is_some(), "these tests drive the real pi (npm)")
}

impl Rig {
    /// `models`: pi's agent directory has the stand-in as its provider (else none: no
    /// credentials at all). `retry`: pi's `retry` settings.
    fn new(test: &'static str, script: Vec<Reply>, models: bool, retry: Value) -> Rig {
        let slot = SLOT.lock().unwrap_or_else(|e| e.into_inner());
        let env = Env::new();
        let home = env.root().join("pi-home");
        let agent = home.join(".pi/agent");
        std::fs::create_dir_all(&agent).unwrap();
        let api = ChatStandIn::start(script);
        if models {
            std::fs::write(
                agent.join("models.json"),
                json!({"providers": {"standin": {
                    "baseUrl": api.base_url(), "api": "openai-completions", "apiKey": "standin-key",
                    "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
                    "models": [{"id": chat_standin::MODEL}]
                }}})
                .to_string(),
            )
            .unwrap();
        }
        std::fs::write(
            agent.join("settings.json"),
            json!({"defaultProvider": "standin", "defaultModel": chat_standin::MODEL,
                "enableInstallTelemetry": false, "quietStartup": true, "retry": retry})
            .to_string(),
        )
        .unwrap();
        let extra: Vec<(&str, String)> = vec![
            ("HOME", home.display().to_string()),
            // Fault injection: `drop_events` breaks pi's channel mid-turn.
            (
                "ORANGE_DROP_AT_FILE",
                env.root().join("drop-at").display().to_string(),
            ),
            ("PI_OFFLINE", "1".into()),
            ("PI_SKIP_VERSION_CHECK", "1".into()),
            ("PI_TELEMETRY", "0".into()),
            ("NO_PROXY", "127.0.0.1,localhost".into()),
        ];
        let env = TaskEnv::real(env, &extra);
        for k in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "PI_CODING_AGENT_DIR",
            "PI_CODING_AGENT_SESSION_DIR",
        ] {
            let _ = env.tmux.tmux(&["set-environment", "-g", "-u", k]);
        }
        env.add_project(&[]);
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
            test,
        }
    }

    fn create(&self, branch: &str, summary: &str) -> String {
        let v = self
            .env
            .ok(&["task", "create", branch, summary, "--harness", "pi"]);
        v["id"].as_str().unwrap().to_string()
    }

    fn task(&self, id: &str) -> Value {
        self.env.task(id)
    }

    fn pane(&self, id: &str) -> String {
        self.task(id)["tmux_pane_id"].as_str().unwrap().to_string()
    }

    fn status_line(&self, id: &str) -> String {
        let s = self.task(id)["tmux_session_id"]
            .as_str()
            .unwrap()
            .to_string();
        let out = self
            .env
            .tmux
            .tmux(&["show-options", "-qv", "-t", &s, "@orange_status"]);
        strip_styles(&String::from_utf8_lossy(&out.stdout))
    }

    fn screen(&self, id: &str) -> String {
        self.env
            .tmux
            .ok(&["capture-pane", "-p", "-J", "-t", &self.pane(id)])
    }

    fn explain(&self, id: &str) -> String {
        let out = self
            .env
            .cmd_in(&self.env.repo, &["task", "explain", id])
            .output()
            .unwrap();
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }

    /// Wait until the status line shows `needle`; the status line.
    fn status_shows(&self, moment: &str, id: &str, needle: &str) -> String {
        let start = Instant::now();
        loop {
            let line = self.status_line(id);
            if line.contains(needle) {
                return line;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "[{}] {moment}: the status line never showed {needle:?} (last: {line:?}); task: {}\nscreen:\n{}",
                self.test,
                self.task(id),
                self.screen(id)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Wait until `pred(task show)` holds; the task as last seen.
    fn wait_task(&self, what: &str, id: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let mut t = Value::Null;
        common::poll(PATIENCE, || {
            t = self.task(id);
            pred(&t).then(|| t.clone())
        })
        .unwrap_or_else(|| {
            panic!(
                "[{}] timed out waiting for {what}: {t}\nscreen:\n{}",
                self.test,
                self.screen(id)
            )
        })
    }

    fn screen_shows(&self, id: &str, needle: &str) {
        let mut s = String::new();
        common::poll(PATIENCE, || {
            s = self.screen(id);
            s.contains(needle).then_some(())
        })
        .unwrap_or_else(|| panic!("[{}] the screen never showed {needle:?}:\n{s}", self.test));
    }

    fn wait_turns(&self, id: &str, n: usize) {
        assert!(
            self.api.wait_requests(n, PATIENCE),
            "[{}] pi sent {} turn(s), not {n}; task: {}\nscreen:\n{}",
            self.test,
            self.api.turns().len(),
            self.task(id),
            self.screen(id)
        );
    }

    /// From now on orange drops every event pi's channel sends (a broken extension);
    /// `false`: hears them again.
    fn drop_events(&self, drop: bool) {
        let f = self.env.env.root().join("drop-at");
        if drop {
            std::fs::write(f, "hook.agent").unwrap();
        } else {
            std::fs::remove_file(f).unwrap();
        }
    }

    /// `orange doctor --harness pi --json`: its `channel` check.
    fn doctor_channel(&self) -> Value {
        let out = self
            .env
            .cmd_in(&self.env.repo, &["doctor", "--harness", "pi", "--json"])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "doctor --json: {e}: {}",
                String::from_utf8_lossy(&out.stdout)
            )
        });
        v["checks"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == "channel").cloned())
            .unwrap_or_else(|| panic!("no channel check: {v}"))
    }

    /// Type `text` into pi and submit it.
    fn type_line(&self, id: &str, text: &str) {
        let pane = self.pane(id);
        self.env.tmux.ok(&["send-keys", "-t", &pane, "-l", text]);
        self.screen_shows(id, text);
        self.env.tmux.ok(&["send-keys", "-t", &pane, "Enter"]);
    }

    fn workspace(&self, id: &str) -> PathBuf {
        self.env
            .ws_path(self.task(id)["workspace"].as_str().unwrap())
    }

    fn pane_pid(&self, id: &str) -> String {
        self.env
            .tmux
            .ok(&["display", "-p", "-t", &self.pane(id), "#{pane_pid}"])
    }

    /// The command tmux started the agent's pane with (pi rewrites its own process title,
    /// so /proc shows only `pi`).
    fn start_command(&self, id: &str) -> String {
        self.env.tmux.ok(&[
            "display",
            "-p",
            "-t",
            &self.pane(id),
            "#{pane_start_command}",
        ])
    }
}

fn strip_styles(s: &str) -> String {
    let mut out = String::new();
    let mut depth = 0;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '#' && chars.peek() == Some(&'[') {
            depth += 1;
            chars.next();
            continue;
        }
        if depth > 0 {
            if c == ']' {
                depth -= 1;
            }
            continue;
        }
        out.push(c);
    }
    out.trim().to_string()
}

/// One moment of the "how soon the status line knows" table: appended to
/// `$ORANGE_LATENCY_LOG` when set (as tests/real_claude.rs does).
fn record(test: &str, moment: &str, since: Instant) {
    let Some(path) = std::env::var_os("ORANGE_LATENCY_LOG") else {
        return;
    };
    let secs = (since.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
    let line = json!({"test": test, "moment": moment, "seconds": secs});
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        use std::io::Write;
        let _ = writeln!(f, "{line}");
    }
}

fn no_retry() -> Value {
    json!({"provider": {"maxRetries": 0}})
}

/// A turn that calls a tool and edits the workspace: working while the slow answer streams,
/// the file appears, waiting at the end of the turn; `/quit` (pi has no `/exit`) ends it
/// with status 0; the prompt, which starts with `--`, reached the model exactly.
#[test]
fn pi_works_edits_its_workspace_ends_its_turn_and_quits() {
    if !pi_installed() {
        return;
    }
    let prompt = "--version is not an option here: make the file";
    let rig = Rig::new(
        "pi-turn",
        vec![
            Reply::slow(
                Duration::from_secs(4),
                Reply::bash("echo made > made.txt && echo tool-ran"),
            ),
            Reply::text("All done: made.txt is there."),
        ],
        true,
        no_retry(),
    );
    let id = rig.create("real/pi-turn", prompt);
    rig.wait_turns(&id, 1);
    let asked = rig.api.turns()[0].at;
    // orange's prompt: the summary first, then orange's note on the task.
    let seen = rig.api.turns()[0].last_user_text();
    assert!(seen.starts_with(prompt), "{seen:?}");
    // The answer streams slowly: working.
    let line = rig.status_shows("slow reply", &id, "working");
    record(rig.test, "working (turn in progress)", asked);
    assert!(rig.api.sent_at(0).is_none(), "still streaming: {line}");
    let t = rig.task(&id);
    assert_eq!(t["agent"]["state"], "working", "{t}");
    assert_eq!(
        t["agent"]["signal"], "hook",
        "pi's own channel said so: {t}"
    );
    assert!(rig.explain(&id).contains("working"), "{}", rig.explain(&id));
    // The tool ran in the task's workspace; the end of the turn: waiting.
    rig.wait_turns(&id, 2);
    assert!(
        chat_standin::content_text(&rig.api.turns()[1].tool_results()[0]["content"])
            .contains("tool-ran"),
        "{:?}",
        rig.api.turns()[1].body
    );
    let sent = rig.api.wait_sent(1, PATIENCE).unwrap();
    rig.status_shows("end of turn", &id, "waiting for input");
    record(rig.test, "end of turn", sent);
    assert_eq!(
        std::fs::read_to_string(rig.workspace(&id).join("made.txt")).unwrap(),
        "made\n"
    );
    let t = rig.task(&id);
    assert_eq!(t["agent"]["state"], "waiting", "{t}");
    assert_eq!(t["agent"]["signal"], "hook", "{t}");
    assert!(t["tokens"].is_null(), "pi does not report its tokens: {t}");
    let explain = rig.explain(&id);
    assert!(explain.contains("waiting"), "{explain}");
    // The command: its session file, orange's extension (the prompt went after one more
    // space, which the extension took away: the model saw it from its first character).
    let cmd = rig.start_command(&id);
    let conv = t["agent_session_id"].as_str().unwrap().to_string();
    assert!(cmd.contains(&format!("--session {conv}")), "{cmd}");
    assert!(
        cmd.contains(" -e ") && cmd.contains("pi-orange-events.ts"),
        "{cmd}"
    );
    assert!(
        Path::new(&conv).exists(),
        "pi wrote its session where orange said"
    );
    // /quit: pi exits 0.
    rig.type_line(&id, "/quit");
    let typed = Instant::now();
    rig.status_shows("/quit", &id, "exited 0");
    record(rig.test, "/quit", typed);
    let t = rig.wait_task("the exit recorded", &id, |t| t["agent"]["state"] == "dead");
    assert_eq!(t["session"]["state"], "dead", "{t}");
    // Closed by the person: no crash, the person told once.
    let t = rig.wait_task("/quit told", &id, |t| {
        t["agent"]["escalated"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("closed (exit 0)"))
    });
    assert_eq!(t["crash_count"].as_u64().unwrap_or(0), 0, "{t}");
}

/// Prompts that pi would take for an option (`-x`) or a file to attach (`@file`) reach the
/// model exactly as written.
#[test]
fn pi_gets_prompts_starting_with_a_dash_or_an_at_exactly() {
    if !pi_installed() {
        return;
    }
    let rig = Rig::new("pi-prompts", vec![], true, no_retry());
    for (branch, prompt) in [
        ("real/pi-dash", "-p is not an option"),
        ("real/pi-at", "@README.md is not a file to attach"),
    ] {
        let n = rig.api.turns().len();
        let id = rig.create(branch, prompt);
        rig.wait_turns(&id, n + 1);
        let seen = rig.api.turns()[n].last_user_text();
        assert!(seen.starts_with(prompt), "{seen:?}");
        rig.status_shows("end of turn", &id, "waiting for input");
    }
}

/// An error pi retries: retrying (with the attempt) while it waits, then waiting once an
/// attempt got through; errors it gives up on: error with its kind, and `task explain` says
/// so.
#[test]
fn pi_retries_an_error_then_gives_up_on_one() {
    if !pi_installed() {
        return;
    }
    let rig = Rig::new(
        "pi-retry",
        vec![
            Reply::status(503),
            Reply::text("Got through."),
            Reply::repeat(3, Reply::status(500)),
        ],
        true,
        json!({"maxRetries": 2, "baseDelayMs": 1500, "provider": {"maxRetries": 0}}),
    );
    let id = rig.create("real/pi-retry", "Say hello");
    let first = rig.api.wait_sent(0, PATIENCE).unwrap();
    rig.status_shows("503: retrying", &id, "retrying");
    record(rig.test, "503: retrying", first);
    let t = rig.task(&id);
    assert_eq!(t["agent"]["state"], "retrying", "{t}");
    assert!(
        t["agent"]["detail"]
            .as_str()
            .unwrap_or("")
            .contains("attempt 1/2"),
        "{t}"
    );
    rig.wait_turns(&id, 2);
    rig.status_shows("retried: end of turn", &id, "waiting for input");
    // Three 500s: the first try and pi's two retries; then it gives up.
    rig.type_line(&id, "Again");
    rig.wait_turns(&id, 3);
    rig.status_shows("500: retrying", &id, "retrying");
    rig.status_shows("500: error after the retries", &id, "error: server");
    record(
        rig.test,
        "500: error after the last retry",
        rig.api.sent_at(4).unwrap(),
    );
    assert_eq!(rig.api.turns().len(), 5, "a first try and two retries");
    let t = rig.task(&id);
    assert_eq!(t["agent"]["state"], "error", "{t}");
    assert_eq!(t["agent"]["error_kind"], "server", "{t}");
    let explain = rig.explain(&id);
    assert!(explain.contains("server"), "{explain}");
}

/// kill -9: dead. Respawn: the same session file, and the model is sent the earlier turns.
#[test]
fn a_killed_pi_is_dead_and_respawn_continues_its_conversation() {
    if !pi_installed() {
        return;
    }
    let rig = Rig::new(
        "pi-respawn",
        vec![
            Reply::text("Remember the word PAPAYA."),
            Reply::text("Back again."),
        ],
        true,
        no_retry(),
    );
    let id = rig.create("real/pi-respawn", "Remember a word");
    rig.api.wait_sent(0, PATIENCE).unwrap();
    rig.status_shows("end of turn", &id, "waiting for input");
    let conv = rig.task(&id)["agent_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let pid = rig.pane_pid(&id);
    std::process::Command::new("kill")
        .args(["-KILL", &pid])
        .status()
        .unwrap();
    let killed = Instant::now();
    rig.status_shows("kill -9", &id, "killed (signal 9)");
    record(rig.test, "kill -9", killed);
    let t = rig.wait_task("dead", &id, |t| t["agent"]["state"] == "dead");
    assert_eq!(t["session"]["state"], "dead", "{t}");
    rig.env.ok(&["task", "respawn", &id]);
    rig.wait_turns(&id, 2);
    let turn = &rig.api.turns()[1];
    assert!(
        turn.user_texts()[0].starts_with("Remember a word"),
        "{:?}",
        turn.body
    );
    assert!(
        turn.assistant_texts().iter().any(|t| t.contains("PAPAYA")),
        "the respawned pi continues the conversation: {:?}",
        turn.body
    );
    let t = rig.task(&id);
    assert_eq!(t["agent_session_id"].as_str(), Some(conv.as_str()), "{t}");
    let cmd = rig.start_command(&id);
    assert!(
        cmd.contains(&format!("--session {conv}")) && !cmd.contains("--continue"),
        "{cmd}"
    );
    rig.api.wait_sent(1, PATIENCE).unwrap();
    rig.status_shows("respawn → end of turn", &id, "waiting for input");
}

/// No credentials at all: pi says "No models available. Use /login…"; orange says
/// `blocked: login` and what to do, never working.
#[test]
fn a_pi_without_credentials_is_blocked_on_login() {
    if !pi_installed() {
        return;
    }
    let rig = Rig::new("pi-login", vec![], false, no_retry());
    let id = rig.create("real/pi-login", "Say hello");
    rig.screen_shows(&id, "No models available");
    let line = rig.status_shows("no credentials", &id, "blocked: login");
    assert!(!line.contains("working"), "{line}");
    let t = rig.task(&id);
    assert_eq!(t["agent"]["state"], "blocked", "{t}");
    assert_eq!(t["agent"]["blocker"], "login", "{t}");
    let explain = rig.explain(&id);
    assert!(explain.contains("/login"), "{explain}");
    assert_eq!(rig.api.turns().len(), 0, "nothing reached a model");
}

/// pi's channel breaks mid-turn (orange drops its events from then on, as a broken or
/// unloaded extension would): the turn ends on the screen and the task does not stay
/// "working" — the screen decides, and `task explain` and `orange doctor` say the channel is
/// silent; when it speaks again (the next turn), both say it is heard.
#[test]
fn a_channel_that_goes_silent_mid_turn_falls_back_to_the_screen_and_doctor_says_so() {
    if !pi_installed() {
        return;
    }
    let rig = Rig::new(
        "pi-silent",
        vec![
            // Long enough that the channel breaks before the answer ends (checked below).
            Reply::slow(Duration::from_secs(15), Reply::text("Done, quietly.")),
            Reply::text("Heard again."),
        ],
        true,
        no_retry(),
    );
    // Waiting past the silence is idle: escalated, not nudged (a nudge would start a turn).
    std::fs::write(
        rig.env.home.join("config.toml"),
        "[policy]\non_idle = \"escalate\"\n",
    )
    .unwrap();
    let id = rig.create("real/pi-silent", "Say something");
    rig.wait_turns(&id, 1);
    rig.status_shows("slow reply", &id, "working");
    assert_eq!(
        rig.task(&id)["agent"]["signal"],
        "hook",
        "{}",
        rig.task(&id)
    );
    assert_eq!(rig.doctor_channel()["ok"], true, "heard so far");
    rig.drop_events(true);
    assert!(
        rig.api.sent_at(0).is_none(),
        "the channel broke before the turn ended (else this test shows nothing)"
    );
    // The turn ends on the screen only.
    rig.screen_shows(&id, "Done, quietly.");
    let t = rig.wait_task("the screen to decide", &id, |t| {
        t["agent"]["state"] == "waiting" && t["agent"]["channel_silent"].is_string()
    });
    assert_eq!(t["agent"]["signal"], "screen", "{t}");
    assert_eq!(
        t["agent"]["hook_state"], "working",
        "the last event said working: {t}"
    );
    // What a person sees: waiting, or — the idle grace over in the same pass that found
    // the silence — escalated as idle; never "working".
    let mut line = String::new();
    common::poll(PATIENCE, || {
        line = rig.status_line(&id);
        (line.contains("waiting for input") || line.contains("escalated: idle")).then_some(())
    })
    .unwrap_or_else(|| panic!("the status line says {line:?}: {}", rig.task(&id)));
    let explain = rig.explain(&id);
    assert!(
        explain.contains("has said nothing since") && explain.contains("reads the screen"),
        "{explain}"
    );
    let check = rig.doctor_channel();
    assert_eq!(check["ok"], false, "{check}: {}", rig.task(&id));
    assert!(check["detail"].as_str().unwrap().contains(&id), "{check}");
    // Heard again: the next turn's events clear it.
    rig.drop_events(false);
    rig.type_line(&id, "And again");
    rig.wait_turns(&id, 2);
    let t = rig.wait_task("the channel heard again", &id, |t| {
        t["agent"]["state"] == "waiting"
            && t["agent"]["signal"] == "hook"
            && t["agent"]["channel_silent"].is_null()
    });
    assert!(rig.screen(&id).contains("Heard again."), "{t}");
    assert_eq!(rig.doctor_channel()["ok"], true, "{}", rig.doctor_channel());
}
