//! Every canonical error code of DESIGN.md is triggered through the CLI by some test:
//! this test fails when a code has no `err(&[…], "<code>")` assertion anywhere in tests/.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

#[test]
fn every_canonical_error_code_is_triggered_by_a_cli_test() {
    let design = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/DESIGN.md");
    let codes: Vec<String> = match std::fs::read_to_string(&design) {
        // The list as DESIGN.md has it, when shared/ is beside the checkout.
        Ok(text) => {
            let start = text
                .find("Canonical error codes")
                .expect("DESIGN.md lists the codes");
            text[start..]
                .split("\n\n")
                .next()
                .unwrap()
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect()
        }
        Err(_) => [
            "project_not_found",
            "task_not_found",
            "lane_not_found",
            "workspace_not_found",
            "pool_exhausted",
            "worktree_dirty",
            "lane_running",
            "invalid_transition",
            "invalid_argument",
            "backend_not_found",
            "backend_command_failed",
            "state_corrupt",
            "lock_timeout",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
    };
    assert!(codes.len() >= 13, "{codes:?}");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut sources = String::new();
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "rs") && e.file_name() != "error_codes.rs" {
            sources.push_str(&std::fs::read_to_string(e.path()).unwrap());
        }
    }
    let missing: Vec<&String> = codes
        .iter()
        .filter(|c| {
            let quoted = format!("\"{c}\"");
            // An assertion on a CLI result: env.err(…, "code") or v["error"]["code"] == "code".
            !sources.match_indices(&quoted).any(|(i, _)| {
                let before = &sources[i.saturating_sub(200)..i];
                before.contains(".err(") || before.contains("[\"code\"]")
            })
        })
        .collect();
    assert!(missing.is_empty(), "no CLI test triggers: {missing:?}");
}
