//! What blocks or stops claude, and what orange says: API errors, first-run screens, an
//! untrusted repository, no network, root without IS_SANDBOX, a rejected API key.

use crate::common;

use std::path::PathBuf;
use std::time::Instant;

use common::standin::Reply;
use serde_json::{json, Value};

use super::{
    claude, claude_installed, claude_with, id_of, is_root, Home, Rig, GRACES, KEY, PATIENCE,
};

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
