//! Property tests (proptest) of every parser that reads what agents or users can write:
//! TASK.md sections, history.jsonl, Claude JSONL lines, config.toml, the pool and lane
//! registries. None may panic, whatever the input; state files that do not parse are
//! `state_corrupt`, never an empty state.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use orange::{
    adapters::store, execution::config::Config, execution::pool, orchestration::agent,
    orchestration::lane, orchestration::task,
};
use proptest::prelude::*;

/// Arbitrary text biased towards the characters these formats care about.
fn texty() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        proptest::collection::vec(
            prop_oneof![
                Just("## ".to_string()),
                Just("# ".to_string()),
                Just("\n".to_string()),
                Just("{".to_string()),
                Just("}".to_string()),
                Just("\"".to_string()),
                Just(":".to_string()),
                Just("[".to_string()),
                Just("]".to_string()),
                Just("=".to_string()),
                Just("\\".to_string()),
                Just("null".to_string()),
                Just("\"type\":\"assistant\"".to_string()),
                Just("\"stop_reason\":".to_string()),
                Just("\"content\":[".to_string()),
                Just("\"error\":".to_string()),
                Just("[harness.x]".to_string()),
                Just("command = ".to_string()),
                "[a-z ]{0,8}".prop_map(|s| s),
                any::<char>().prop_map(|c| c.to_string()),
            ],
            0..40,
        )
        .prop_map(|v| v.concat()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn task_md_sections_never_panic(text in texty(), name in "[A-Za-z ]{0,12}") {
        let _ = task::task_md_section(&text, &name);
        let body = task::task_md_body(&text);
        prop_assert!(body.len() <= text.len());
    }

    #[test]
    fn task_md_round_trips_any_context(summary in any::<String>(), context in any::<String>()) {
        let md = task::task_md(&summary, Some(&context));
        let plain = !context.contains('\r') && !context.lines().any(|l| l.starts_with("## "));
        if plain && !context.trim().is_empty() {
            prop_assert_eq!(task::task_md_section(&md, "Context").unwrap(), context.trim().to_string());
        }
    }

    #[test]
    fn history_lines_never_panic(text in texty()) {
        let events = task::parse_history(&text);
        prop_assert!(events.len() <= text.lines().count());
    }

    #[test]
    fn claude_log_lines_never_panic(text in texty()) {
        let _ = agent::state_of_log(&text);
        for line in text.lines() {
            let _ = agent::state_of_line(line);
        }
        let _ = agent::classify_error(&text);
    }

    #[test]
    fn config_toml_never_panics(text in texty()) {
        let _ = Config::parse(&text);
    }

    #[test]
    fn state_files_parse_or_are_state_corrupt(bytes in proptest::collection::vec(any::<u8>(), 0..200), text in texty()) {
        let dir = tempfile::tempdir().unwrap();
        for (i, content) in [bytes, text.into_bytes()].into_iter().enumerate() {
            let p = dir.path().join(format!("state-{i}.json"));
            std::fs::write(&p, &content).unwrap();
            let errors = [
                store::read_json::<pool::PoolFile>(&p).err(),
                store::read_json::<lane::Registry>(&p).err(),
                store::read_json::<orange::orchestration::project::Registry>(&p).err(),
            ];
            for e in errors.into_iter().flatten() {
                prop_assert_eq!(e.code(), "state_corrupt");
                prop_assert!(e.to_string().contains(p.to_str().unwrap()));
            }
        }
    }
}
