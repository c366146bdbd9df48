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
/// every `tests/*.rs` (but this one) and every folder of tests (`tests/<name>/mod.rs`)
/// must be listed above, and every `tests/<name>/*.rs` in its mod.rs (or in
/// `tests/<name>.rs`, where the folder holds that file's submodules).
#[test]
fn every_test_file_is_a_module_of_the_runner() {
    use std::path::Path;
    /// The names in `dir` (files `<name>.rs`, and with `folders` folders holding a mod.rs)
    /// that `listing` declares no `mod` of.
    fn unlisted(dir: &Path, listing: &Path, skip: &[&str], folders: bool) -> Vec<String> {
        let text = std::fs::read_to_string(listing).unwrap();
        let declared: Vec<&str> = text
            .lines()
            .filter_map(|l| {
                let l = l.trim().strip_prefix("pub ").unwrap_or(l.trim());
                let l = l.strip_prefix("pub(crate) ").unwrap_or(l);
                l.strip_prefix("mod ")?.strip_suffix(';')
            })
            .collect();
        let mut missing: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter_map(|e| {
                let (name, p) = (e.file_name().to_string_lossy().into_owned(), e.path());
                match name.strip_suffix(".rs") {
                    Some(stem) => p.is_file().then(|| stem.to_string()),
                    None => (folders && p.join("mod.rs").is_file()).then_some(name.clone()),
                }
                .filter(|_| !skip.contains(&name.as_str()))
            })
            .filter(|stem| !declared.contains(&stem.as_str()))
            .collect();
        missing.sort();
        missing
    }
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let missing = unlisted(&tests, &tests.join("runner.rs"), &["runner.rs"], true);
    assert!(
        missing.is_empty(),
        "tests/{{{}}}: no `mod` line in tests/runner.rs, so never compiled",
        missing.join(",")
    );
    // Each folder's files: modules of its mod.rs, or of the file it is named after.
    for dir in std::fs::read_dir(&tests)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
    {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let listing = match dir.join("mod.rs") {
            m if m.is_file() => m,
            _ => tests.join(format!("{name}.rs")),
        };
        if !listing.is_file() {
            continue; // fixtures, snapshots: no code
        }
        let missing = unlisted(&dir, &listing, &["mod.rs"], false);
        assert!(
            missing.is_empty(),
            "tests/{name}/{{{}}}.rs: no `mod` line in {}, so never compiled",
            missing.join(","),
            listing.display()
        );
    }
}
