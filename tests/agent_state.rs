//! Agent state from Claude Code session logs: one fixture per state and error kind
//! (tests/fixtures/claude/<expected>.<case>.jsonl).

use orange::agent::{self, ErrorKind, LogState};

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
    let (tail, len) = agent::read_log_tail(&p).unwrap();
    assert!(tail.len() <= 64 * 1024 && len as usize > tail.len());
    assert_eq!(
        agent::state_of_log(&tail),
        Some(LogState::Waiting { question: None })
    );
}
