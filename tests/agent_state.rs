//! Agent state from Claude Code session logs: one fixture per state and error kind
//! (tests/fixtures/claude/<expected>.<case>.jsonl).

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use orange::orchestration::agent::{self, ErrorKind, LogState};

fn expected(name: &str) -> &str {
    name.split('.').next().unwrap()
}

#[test]
fn every_fixture_log_gives_its_state() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if !path.is_file() {
            continue; // screens/, hooks/, transcripts/: see tests/claude_screens.rs
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let got = agent::state_of_log(&text);
        let case = name.trim_end_matches(".jsonl");
        match expected(&name) {
            "working" => assert!(
                matches!(got, Some(LogState::Working { .. })),
                "{case}: {got:?}"
            ),
            "waiting" => assert!(
                matches!(got, Some(LogState::Waiting { .. })),
                "{case}: {got:?}"
            ),
            "unknown" => assert_eq!(got, None, "{case}"),
            "error" => {
                let kind = match case.split('.').nth(1).unwrap() {
                    "unauthorized" => ErrorKind::Unauthorized,
                    "out_of_credits" => ErrorKind::OutOfCredits,
                    "rate_limited" => ErrorKind::RateLimited,
                    "overloaded" => ErrorKind::Overloaded,
                    "server" => ErrorKind::Server,
                    "no_network" => ErrorKind::NoNetwork,
                    _ => ErrorKind::Other,
                };
                match got {
                    Some(LogState::Error(k, _)) => assert_eq!(k, kind, "{case}"),
                    other => panic!("{case}: expected an error, got {other:?}"),
                }
            }
            other => panic!("fixture {name} has no expected state ({other})"),
        }
        seen += 1;
    }
    assert!(seen >= 16, "only {seen} fixtures");
}

#[test]
fn a_missing_log_is_unknown_and_a_large_log_is_read_from_its_tail() {
    assert!(agent::read_log_tail(std::path::Path::new("/nonexistent/x.jsonl")).is_none());
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.jsonl");
    let filler = "{\"type\":\"user\",\"message\":{\"content\":\"x\"}}\n".repeat(5000);
    let last = "{\"type\":\"assistant\",\"message\":{\"stop_reason\":\"end_turn\",\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}}\n";
    std::fs::write(&p, format!("{filler}{last}")).unwrap();
    let (tail, start) = agent::read_log_tail(&p).unwrap();
    assert!(tail.len() <= 64 * 1024);
    assert_eq!(
        start + tail.len() as u64,
        std::fs::metadata(&p).unwrap().len()
    );
    assert_eq!(
        agent::state_of_log(&tail),
        Some(LogState::Waiting { question: None })
    );
}

fn fixture(rel: &str) -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/claude")
            .join(rel),
    )
    .unwrap()
}

/// Hook payloads captured from the real Claude Code 2.1.330 (tests/fixtures/claude/hooks/).
#[test]
fn real_hook_payloads_say_what_happened() {
    use orange::orchestration::agent::{Blocker, State};
    let says = |f: &str| {
        let file = std::fs::read_dir(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude/hooks"),
        )
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with(f))
        .unwrap_or_else(|| panic!("no hooks/{f}*"));
        let payload: serde_json::Value =
            serde_json::from_str(&fixture(&format!("hooks/{file}"))).unwrap();
        let event = payload["hook_event_name"].as_str().unwrap().to_string();
        agent::state_of_hook(&event, &payload)
    };
    for (file, kind) in [
        ("StopFailure-401", ErrorKind::Unauthorized),
        ("StopFailure-429", ErrorKind::RateLimited),
        ("StopFailure-500", ErrorKind::Server),
        ("StopFailure-529", ErrorKind::Overloaded),
        // `server_error` is Claude Code's code for these too: the message decides.
        ("StopFailure-connection-refused", ErrorKind::NoNetwork),
        ("StopFailure-timeout", ErrorKind::NoNetwork),
    ] {
        let s = says(file).unwrap();
        assert_eq!((s.state, s.error), (State::Error, Some(kind)), "{file}");
        assert!(s.detail.unwrap().len() > 10, "{file}: the message is kept");
    }
    let p = says("Notification-permission_prompt").unwrap();
    assert_eq!(
        (p.state, p.blocker),
        (State::Blocked, Some(Blocker::Approval))
    );
    let p = says("PermissionRequest").unwrap();
    assert_eq!(
        (p.state, p.blocker),
        (State::Blocked, Some(Blocker::Approval))
    );
    assert_eq!(
        says("Notification-idle_prompt").unwrap().state,
        State::Waiting
    );
    assert_eq!(says("SessionStart-bypass").unwrap().state, State::Waiting);
    assert_eq!(
        says("UserPromptSubmit-bypass").unwrap().state,
        State::Working
    );
    assert!(says("PreToolUse-bypass").unwrap().progress);
    assert_eq!(says("Stop-bypass").unwrap().state, State::Waiting);
    assert!(says("SubagentStop").is_none());
    assert_eq!(says("SessionStart-resume").unwrap().state, State::Waiting);
    let compact = serde_json::json!({"hook_event_name": "SessionStart", "source": "compact"});
    assert!(agent::state_of_hook("SessionStart", &compact).is_none());
    let auto = says("Notification-agent_needs_input").unwrap();
    assert_eq!(
        (auto.state, auto.blocker),
        (State::Blocked, Some(Blocker::Approval))
    );
    assert!(says("SessionEnd-exit").is_none());
}

/// Transcripts of the real Claude Code 2.1.330 after an API error (retries exhausted):
/// the status and the message decide the kind, the message is the detail.
#[test]
fn real_transcripts_of_api_errors() {
    for (file, kind, code) in [
        ("error-401-max-retries-0", ErrorKind::Unauthorized, "401"),
        ("error-429-max-retries-0", ErrorKind::RateLimited, "429"),
        ("error-500-max-retries-0", ErrorKind::Server, "500"),
        ("error-529-max-retries-0", ErrorKind::Overloaded, "529"),
        ("error-529-after-10-retries", ErrorKind::Overloaded, "529"),
        ("error-401-after-10-retries", ErrorKind::Unauthorized, "401"),
        (
            "error-connection-refused",
            ErrorKind::NoNetwork,
            "onnection",
        ),
        ("error-timeout", ErrorKind::NoNetwork, "timed out"),
    ] {
        match agent::state_of_log(&fixture(&format!("transcripts/{file}.jsonl"))) {
            Some(LogState::Error(k, m)) => {
                assert_eq!(k, kind, "{file}: {m}");
                assert!(
                    m.contains(code) || k == ErrorKind::Unauthorized,
                    "{file}: {m}"
                );
            }
            other => panic!("{file}: {other:?}"),
        }
    }
    // Esc during a tool: the turn ended (no Stop hook fires for it).
    let got = agent::state_of_log(&fixture("transcripts/interrupted-esc-during-tool.jsonl"));
    assert!(matches!(got, Some(LogState::Waiting { .. })), "{got:?}");
    // Esc while the request waits writes nothing: the transcript cannot tell it from a
    // request in flight (the monitor asks ~/.claude/sessions/<pid>.json then).
    let got = agent::state_of_log(&fixture(
        "transcripts/slow-then-interrupted-esc-during-request.jsonl",
    ));
    assert!(matches!(got, Some(LogState::Working { .. })), "{got:?}");
    // A finished turn, a /exit and a resume: the last turn ended (waiting), whatever
    // bookkeeping lines follow it.
    assert!(matches!(
        agent::state_of_log(&fixture("transcripts/tool-approval-then-approved.jsonl")),
        Some(LogState::Waiting { .. })
    ));
}
