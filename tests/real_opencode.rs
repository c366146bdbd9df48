//! The REAL opencode (the pinned 1.18.33 on PATH) driven through orange against the chat
//! completions stand-in (tests/common/chat_standin.rs) on 127.0.0.1: its interface in the
//! task's pane, its events through orange's plugin (a config directory orange owns per
//! task), and at each moment `task show`, `task explain` and the status line checked
//! against what is true (the stand-in knows what it sent, the workspace what was written).
//!
//! opencode gets a private HOME and XDG directories in the test's directory, a provider
//! (`@ai-sdk/openai-compatible`, `baseURL` = the stand-in) in that home's global config,
//! and registries at a closed loopback port: nothing leaves the machine.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::common::strip_styles;
use common::chat_standin::{ChatStandIn, Reply};
use common::{Env, TaskEnv};
use serde_json::{json, Value};

/// A bound on a hang, never a measure: opencode (a Bun program) takes tens of seconds of
/// CPU to draw its first screen on a loaded 2-core machine.
const PATIENCE: Duration = Duration::from_secs(240);

/// One real opencode at a time (see other_harnesses.rs: several at once starve each other).
static SLOT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// What keeps opencode off the network (update checks, model lists, LSP downloads, sharing,
/// its default plugins) and its package installs at a closed loopback port.
pub(crate) const OPENCODE_OFFLINE: &[(&str, &str)] = &[
    ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
    ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
    ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1"),
    ("OPENCODE_DISABLE_SHARE", "1"),
    ("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1"),
    ("OPENCODE_DISABLE_CLAUDE_CODE", "1"),
    ("OPENCODE_DISABLE_EXTERNAL_SKILLS", "1"),
    ("NPM_CONFIG_REGISTRY", "http://127.0.0.1:9/"),
    ("npm_config_registry", "http://127.0.0.1:9/"),
    ("BUN_CONFIG_REGISTRY", "http://127.0.0.1:9/"),
];

/// Whatever the test process had that could reach a real account or another config.
const UNSET: &[&str] = &[
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENCODE_API_KEY",
    "OPENCODE_CONFIG",
    "OPENCODE_CONFIG_DIR",
    "OPENCODE_CONFIG_CONTENT",
    "OPENCODE_PURE",
    "ALL_PROXY",
    "all_proxy",
];

fn opencode_installed() -> bool {
    let found = common::find_program(&std::env::var("PATH").unwrap_or_default(), "opencode");
    common::require(
        "opencode",
        found.is_some(),
        "these tests drive the real opencode (npm opencode-ai)",
    )
}

struct Rig {
    _slot: std::sync::MutexGuard<'static, ()>,
    env: TaskEnv,
    api: ChatStandIn,
    monitor: Option<Child>,
    home: PathBuf,
    test: &'static str,
}

impl Drop for Rig {
    fn drop(&mut self) {
        if let Some(mut m) = self.monitor.take() {
            let _ = m.kill();
            let _ = m.wait();
        }
        let _ = self.env.tmux.tmux(&["kill-server"]);
    }
}

/// A config directory opencode needs no package install for (it installs
/// `@opencode-ai/plugin` into every config directory it reads, and with the registries
/// closed that would only fail slowly).
pub(crate) fn installed_already(dir: &Path) {
    std::fs::create_dir_all(dir.join("node_modules")).unwrap();
    let dep = json!({"@opencode-ai/plugin": "*"});
    std::fs::write(
        dir.join("package.json"),
        json!({"dependencies": dep}).to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("package-lock.json"),
        json!({"lockfileVersion": 3, "packages": {"": {"dependencies": dep}}}).to_string(),
    )
    .unwrap();
}

