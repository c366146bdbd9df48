//! orange: a tmux-native orchestrator for parallel coding agents.
//!
//! The folders are the layers (DESIGN.md "The layers in the tree"); a module imports only
//! from its own layer or the layers below, and `tests/layers.rs` checks it:
//!
//! ```text
//! cli            the command line (args: its definition and what each verb does), its
//!                dispatch, one file per subcommand family
//! ui             status widgets, sidebar, plugin actions, output
//! orchestration  projects, tasks, lanes, agent monitor, crash repair
//! execution      workspace pool, provisioning, sessions, harnesses, config
//! adapters       tmux, git, zellij, gh, shell, store (the only ones that run programs)
//! ```

pub mod adapters;
pub mod cli;
pub mod error;
pub mod execution;
pub mod orchestration;
pub mod text;
pub mod ui;
