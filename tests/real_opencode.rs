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
use std::time::{Duration, Instant};

use common::chat_standin::{ChatStandIn, Reply};
use common::rig::{self, AgentRig, Spec};
use common::Env;
use serde_json::{json, Value};

/// A bound on a hang, never a measure: opencode (a Bun program) takes tens of seconds of
/// CPU to draw its first screen on a loaded 2-core machine.
const PATIENCE: Duration = Duration::from_secs(240);

/// One real opencode at a time (see other_harnesses/mod.rs: several at once starve each
/// other).
static SLOT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// What keeps opencode off the network (update checks, model lists, LSP downloads, sharing,
/// its default plugins) and its package installs at a closed loopback port.
const OPENCODE_OFFLINE: &[(&str, &str)] = &[
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

fn opencode_installed() -> bool {
    rig::installed("opencode")
}

/// The rig of these tests (tests/common/rig.rs) with the chat completions stand-in.
type Rig = AgentRig<ChatStandIn>;

/// A config directory opencode needs no package install for (it installs
/// `@opencode-ai/plugin` into every config directory it reads, and with the registries
/// closed that would only fail slowly).
fn installed_already(dir: &Path) {
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

/// opencode's XDG directories in `home` (its HOME) and its global config
/// (`~/.config/opencode/opencode.json`): with `url`, an `@ai-sdk/openai-compatible`
/// provider at the stand-in as its model (None: no provider at all, as on a machine where
/// nobody logged in). The environment opencode needs besides HOME: those directories and
/// [`OPENCODE_OFFLINE`].
pub(crate) fn opencode_home(home: &Path, url: Option<&str>) -> Vec<(&'static str, String)> {
    let xdg = |d: &str| home.join(d);
    for d in [".config/opencode", ".local/share", ".cache", ".local/state"] {
        std::fs::create_dir_all(xdg(d)).unwrap();
    }
    let global = xdg(".config/opencode");
    // opencode waits long for a package install before it loads plugins (orange's among
    // them; OPENCODE_PURE would skip them all): this directory is "installed" already.
    installed_already(&global);
    let mut cfg = json!({
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": false, "share": "disabled",
    });
    if let Some(url) = url {
        cfg["model"] = json!("standin/standin-model");
        cfg["small_model"] = json!("standin/standin-model");
        cfg["provider"] = json!({"standin": {
            "npm": "@ai-sdk/openai-compatible", "name": "standin",
            "options": {"baseURL": url, "apiKey": "standin-key"},
            "models": {"standin-model": {"name": "standin"}}
        }});
    }
    std::fs::write(global.join("opencode.json"), cfg.to_string()).unwrap();
    let h = |p: PathBuf| p.display().to_string();
    let mut env: Vec<(&'static str, String)> = vec![
        ("XDG_CONFIG_HOME", h(xdg(".config"))),
        ("XDG_DATA_HOME", h(xdg(".local/share"))),
        ("XDG_CACHE_HOME", h(xdg(".cache"))),
        ("XDG_STATE_HOME", h(xdg(".local/state"))),
    ];
    env.extend(OPENCODE_OFFLINE.iter().map(|(k, v)| (*k, v.to_string())));
    env
}

/// A rig with the real opencode. `provider`: opencode's global config names the stand-in
/// as its model (false: no provider at all, as on a machine where nobody logged in).
fn opencode(test: &'static str, script: Vec<Reply>, provider: bool) -> Rig {
    let slot = SLOT.lock().unwrap_or_else(|e| e.into_inner());
    let api = ChatStandIn::start(script);
    let base = Env::new();
    let home = base.root().join("agent-home");
    let url = api.base_url();
    let mut extra = opencode_home(&home, provider.then_some(url.as_str()));
    extra.push(("HOME", home.display().to_string()));
    // opencode without a provider of its own falls back to its service on the internet:
    // through a proxy that is a closed loopback port, it fails at once.
    let nowhere = "http://127.0.0.1:9/";
    for k in ["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"] {
        extra.push((k, nowhere.into()));
    }
    let env = rig::agent_env(base, &extra, &[]);
    std::fs::write(
        env.home.join("config.toml"),
        // No nudge types into opencode, no escalation hides its state, while a test runs.
        "[policy]\nidle_grace = \"600s\"\n",
    )
    .unwrap();
    AgentRig::start(Spec {
        test,
        agent: "opencode",
        patience: PATIENCE,
        slot: Some(slot),
        env,
        api,
        home,
    })
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
    let rig = opencode(
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
    let id = rig.create("oc/turns", "--version is no option: write the file");
    // Working: opencode sent the first turn, the prompt as its user message, glued to
    // `--prompt=` (a separate value starting with `-` would be taken for an option).
    rig.wait_turns(&id, 1);
    let first = rig.api.turns()[0].user_texts().join("\n");
    assert!(
        first.contains("--version is no option: write the file"),
        "{first}"
    );
    let asked = rig.api.turns()[0].at;
    let line = rig.status_since("working (turn in progress)", &id, "working", asked);
    assert!(!line.contains("waiting"), "{line}");
    while rig.api.sent_at(0).is_none() {
        let (state, _) = rig.agent_state(&id);
        assert_ne!(state, "waiting", "a slow reply showed as waiting");
        std::thread::sleep(Duration::from_millis(200));
    }
    // The tool ran in the task's workspace; the turn ends: waiting for input.
    rig.wait_turns(&id, 2);
    let sent = rig.api.wait_sent(1, PATIENCE).unwrap();
    rig.status_since("end of turn", &id, "waiting for input", sent);
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
    let sent = rig.api.wait_sent(2, PATIENCE).unwrap();
    let line = rig.status_since("end of turn on a question", &id, "question", sent);
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
    let sent = rig.api.wait_sent(4, PATIENCE).unwrap();
    let line = rig.status_since("error 401 (not retried)", &id, "error", sent);
    assert!(line.contains("unauthorized"), "{line}");
    let t = rig.task(&id);
    assert_eq!(t["agent"]["state"], "error", "{t}");
    assert_eq!(t["agent"]["signal"], "hook", "{t}");
    let explain = rig.explain(&id);
    assert!(explain.to_lowercase().contains("unauthorized"), "{explain}");
    // (session.idle follows the error at once: the error must not turn into waiting.)
    common::holds_for("the error, not waiting", Duration::from_secs(3), || {
        rig.agent_state(&id).0 == "error"
    });
    // An error it retries (429 twice): retrying, then the turn ends.
    rig.send(&id, "Try again.");
    rig.wait_turns(&id, 6);
    let sent = rig.api.wait_sent(5, PATIENCE).unwrap();
    rig.status_since("429: retrying", &id, "retrying", sent);
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
    let rig = opencode(
        "life",
        vec![
            Reply::text("The word is PAPAYA."),
            Reply::text("Still PAPAYA."),
        ],
        true,
    );
    let id = rig.create("oc/life", "Remember the word");
    rig.wait_turns(&id, 1);
    let sent = rig.api.wait_sent(0, PATIENCE).unwrap();
    rig.status_since("end of turn", &id, "waiting for input", sent);
    let t = rig.wait_task("the conversation id", &id, |t| {
        t["agent_session_id"].is_string()
    });
    let conv = t["agent_session_id"].as_str().unwrap().to_string();
    assert!(conv.starts_with("ses_"), "{t}");
    // /exit: opencode ends with status 0.
    rig.keys(&id, &["-l", "/exit"]);
    common::wait_for("/exit typed", 60, || rig.screen(&id).contains("/exit"));
    rig.keys(&id, &["Enter"]);
    let typed = Instant::now();
    rig.status_since("/exit", &id, "exited 0", typed);
    assert_eq!(rig.agent_state(&id).0, "dead");
    // Closed by the person: no crash, the person told once.
    let t = rig.wait_task("/exit told", &id, |t| {
        t["agent"]["escalated"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("closed (exit 0)"))
    });
    assert_eq!(t["crash_count"].as_u64().unwrap_or(0), 0, "{t}");
    // Respawn: the same conversation.
    rig.env.ok(&["task", "respawn", &id]);
    let start = rig.start_command(&id);
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
    let sent = rig.api.wait_sent(1, PATIENCE).unwrap();
    rig.status_since("respawn → end of turn", &id, "waiting for input", sent);
    assert_eq!(rig.task(&id)["agent_session_id"], conv.as_str());
    // kill -9: dead, killed by signal 9.
    let pid = rig.pane_pid(&id);
    let killed = Instant::now();
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &pid])
        .status();
    rig.status_since("kill -9", &id, "killed (signal 9)", killed);
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
    let rig = opencode(
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
    let id = rig.create("oc/approve", "Write approved.txt");
    rig.wait_turns(&id, 1);
    let sent = rig.api.wait_sent(0, PATIENCE).unwrap();
    let line = rig.status_since("tool-approval prompt", &id, "blocked: approval", sent);
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
    let rig = opencode("login", vec![], false);
    let id = rig.create("oc/login", "Say hello");
    let line = rig.status_shows("no credentials", &id, "blocked: login");
    assert!(!line.contains("working"), "{line}");
    let explain = rig.explain(&id);
    assert!(explain.contains("opencode auth login"), "{explain}");
    assert!(rig.api.requests().is_empty(), "no model was asked");
}

/// What orange's plugin for opencode hands on (src/execution/harness/opencode_plugin.js,
/// run by node as opencode's Bun runs it): opencode 1.18 ends a turn with busy, idle and
/// session.idle within ≈ 70 ms, and one hook process at a time takes tenths of a second or
/// more on a loaded machine. With a fake `orange` on PATH holding the plugin's first hook,
/// a burst of events waits: every busy, idle and tool start still waiting gives way to the
/// newest one, one that says what was last sent is not sent, and every event that carries
/// more (the conversation, a prompt, a tool's end, a permission, a question) goes, in
/// order.
#[test]
fn the_opencode_plugin_hands_on_only_the_newest_state() {
    let Some(node) = rig::program("node") else {
        return;
    };
    let tmp = tempfile::Builder::new()
        .prefix("orange-plugin-")
        .tempdir()
        .unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    let plugin =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src/execution/harness/opencode_plugin.js");
    std::fs::copy(plugin, dir.join("orange.mjs")).unwrap();
    std::fs::write(dir.join("driver.mjs"), PLUGIN_DRIVER).unwrap();
    // The fake orange: a line per hook (its event, its standard input); the first hook
    // waits until the test opens `release`; `ends` says each hook is over.
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(
        bin.join("orange"),
        "#!/bin/sh\nbody=$(cat)\nprintf '%s %s\\n' \"$3\" \"$body\" >> calls\n\
         if mkdir first 2>/dev/null; then : > held; cat release > /dev/null; fi\n\
         printf '%s\\n' \"$3\" >> ends\n",
    )
    .unwrap();
    let mut perms = std::fs::metadata(bin.join("orange")).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(bin.join("orange"), perms).unwrap();
    let release = dir.join("release");
    let made = std::process::Command::new("mkfifo").arg(&release).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let child = std::process::Command::new(node)
        .arg("driver.mjs")
        .current_dir(&dir)
        .env("PATH", path)
        .env("OPENCODE_CONFIG_DIR", &dir)
        .env_remove("ORANGE_BIN")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut driver = Driver(child, release.clone());
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    let mut running = |what: &str| {
        if let Ok(Some(status)) = driver.0.try_wait() {
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(driver.0.stderr.as_mut().unwrap(), &mut err);
            panic!("the driver ended ({status}) before {what}: {err}");
        }
    };
    // Phase 1: the first hook (session.created) held, the whole burst queued behind it.
    common::wait_for("the first hook held, the burst queued", 60, || {
        running("the burst was queued");
        dir.join("held").exists() && dir.join("queued").exists()
    });
    drop(
        std::fs::OpenOptions::new()
            .write(true)
            .open(&release)
            .unwrap(),
    );
    common::wait_for("the burst handed on", 60, || {
        read("ends").lines().any(|l| l == "opencode.question.asked")
    });
    // Phase 2: nothing held; the answer goes at once, the states behind it say nothing new.
    std::io::Write::write_all(driver.0.stdin.as_mut().unwrap(), b"go\n").unwrap();
    drop(driver.0.stdin.take());
    let status = common::poll(Duration::from_secs(60), || driver.0.try_wait().ok()?);
    let mut err = String::new();
    let _ = std::io::Read::read_to_string(driver.0.stderr.as_mut().unwrap(), &mut err);
    assert!(status.is_some_and(|s| s.success()), "the driver: {err}");
    let calls: Vec<(String, Value)> = read("calls")
        .lines()
        .map(|l| {
            let (event, body) = l.split_once(' ').unwrap_or((l, ""));
            (
                event.to_string(),
                serde_json::from_str(body).unwrap_or(Value::Null),
            )
        })
        .collect();
    let events: Vec<&str> = calls.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(
        events,
        [
            "opencode.session.created",
            "opencode.chat.message",
            "opencode.tool.execute.after",
            "opencode.permission.asked",
            "opencode.permission.replied",
            "opencode.session.idle",
            "opencode.question.asked",
            "opencode.question.replied",
        ],
        "every call: {calls:?}"
    );
    assert_eq!(calls[0].1["info"]["id"], "ses_orange", "{calls:?}");
    assert_eq!(calls[1].1["prompt"], "write the file", "{calls:?}");
    assert_eq!(calls[3].1["patterns"], json!(["ls"]), "{calls:?}");
    for (event, body) in &calls {
        assert_eq!(body["session_id"], "ses_orange", "{event}: {body}");
    }
}

/// The node process driving orange's plugin; on drop the held hook is let go and node
/// ends, whatever the test found.
struct Driver(std::process::Child, PathBuf);

impl Drop for Driver {
    fn drop(&mut self) {
        use std::os::unix::fs::OpenOptionsExt;
        // (Non-blocking: with no hook waiting there is no reader, and the open fails.)
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&self.1);
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// opencode's calls of orange's plugin, as node runs them (`driver.mjs` beside the plugin,
/// `orange.mjs`): a turn with a tool, a permission and a question, queued behind the first
/// hook; then, after a line on standard input, the answer and the states that follow it.
const PLUGIN_DRIVER: &str = r#"import { OrangePlugin } from "./orange.mjs"
import { writeFileSync } from "node:fs"
import { createInterface } from "node:readline"
const h = await OrangePlugin({ client: { session: { promptAsync: async () => {} } } })
const s = "ses_orange"
const ev = (type, properties) => h.event({ event: { type, properties } })
const status = (type) => ev("session.status", { sessionID: s, status: { type } })
const tool = (when, name) => h["tool.execute." + when]({ tool: name, sessionID: s }, {})
await ev("session.created", { info: { id: s } })
await status("busy")
await h["chat.message"]({ sessionID: s }, { parts: [{ type: "text", text: "write the file" }] })
await tool("before", "write")
await tool("after", "write")
await status("busy")
await status("idle")
await ev("session.idle", { sessionID: s })
await ev("permission.asked", { sessionID: s, permission: "bash", patterns: ["ls"] })
await tool("before", "bash")
await ev("permission.replied", { sessionID: s, reply: "once" })
await status("busy")
await status("idle")
await ev("session.idle", { sessionID: s })
await ev("question.asked", { sessionID: s, questions: [{ question: "Which color?" }] })
writeFileSync("queued", "")
const lines = createInterface({ input: process.stdin })
for await (const _ of lines) break
lines.close()
process.stdin.destroy()
await ev("question.replied", { sessionID: s })
await status("busy")
await tool("before", "read")
await status("idle")
await status("busy")
"#;