impl Rig {
    /// `provider`: opencode's global config names the stand-in as its model (false: no
    /// provider at all, as on a machine where nobody logged in).
    fn new(test: &'static str, script: Vec<Reply>, provider: bool) -> Rig {
        let slot = SLOT.lock().unwrap_or_else(|e| e.into_inner());
        let api = ChatStandIn::start(script);
        let base = Env::new();
        let home = base.root().join("agent-home");
        let xdg = |d: &str| home.join(d);
        for d in [".config/opencode", ".local/share", ".cache", ".local/state"] {
            std::fs::create_dir_all(xdg(d)).unwrap();
        }
        let global = xdg(".config/opencode");
        installed_already(&global);
        let mut cfg = json!({
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": false, "share": "disabled",
        });
        if provider {
            cfg["model"] = json!("standin/standin-model");
            cfg["small_model"] = json!("standin/standin-model");
            cfg["provider"] = json!({"standin": {
                "npm": "@ai-sdk/openai-compatible", "name": "standin",
                "options": {"baseURL": api.base_url(), "apiKey": "standin-key"},
                "models": {"standin-model": {"name": "standin"}}
            }});
        }
        std::fs::write(global.join("opencode.json"), cfg.to_string()).unwrap();
        let h = |p: PathBuf| p.display().to_string();
        let nowhere = "http://127.0.0.1:9/";
        let extra: Vec<(&str, String)> = vec![
            ("HOME", h(home.clone())),
            ("XDG_CONFIG_HOME", h(xdg(".config"))),
            ("XDG_DATA_HOME", h(xdg(".local/share"))),
            ("XDG_CACHE_HOME", h(xdg(".cache"))),
            ("XDG_STATE_HOME", h(xdg(".local/state"))),
            // opencode without a provider of its own falls back to its service on the
            // internet: through a proxy that is a closed loopback port, it fails at once.
            ("HTTPS_PROXY", nowhere.into()),
            ("HTTP_PROXY", nowhere.into()),
            ("https_proxy", nowhere.into()),
            ("http_proxy", nowhere.into()),
            ("NO_PROXY", "127.0.0.1,localhost".into()),
            ("no_proxy", "127.0.0.1,localhost".into()),
        ];
        let mut extra = extra;
        extra.extend(OPENCODE_OFFLINE.iter().map(|(k, v)| (*k, v.to_string())));
        let env = TaskEnv::real(base, &extra);
        for k in UNSET {
            let _ = env.tmux.tmux(&["set-environment", "-g", "-u", k]);
        }
        env.add_project(&[]);
        std::fs::write(
            env.home.join("config.toml"),
            // No nudge types into opencode, no escalation hides its state, while a test runs.
            "[policy]\nidle_grace = \"600s\"\n",
        )
        .unwrap();
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
            home,
            test,
        }
    }

    fn create(&self, branch: &str, summary: &str, harness: &str) -> String {
        let v = self
            .env
            .ok(&["task", "create", branch, summary, "--harness", harness]);
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

    fn keys(&self, id: &str, keys: &[&str]) {
        let pane = self.pane(id);
        let mut args = vec!["send-keys", "-t", pane.as_str()];
        args.extend(keys);
        self.env.tmux.ok(&args);
    }

    /// What the status line shows for the task's session (`@orange_status`), unstyled.
    fn status_line(&self, id: &str) -> String {
        let session = self.task(id)["tmux_session_id"]
            .as_str()
            .unwrap()
            .to_string();
        let out = self
            .env
            .tmux
            .tmux(&["show-options", "-qv", "-t", &session, "@orange_status"]);
        strip_styles(&String::from_utf8_lossy(&out.stdout))
    }

    fn explain(&self, id: &str) -> String {
        let out = self
            .env
            .cmd_in(&self.env.repo, &["task", "explain", id])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn fail(&self, id: &str, what: &str, last: &str) -> ! {
        panic!(
            "[{}] timed out waiting for {what} (last: {last}); task: {}\nscreen:\n{}\norange.log:\n{}",
            self.test,
            self.task(id),
            self.screen(id),
            std::fs::read_to_string(self.env.home.join("orange.log")).unwrap_or_default()
        )
    }

    /// Wait until the status line shows `needle`; the line.
    fn status_shows(&self, what: &str, id: &str, needle: &str) -> String {
        let mut line = String::new();
        common::poll(PATIENCE, || {
            line = self.status_line(id);
            line.contains(needle).then_some(())
        })
        .unwrap_or_else(|| self.fail(id, what, &line));
        line
    }

    /// Wait until `pred(task show)` holds; the task.
    fn wait_task(&self, what: &str, id: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let mut t = Value::Null;
        common::poll(PATIENCE, || {
            t = self.task(id);
            pred(&t).then(|| t.clone())
        })
        .unwrap_or_else(|| self.fail(id, what, &t.to_string()))
    }

    fn wait_turns(&self, id: &str, n: usize) {
        if !self.api.wait_requests(n, PATIENCE) {
            self.fail(
                id,
                &format!("{n} turn(s)"),
                &self.api.turns().len().to_string(),
            );
        }
    }

    fn workspace(&self, id: &str) -> PathBuf {
        self.env
            .ws_path(self.task(id)["workspace"].as_str().unwrap())
    }

    /// The agent's state as `task show` has it, with its signal.
    fn agent(&self, id: &str) -> (String, String) {
        let t = self.task(id);
        (
            t["agent"]["state"].as_str().unwrap_or("").to_string(),
            t["agent"]["signal"].as_str().unwrap_or("").to_string(),
        )
    }

    fn send(&self, id: &str, text: &str) {
        self.env.ok(&["task", "send", id, text]);
    }
}

/// The question tool's arguments (opencode 1.18's `question`).
fn question_args() -> Value {
    json!({"questions": [{"question": "Which color should the file be?", "header": "Color",
        "options": [{"label": "red", "description": "warm"}, {"label": "blue", "description": "cold"}]}]})
}

/// One opencode, every moment of a working day: the prompt (starting with `--`) reaches
/// the model as the first message; a slow reply is working throughout; a tool call edits a
/// file in the workspace; the end of the turn is waiting; a question is a question for
/// the person, answered in the pane; an error it gives up on at once (401) is an error
/// with its kind; an error it retries (429) is retrying, then the turn ends. All from
/// opencode's own events (signal `hook`).
#[test]
fn opencode_turns_tools_questions_and_errors_read_true() {
    if !opencode_installed() {
        return;
    }
    let rig = Rig::new(
        "turns",
        vec![
            Reply::slow(
                Duration::from_secs(12),
                Reply::tool(
                    "write",
                    json!({"filePath": "opencode-was-here.txt", "content": "written by opencode\n"}),
                ),
            ),
            Reply::text("I wrote the file."),
            Reply::tool("question", question_args()),
            Reply::text("Red it is."),
            Reply::status(401),
            Reply::repeat(2, Reply::status(429)),
            Reply::text("Back after the retries."),
        ],
        true,
    );
    let id = rig.create(
        "oc/turns",
        "--version is no option: write the file",
        "opencode",
    );
    // Working: opencode sent the first turn, the prompt as its user message, glued to
    // `--prompt=` (a separate value starting with `-` would be taken for an option).
    rig.wait_turns(&id, 1);
    let first = rig.api.turns()[0].user_texts().join("\n");
    assert!(
        first.contains("--version is no option: write the file"),
        "{first}"
    );
    let line = rig.status_shows("working (slow reply)", &id, "working");
    assert!(!line.contains("waiting"), "{line}");
    while rig.api.sent_at(0).is_none() {
        let (state, _) = rig.agent(&id);
        assert_ne!(state, "waiting", "a slow reply showed as waiting");
        std::thread::sleep(Duration::from_millis(200));
    }
    // The tool ran in the task's workspace; the turn ends: waiting for input.
    rig.wait_turns(&id, 2);
    rig.status_shows("end of turn", &id, "waiting for input");
    let ws = rig.workspace(&id);
    assert_eq!(
        std::fs::read_to_string(ws.join("opencode-was-here.txt")).unwrap_or_default(),
        "written by opencode\n"
    );
    let t = rig.wait_task("waiting by the hook", &id, |t| {
        t["agent"]["state"] == "waiting" && t["agent"]["signal"] == "hook"
    });
    assert!(
        t["agent_session_id"]
            .as_str()
            .is_some_and(|s| s.starts_with("ses_")),
        "the plugin's session.created named the conversation: {t}"
    );
    // A question (opencode's question tool): a question for the person, with its text.
    rig.send(&id, "Ask me which color.");
    rig.wait_turns(&id, 3);
    let line = rig.status_shows("question", &id, "question");
    assert!(!line.contains("working"), "{line}");
    let explain = rig.explain(&id);
    assert!(explain.contains("Which color"), "{explain}");
    common::wait_for("the question on screen", 60, || {
        rig.screen(&id).contains("Which color")
    });
    // The person answers in the pane (Enter on "1. red"): the turn goes on and ends.
    rig.keys(&id, &["Enter"]);
    rig.wait_turns(&id, 4);
    assert!(
        rig.api.turns()[3].body.to_string().contains("red"),
        "the answer reached the model"
    );
    rig.status_shows("end of turn after the answer", &id, "waiting for input");
    // An error opencode does not retry (401): an error, with its kind, that stays.
    rig.send(&id, "Fail now.");
    rig.wait_turns(&id, 5);
    let line = rig.status_shows("401", &id, "error");
    assert!(line.contains("unauthorized"), "{line}");
    let t = rig.task(&id);
    assert_eq!(t["agent"]["state"], "error", "{t}");
    assert_eq!(t["agent"]["signal"], "hook", "{t}");
    let explain = rig.explain(&id);
    assert!(explain.to_lowercase().contains("unauthorized"), "{explain}");
    // (session.idle follows the error at once: the error must not turn into waiting.)
    common::holds_for("the error, not waiting", Duration::from_secs(3), || {
        rig.agent(&id).0 == "error"
    });
    // An error it retries (429 twice): retrying, then the turn ends.
    rig.send(&id, "Try again.");
    rig.wait_turns(&id, 6);
    rig.status_shows("429: retrying", &id, "retrying");
    let t = rig.task(&id);
    assert!(
        t["agent"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("attempt")),
        "{t}"
    );
    rig.wait_turns(&id, 8);
    rig.status_shows("after the retries", &id, "waiting for input");
}

/// Leaving and coming back: `/exit` ends opencode (status 0) and orange says so; a respawn
/// continues the same conversation by its id (`-s ses_…`: the stand-in sees the earlier
/// turn as history), never the directory's last one; `kill -9` is dead, killed by signal 9.
#[test]
fn opencode_exit_respawn_and_kill_read_true() {
    if !opencode_installed() {
        return;
    }
    let rig = Rig::new(
        "life",
        vec![
            Reply::text("The word is PAPAYA."),
            Reply::text("Still PAPAYA."),
        ],
        true,
    );
    let id = rig.create("oc/life", "Remember the word", "opencode");
    rig.wait_turns(&id, 1);
    rig.status_shows("end of turn", &id, "waiting for input");
    let t = rig.wait_task("the conversation id", &id, |t| {
        t["agent_session_id"].is_string()
    });
    let conv = t["agent_session_id"].as_str().unwrap().to_string();
    assert!(conv.starts_with("ses_"), "{t}");
    // /exit: opencode ends with status 0.
    rig.keys(&id, &["-l", "/exit"]);
    common::wait_for("/exit typed", 60, || rig.screen(&id).contains("/exit"));
    rig.keys(&id, &["Enter"]);
    rig.status_shows("/exit", &id, "exited 0");
    assert_eq!(rig.agent(&id).0, "dead");
    // Closed by the person: no crash, the person told once.
    let t = rig.wait_task("/exit told", &id, |t| {
        t["agent"]["escalated"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("closed (exit 0)"))
    });
    assert_eq!(t["crash_count"].as_u64().unwrap_or(0), 0, "{t}");
    // Respawn: the same conversation.
    rig.env.ok(&["task", "respawn", &id]);
    let pane = rig.pane(&id);
    let start = rig
        .env
        .tmux
        .ok(&["display", "-p", "-t", &pane, "#{pane_start_command}"]);
    assert!(start.contains(&conv), "respawned with -s {conv}: {start}");
    let words: Vec<&str> = start
        .split_whitespace()
        .skip_while(|w| !w.ends_with("opencode"))
        .collect();
    assert!(
        !words.contains(&"-c") && !words.contains(&"--continue"),
        "never the directory's last conversation: {start}"
    );
    rig.wait_turns(&id, 2);
    let body = rig.api.turns()[1].body.to_string();
    assert!(
        body.contains("PAPAYA") && body.contains("Remember the word"),
        "the respawned opencode continues the conversation: {body}"
    );
    rig.status_shows("respawn → end of turn", &id, "waiting for input");
    assert_eq!(rig.task(&id)["agent_session_id"], conv.as_str());
    // kill -9: dead, killed by signal 9.
    let pid = rig
        .env
        .tmux
        .ok(&["display", "-p", "-t", &rig.pane(&id), "#{pane_pid}"]);
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &pid])
        .status();
    let t = rig.wait_task("dead by kill -9", &id, |t| {
        t["agent"]["state"] == "dead"
            && t["agent"]["detail"]
                .as_str()
                .is_some_and(|d| d.starts_with("killed by signal 9"))
    });
    assert_eq!(t["agent"]["signal"], "pane", "{t}");
    // The first crash (the /exit was none): counted, the task not stuck.
    let t = rig.wait_task("the crash counted", &id, |t| t["crash_count"] == 1);
    assert_eq!(t["status"], "working", "{t}");
}

