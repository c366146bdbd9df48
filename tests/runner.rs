//! The one integration test binary (`autotests = false` in Cargo.toml): every file of
//! tests/ is a module here, so the crate and its test dependencies are linked once, not
//! once per file. Run one file's tests with `cargo test --test runner status::`, one test
//! with `cargo test --test runner status::hooks_poke_the_sidebars`.
//!
//! The files share one process: no test may change the process's environment or working
//! directory (pass them to the commands it runs instead).

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

mod common;

mod agent_state;
mod bad_input;
mod cgroup_faults;
mod chat_standin;
mod claude_screens;
mod cli;
mod declared_states;
mod error_codes;
mod failures;
mod first_hour;
mod fleet;
mod fuzz_parsers;
mod group;
mod group_faults;
mod hostile_text;
mod kill_loop;
mod lane;
mod layers;
mod limits;
mod monitor;
mod next_step;
mod no_prompt;
mod notify;
mod observer;
mod other_harnesses;
mod plugin;
mod pool;
mod pool_concurrency;
mod pr;
mod progress;
mod project;
mod pty_layer;
mod readme;
mod real_claude;
mod real_claude_osc;
mod real_claude_resume;
mod real_codex;
mod real_opencode;
mod real_pi;
mod remote;
mod resources;
mod resume_choice;
mod review;
mod reviewer;
mod sandbox;
mod sandbox_git;
mod send;
mod setup_output;
mod sidebar;
mod sidebar_keys;
mod standin;
mod status;
mod task;
mod teammates;
mod terminal;
mod test_env;
mod tmux_adapter;
mod tpm;
mod usage;
mod watched;
mod zellij;

/// A file of tests/ that is no `mod` here is never compiled, and its tests never run:
/// every `tests/*.rs` (but this one) must be listed above, and every `tests/<name>/*.rs`
/// (common/ and a file's tests split into a folder) in its mod.rs.
#[test]
fn every_test_file_is_a_module_of_the_runner() {
    use std::path::Path;
    fn unlisted(dir: &Path, listing: &Path, skip: &[&str]) -> Vec<String> {
        let text = std::fs::read_to_string(listing).unwrap();
        let declared: Vec<&str> = text
            .lines()
            .filter_map(|l| {
                let l = l.trim().strip_prefix("pub ").unwrap_or(l.trim());
                l.strip_prefix("mod ")?.strip_suffix(';')
            })
            .collect();
        let mut missing: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let stem = name.strip_suffix(".rs")?.to_string();
                (e.path().is_file() && !skip.contains(&name.as_str())).then_some(stem)
            })
            .filter(|stem| !declared.contains(&stem.as_str()))
            .collect();
        missing.sort();
        missing
    }
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let missing = unlisted(&tests, &tests.join("runner.rs"), &["runner.rs"]);
    assert!(
        missing.is_empty(),
        "tests/{{{}}}.rs: no `mod` line in tests/runner.rs, so never compiled",
        missing.join(",")
    );
    // A file's tests split into a folder: every file in it is a `mod` of its mod.rs.
    for dir in std::fs::read_dir(&tests)
        .unwrap()
        .flatten()
        .map(|e| e.path())
    {
        if !dir.join("mod.rs").is_file() {
            continue;
        }
        let missing = unlisted(&dir, &dir.join("mod.rs"), &["mod.rs"]);
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            missing.is_empty(),
            "tests/{name}/{{{}}}.rs: no `mod` line in tests/{name}/mod.rs, so never compiled",
            missing.join(",")
        );
    }
}
