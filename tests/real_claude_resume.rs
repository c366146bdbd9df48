//! The real Claude Code's resume dialog ("This session is 3h old and 150k tokens." —
//! *Resume from summary (instant, recommended)* / *Resume full session as-is* / *Don't ask
//! again*), opened by the pinned claude itself on `task respawn`, offline against the
//! stand-in Messages API (tests/real_claude/ has the rig).
//!
//! Claude Code 2.1.330 opens it when resumed WITHOUT a prompt (orange then holds the
//! respawn prompt and types it once claude is idle), when the conversation's last message
//! is older than 70 minutes and its context is at least 100 000 tokens, and only behind
//! three feature flags (`tengu_gleaming_fair_reuse`, `tengu_amber_packet`,
//! `tengu_sepia_moth`) with a compaction summary it precomputed on disk. Offline, the
//! flags come from its own disk cache (`cachedGrowthBookFeatures` in `~/.claude.json`),
//! which it reads with `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` only when
//! `CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF=1`. What a test stands in for, in the
//! private HOME only: the time that passed (the transcript's timestamps moved back 3
//! hours), the server's flags, and the summary an earlier run would have precomputed
//! (`<conversation>.precompact.json`, its format as 2.1.330 reads it). The context's size
//! is what the stand-in's answer reported (its usage: 150 000 tokens read from the cache).

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;
use crate::real_claude::{claude_installed, claude_with, is_root, Home, Rig, PATIENCE};

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::standin::Reply;
use serde_json::{json, Value};

/// How long a test watches for something that must NOT happen: several monitor passes.
const GRACES: Duration = Duration::from_secs(3);
/// What the first answer asks claude to keep: found in a turn only when the whole
/// conversation was sent again ("Resume full session as-is").
const FIRST_ANSWER: &str = "First answer: remember the word PAPAYA.";
/// The precomputed summary's text: found in a turn only when claude resumed from it.
const SUMMARY: &str = "Summary so far: the person asked claude to keep a fruit in mind.";

/// The dialog's last choice: on claude's screen while it asks.
const DIALOG: &str = "Resume full session as-is";

/// A task whose claude ended its first turn in a conversation of 150 000 tokens, exited,
/// and was respawned 3 hours later (as far as claude can tell): the dialog on its screen.
/// `resume`: `[harness.claude] resume` in config.toml, if any.
fn respawned_to_the_dialog(test: &'static str, resume: Option<&str>) -> (Rig, String) {
    let rig = claude_with(
        test,
        Home::SET_UP,
        vec![
            Reply::context(150_000, Reply::text(FIRST_ANSWER)),
            Reply::text("Going on with the task."),
        ],
        &[("CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF", "1")],
        is_root(),
    );
    if let Some(r) = resume {
        let cfg = format!("[harness.claude]\nresume = \"{r}\"\n");
        std::fs::write(rig.env.home.join("config.toml"), cfg).unwrap();
    }
    let id = rig.create(&format!("real/{test}"), "Remember a word");
    let conv = rig.conversation(&id);
    let sent = rig.api.wait_sent(0, PATIENCE).unwrap();
    rig.status_since("end of turn", &id, "waiting for input", sent);
    rig.keys(&id, &["-l", "/exit"]);
    rig.screen_shows(&id, "/exit");
    rig.keys(&id, &["Enter"]);
    rig.status_shows("/exit", &id, "exited 0");
    let log = orange::execution::harness::claude::paths::log_path_in(
        &rig.home.join(".claude"),
        &rig.workspace(&id),
        &conv,
    );
    three_hours_ago(&log);
    precomputed_summary(&log, &conv);
    flags_on(&rig.home);
    rig.env.ok(&["task", "respawn", &id]);
    let argv = rig.agent_argv(&id);
    assert!(
        argv.windows(2).any(|w| w[0] == "--resume" && w[1] == conv),
        "{argv:?}"
    );
    assert!(
        !argv.iter().any(|a| a.contains("Resuming:")),
        "resumed without its prompt (else claude never asks): {argv:?}"
    );
    rig.screen_shows(&id, DIALOG);
    (rig, id)
}

/// The transcript's lines as claude would find them 3 hours later.
fn three_hours_ago(log: &Path) {
    let text = std::fs::read_to_string(log).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let mut v: Value = serde_json::from_str(line).unwrap();
        if let Some(t) = v["timestamp"]
            .as_str()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        {
            let then = t - chrono::Duration::hours(3);
            v["timestamp"] = json!(then.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
        }
        out.push_str(&format!("{v}\n"));
    }
    std::fs::write(log, out).unwrap();
}

