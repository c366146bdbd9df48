//! Every screen captured from the real Claude Code 2.1 (tests/fixtures/claude/screens/,
//! `capture-pane -p -J` of a private tmux server) is classified as what it is: a file's
//! name says what it shows. A new capture without a rule here fails the test.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use orange::orchestration::agent::Blocker;
use orange::orchestration::screen::{self, Screen};

fn expected(name: &str) -> Option<Result<Blocker, ()>> {
    let rules: &[(&str, Option<Result<Blocker, ()>>)] = &[
        ("root-refusal", Some(Ok(Blocker::RootRefusal))),
        ("firstrun-", Some(Ok(Blocker::Onboarding))),
        ("trust-folder", Some(Ok(Blocker::FolderTrust))),
        ("bypass-warning", Some(Ok(Blocker::BypassWarning))),
        ("api-key", Some(Ok(Blocker::ApiKey))),
        ("resume-dialog", Some(Ok(Blocker::ResumeChoice))),
        ("not-logged-in", Some(Ok(Blocker::Login))),
        ("approval", Some(Ok(Blocker::Approval))),
        ("tool-approval", Some(Ok(Blocker::Approval))),
        ("retrying-", Some(Err(()))),
        ("idle-", None),
        ("working-", None),
        ("exit", None),
        ("auto-mode-notice", None),
        ("question", None),
        // The turn's final error is read from the transcript and the hooks, not the screen.
        ("error-", None),
        // Auto mode asks the person to approve what its server-side check cannot.
        ("auto-mode-cant-check", Some(Ok(Blocker::Approval))),
    ];
    rules
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|(_, e)| *e)
        .unwrap_or_else(|| panic!("screens/{name}: no rule says what it shows"))
}

#[test]
fn every_captured_screen_is_classified_as_what_it_shows() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude/screens");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let got = screen::classify("claude", &text);
        match expected(&name) {
            Some(Ok(b)) => assert!(
                matches!(&got, Some(Screen::Blocked(x, _)) if *x == b),
                "{name}: expected blocked by {b:?}, got {got:?}"
            ),
            Some(Err(())) => assert!(
                matches!(&got, Some(Screen::Retrying(d)) if d.contains("attempt")),
                "{name}: expected retrying, got {got:?}"
            ),
            None => assert_eq!(got, None, "{name}"),
        }
        // Another harness's screen is never read with Claude Code's dialogs.
        if !matches!(got, Some(Screen::Retrying(_))) {
            assert_eq!(screen::classify("pi", &text), None, "{name}");
        }
        seen += 1;
    }
    assert!(seen >= 10, "only {seen} screens captured");
}
