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
mod claude_screens;
mod cli;
mod declared_states;
mod error_codes;
mod failures;
mod first_hour;
mod fuzz_parsers;
mod hostile_text;
mod kill_loop;
mod lane;
mod layers;
mod monitor;
mod no_prompt;
mod notify;
mod observer;
mod other_harnesses;
mod plugin;
mod pool;
mod pool_concurrency;
mod progress;
mod project;
mod readme;
mod real_claude;
mod remote;
mod sandbox;
mod sandbox_git;
mod sidebar;
mod standin;
mod status;
mod task;
mod tmux_adapter;
mod tpm;
mod usage;
mod zellij;