/// The summary claude precomputes for a long conversation (behind its flags), beside its
/// transcript as 2.1.330 reads it back (`<id>.precompact.json`, version 7): made for this
/// conversation, this claude, up to its last answer.
fn precomputed_summary(log: &Path, conv: &str) {
    let text = std::fs::read_to_string(log).unwrap();
    let last = text
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "assistant")
        .expect("the first answer in the transcript");
    let summary = json!({
        "version": 7,
        "sessionId": conv,
        "agentKey": "main",
        "model": last["message"]["model"],
        "cliVersion": claude_version(),
        "createdAt": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "precomputedAtUuid": last["uuid"],
        "preCompactTokens": 150_000,
        "readyDurationMs": 1000,
        "summaryText": SUMMARY,
        "summaryMessages": [{
            "type": "user",
            "uuid": "00000000-0000-4000-8000-000000000001",
            "isCompactSummary": true,
            "isVisibleInTranscriptOnly": true,
            "message": {"role": "user", "content": SUMMARY},
        }],
        "preserveUuids": [],
        "attempt": 1,
        "groupsPreserved": 0,
        "totalGroups": 1,
        "forkAssistantMessageCount": 0,
        "totalUsage": {"input_tokens": 1, "output_tokens": 1},
    });
    let path = PathBuf::from(format!(
        "{}.precompact.json",
        log.display().to_string().trim_end_matches(".jsonl")
    ));
    std::fs::write(path, summary.to_string()).unwrap();
}

/// `claude --version`'s number (the summary says which claude made it).
fn claude_version() -> String {
    let out = std::process::Command::new("claude")
        .arg("--version")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_string()
}

/// The three server flags behind the dialog, in claude's own cache of them.
fn flags_on(home: &Path) {
    let file = home.join(".claude.json");
    let mut cfg: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    cfg["cachedGrowthBookFeatures"] = json!({
        "tengu_gleaming_fair_reuse": true,
        "tengu_amber_packet": true,
        "tengu_sepia_moth": true,
    });
    std::fs::write(&file, serde_json::to_vec_pretty(&cfg).unwrap()).unwrap();
}

/// The turn after the dialog: the respawn prompt orange held, typed once claude was
/// idle; its body as the stand-in received it.
fn next_turn(rig: &Rig, id: &str) -> String {
    rig.wait_turns(id, 2);
    let body = rig.api.turns()[1].body.to_string();
    assert!(
        rig.api.turns()[1].last_user_text().contains("Resuming:"),
        "the held respawn prompt: {body}"
    );
    let sent = rig.api.wait_sent(1, PATIENCE).unwrap();
    rig.status_since("resumed → end of turn", id, "waiting for input", sent);
    let typed = rig.history(id, "message.sent");
    assert_eq!(typed.len(), 1, "{typed:?}");
    assert_eq!(typed[0]["kind"], "resume", "{typed:?}");
    body
}

#[test]
fn the_real_resume_dialog_is_blocked_and_left_to_the_person_by_default() {
    if !claude_installed() {
        return;
    }
    let (rig, id) = respawned_to_the_dialog("resume_ask", None);
    let shown = Instant::now();
    rig.status_since("resume dialog", &id, "resume choice", shown);
    let t = rig.task(&id);
    assert_eq!(t["agent"]["state"], "blocked", "{t}");
    assert_eq!(t["agent"]["blocker"], "resume_choice", "{t}");
    assert!(
        t["agent"]["detail"].as_str().unwrap().contains("resume ="),
        "{t}"
    );
    let explain = rig.explain(&id);
    assert!(explain.contains("resume choice"), "{explain}");
    // `task send` refuses to type into it.
    let out = rig
        .env
        .cmd_in(&rig.env.repo, &["task", "send", &id, "hello"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("agent_not_ready"), "{said}");
    // Something that must NOT happen: for 3 s (several monitor passes), the dialog stays,
    // nothing answers it and nothing reaches the model (the held prompt waits).
    common::holds_for("the dialog, untouched", GRACES, || {
        rig.screen(&id).contains(DIALOG)
            && rig.api.turns().len() == 1
            && rig.history(&id, "agent.answered").is_empty()
    });
    let held = rig.task(&id)["held"].clone();
    assert_eq!(held.as_array().map_or(0, Vec::len), 1, "{held}");
    // The person answers (Enter: the focused first choice, from summary): the held
    // respawn prompt follows.
    rig.keys(&id, &["Enter"]);
    let body = next_turn(&rig, &id);
    assert!(body.contains(SUMMARY), "{body}");
    assert!(!body.contains(FIRST_ANSWER), "{body}");
    assert!(rig.history(&id, "agent.answered").is_empty());
}

#[test]
fn resume_full_answers_the_real_dialog_once_and_the_whole_conversation_goes_on() {
    if !claude_installed() {
        return;
    }
    let (rig, id) = respawned_to_the_dialog("resume_full", Some("full"));
    let body = next_turn(&rig, &id);
    assert!(
        body.contains(FIRST_ANSWER),
        "the whole conversation: {body}"
    );
    assert!(!body.contains(SUMMARY), "{body}");
    let answered = rig.history(&id, "agent.answered");
    assert_eq!(answered.len(), 1, "{answered:?}");
    assert_eq!(answered[0]["choice"], "full");
}

#[test]
fn resume_summary_answers_the_real_dialog_once_and_goes_on_from_the_summary() {
    if !claude_installed() {
        return;
    }
    let (rig, id) = respawned_to_the_dialog("resume_summary", Some("summary"));
    let body = next_turn(&rig, &id);
    assert!(body.contains(SUMMARY), "from the summary: {body}");
    assert!(!body.contains(FIRST_ANSWER), "{body}");
    let answered = rig.history(&id, "agent.answered");
    assert_eq!(answered.len(), 1, "{answered:?}");
    assert_eq!(answered[0]["choice"], "summary");
}
