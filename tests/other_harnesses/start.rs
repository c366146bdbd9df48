//! How each harness starts: a summary starting with a dash is the prompt, no prompt
//! starts its interface, and the first prompt typed there becomes the task's summary.

use crate::common;

use std::time::{Duration, Instant};

use serde_json::Value;

use super::{excerpt, Run};

/// No summary, so no prompt: the program starts its interactive interface (the flags
/// orange adds are accepted) and waits for the person; orange sees it live, and dead once
/// the test ends it.
fn without_a_prompt(harness: &'static str) {
    let Some(run) = Run::new(harness) else { return };
    let branch = format!("{harness}/tui");
    // Recorded without a summary (--no-spawn), then started: no prompt.
    let v = run.env.ok(&[
        "task",
        "create",
        &branch,
        "--harness",
        harness,
        "--no-spawn",
    ]);
    let id = v["id"].as_str().unwrap().to_string();
    let v = run.env.ok(&["task", "spawn", &id]);
    assert_eq!(v["status"], "working", "{v}");
    // Up and drawing for 3 s (a rejected flag exits at once with a usage message).
    let start = Instant::now();
    let screen = loop {
        let t = run.env.task(&id);
        let screen = run.peek(&id);
        assert_ne!(
            t["session"]["state"], "dead",
            "{harness} without a prompt exited at once: {}; its screen:\n{screen}",
            t["session"]
        );
        if start.elapsed() >= Duration::from_secs(3) && !screen.trim().is_empty() {
            break screen;
        }
        assert!(
            start.elapsed() < run.patience(),
            "{harness} drew nothing in {:?}",
            run.patience()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    for refusal in [
        "unexpected argument",
        "Unknown option",
        "unknown option",
        "Usage:",
    ] {
        assert!(
            !screen.contains(refusal),
            "{harness} refused its arguments:\n{screen}"
        );
    }
    eprintln!("{harness} without a prompt, after 3 s:\n{screen}");
    run.assert_live(&id);
    run.kill(&id);
    run.assert_dead(&id, false, 1);
    run.finish();
}

/// Created without a summary: the person types the first prompt into the program's own
/// interface; the program sends it to the model, writes it down, and orange's monitor reads
/// it back as the summary (`summary.changed`, via the transcript).
fn first_typed_prompt(harness: &'static str) {
    let Some(run) = Run::new(harness) else { return };
    let v = run.env.ok(&[
        "task",
        "create",
        &format!("{harness}/typed"),
        "--harness",
        harness,
    ]);
    let id = v["id"].as_str().unwrap().to_string();
    assert_eq!(v["awaiting_prompt"], true, "{v}");
    let pane = v["tmux_pane_id"].as_str().unwrap().to_string();
    // Its interface is up (codex: in the repository whose trust orange recorded).
    if harness == "codex" {
        common::wait_for("codex's prompt field", 30, || {
            let screen = run.peek(&id);
            screen.contains("Ask Codex") && !screen.contains("Trust this folder")
        });
    } else {
        // pi shows its model's id, opencode the name its config gives it ("standin").
        let mut screen = String::new();
        common::poll(run.patience(), || {
            screen = run.peek(&id);
            screen
                .contains(if harness == "pi" {
                    common::chat_standin::MODEL
                } else {
                    "standin"
                })
                .then_some(())
        })
        .unwrap_or_else(|| panic!("{harness} never drew its interface:\n{screen}"));
    }
    run.env
        .tmux
        .ok(&["send-keys", "-t", &pane, "-l", "Fix the login form"]);
    common::wait_for("the typed prompt on screen", 10, || {
        run.peek(&id).contains("Fix the login form")
    });
    run.env.tmux.ok(&["send-keys", "-t", &pane, "Enter"]);
    run.wait_request(&id, "Fix the login form", "the typed prompt");
    // The model answers (an error): pi writes its session then.
    run.stub.release();
    let mut t = Value::Null;
    common::wait_for("the typed prompt to become the summary", 30, || {
        run.env.ok(&["monitor", "--once"]);
        t = run.env.task(&id);
        t["summary"] == "Fix the login form"
    });
    assert!(t.get("awaiting_prompt").is_none(), "{t}");
    let changed: Vec<&Value> = t["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "summary.changed")
        .collect();
    assert_eq!(changed.len(), 1, "{t}");
    // codex's UserPromptSubmit hook and opencode's plugin tell it first; pi's session file.
    let via = if harness == "pi" {
        "transcript"
    } else {
        "hook"
    };
    assert_eq!(changed[0]["via"], via, "{t}");
    run.kill(&id);
    run.finish();
}

/// A summary that starts with `-` is still the prompt: the program must not parse it as
/// one of its options (all three refuse to start on `pi -p "--version …"`, `codex exec …
/// "--version …"`, `opencode --prompt "--version …"`; codex takes `--` before the prompt,
/// opencode's is glued (`--prompt=--version …`), pi has no `--` (a leading space works)).
fn dash_summary(harness: &'static str) {
    let Some(run) = Run::new(harness) else { return };
    let branch = format!("{harness}/dash");
    let summary = format!("--version {}", run.marker);
    let v = run
        .env
        .ok(&["task", "create", &branch, &summary, "--harness", harness]);
    assert_eq!(v["summary"], summary.as_str(), "{v}");
    let id = v["id"].as_str().unwrap().to_string();
    let req = run.wait_request(&id, &run.marker, "a prompt that starts with '-'");
    assert!(
        req.body.contains(&summary),
        "the summary reaches the model verbatim: {}",
        excerpt(&req.body, &run.marker)
    );
    run.end(&id);
    run.env.wait_session(&id, "dead");
    run.finish();
}

#[test]
fn pi_a_summary_starting_with_a_dash_is_the_prompt() {
    dash_summary("pi");
}

#[test]
fn codex_a_summary_starting_with_a_dash_is_the_prompt() {
    dash_summary("codex");
}

#[test]
fn opencode_a_summary_starting_with_a_dash_is_the_prompt() {
    dash_summary("opencode");
}

#[test]
fn pi_without_a_prompt_starts_interactively() {
    without_a_prompt("pi");
}

#[test]
fn codex_without_a_prompt_starts_interactively() {
    without_a_prompt("codex");
}

#[test]
fn opencode_without_a_prompt_starts_interactively() {
    without_a_prompt("opencode");
}

#[test]
fn pi_the_first_typed_prompt_becomes_the_summary() {
    first_typed_prompt("pi");
}

#[test]
fn codex_the_first_typed_prompt_becomes_the_summary() {
    first_typed_prompt("codex");
}

#[test]
fn opencode_the_first_typed_prompt_becomes_the_summary() {
    first_typed_prompt("opencode");
}
