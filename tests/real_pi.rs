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

use std::path::Path;
use std::time::{Duration, Instant};

use common::chat_standin::{self, ChatStandIn, Reply};
use common::rig::{self, AgentRig, Spec};
use common::Env;
use serde_json::{json, Value};

/// A bound on a hang, not a measure: pi takes seconds to start on this 2-core machine.
const PATIENCE: Duration = Duration::from_secs(90);

/// One real pi at a time (they are slow to start; see other_harnesses/mod.rs).
static SLOT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The rig of these tests (tests/common/rig.rs) with the chat completions stand-in.
type Rig = AgentRig<ChatStandIn>;

fn pi_installed() -> bool {
    rig::installed("pi")
}

/// pi's agent directory in `home` (its HOME, `~/.pi/agent`): with `url`, the stand-in
/// there as its provider and default model (None: no provider, no credentials at all, as
/// on a machine nobody logged in on); `retry`: pi's `retry` settings. The environment pi
/// needs besides HOME: no update check, no telemetry.
pub(crate) fn pi_home(
    home: &Path,
    url: Option<&str>,
    retry: Option<Value>,
) -> Vec<(&'static str, String)> {
    let agent = home.join(".pi/agent");
    std::fs::create_dir_all(&agent).unwrap();
    if let Some(url) = url {
        std::fs::write(
            agent.join("models.json"),
            json!({"providers": {"standin": {
                "baseUrl": url, "api": "openai-completions", "apiKey": "standin-key",
                "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
                "models": [{"id": chat_standin::MODEL}]
            }}})
            .to_string(),
        )
        .unwrap();
    }
    let mut settings = json!({"defaultProvider": "standin", "defaultModel": chat_standin::MODEL,
        "enableInstallTelemetry": false, "quietStartup": true});
    if let Some(retry) = retry {
        settings["retry"] = retry;
    }
    std::fs::write(agent.join("settings.json"), settings.to_string()).unwrap();
    vec![
        ("PI_OFFLINE", "1".into()),
        ("PI_SKIP_VERSION_CHECK", "1".into()),
        ("PI_TELEMETRY", "0".into()),
    ]
}

/// A rig with the real pi. `models`: pi's agent directory has the stand-in as its
/// provider (else none: no credentials at all). `retry`: pi's `retry` settings.
fn pi(test: &'static str, script: Vec<Reply>, models: bool, retry: Value) -> Rig {
    let slot = SLOT.lock().unwrap_or_else(|e| e.into_inner());
    let base = Env::new();
    let home = base.root().join("pi-home");
    let api = ChatStandIn::start(script);
    let url = api.base_url();
    let mut extra = pi_home(&home, models.then_some(url.as_str()), Some(retry));
    extra.push(("HOME", home.display().to_string()));
    // Fault injection: `drop_events` breaks pi's channel mid-turn.
    let drop_at = base.root().join("drop-at").display().to_string();
    extra.push(("ORANGE_DROP_AT_FILE", drop_at));
    let env = rig::agent_env(base, &extra, &[]);
    AgentRig::start(Spec {
        test,
        agent: "pi",
        patience: PATIENCE,
        slot: Some(slot),
        env,
        api,
        home,
    })
}

/// From now on orange drops every event pi's channel sends (a broken extension);
/// `false`: hears them again.
fn drop_events(rig: &Rig, drop: bool) {
    let f = rig.env.env.root().join("drop-at");
    if drop {
        std::fs::write(f, "hook.agent").unwrap();
    } else {
        std::fs::remove_file(f).unwrap();
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
    let rig = pi(
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
    let line = rig.status_since("working (turn in progress)", &id, "working", asked);
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
    rig.status_since("end of turn", &id, "waiting for input", sent);
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
    rig.status_since("/quit", &id, "exited 0", typed);
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
    let rig = pi("pi-prompts", vec![], true, no_retry());
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
    let rig = pi(
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
    rig.status_since("503: retrying", &id, "retrying", first);
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
    let shown = Instant::now();
    let gave_up = rig.api.sent_at(4).expect("the last error was sent");
    rig.record_now(
        &id,
        "500: error after the last retry",
        shown.saturating_duration_since(gave_up),
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
    let rig = pi(
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
    rig.status_since("kill -9", &id, "killed (signal 9)", killed);
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
    let rig = pi("pi-login", vec![], false, no_retry());
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
    let rig = pi(
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
    drop_events(&rig, true);
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
    drop_events(&rig, false);
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