/// A person who wants to approve tool calls (a harness without `--auto`, opencode's own
/// config asking before bash): blocked on an approval from `permission.asked`, and
/// working again once the person allows it in the pane.
#[test]
fn opencode_approval_is_blocked_until_answered() {
    if !opencode_installed() {
        return;
    }
    let rig = Rig::new(
        "approval",
        vec![
            Reply::bash("echo approved > approved.txt"),
            Reply::text("Done after the approval."),
        ],
        true,
    );
    // opencode asks before any bash command (its global config in the test's home).
    let global = rig.home.join(".config/opencode/opencode.json");
    let mut oc: Value = serde_json::from_str(&std::fs::read_to_string(&global).unwrap()).unwrap();
    oc["permission"] = json!({"bash": "ask"});
    std::fs::write(&global, oc.to_string()).unwrap();
    let mut cfg = std::fs::read_to_string(rig.env.home.join("config.toml")).unwrap();
    cfg.push_str("[harness.opencode]\ncommand = \"opencode --prompt={prompt}\"\n");
    std::fs::write(rig.env.home.join("config.toml"), cfg).unwrap();
    let id = rig.create("oc/approve", "Write approved.txt", "opencode");
    rig.wait_turns(&id, 1);
    let line = rig.status_shows("approval prompt", &id, "blocked: approval");
    assert!(line.contains("approval"), "{line}");
    let explain = rig.explain(&id);
    assert!(explain.contains("approve"), "{explain}");
    assert!(explain.contains("bash"), "{explain}");
    assert!(!rig.workspace(&id).join("approved.txt").exists());
    common::wait_for("the permission prompt on screen", 60, || {
        rig.screen(&id).to_lowercase().contains("allow")
    });
    // Allow once (Enter on the first choice): the tool runs, the turn ends.
    rig.keys(&id, &["Enter"]);
    rig.wait_turns(&id, 2);
    assert!(rig.workspace(&id).join("approved.txt").exists());
    rig.status_shows("end of turn after the approval", &id, "waiting for input");
}

/// No provider and no credentials: whatever opencode shows reads as `blocked: login` with
/// what to do, never working.
#[test]
fn opencode_without_credentials_is_blocked_on_login() {
    if !opencode_installed() {
        return;
    }
    let rig = Rig::new("login", vec![], false);
    let id = rig.create("oc/login", "Say hello", "opencode");
    let line = rig.status_shows("no credentials", &id, "blocked: login");
    assert!(!line.contains("working"), "{line}");
    let explain = rig.explain(&id);
    assert!(explain.contains("opencode auth login"), "{explain}");
    assert!(rig.api.requests().is_empty(), "no model was asked");
}
