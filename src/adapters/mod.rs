//! The adapters: the only modules that run programs (tmux, git, zellij, gh, ssh, a
//! host's broker) or know the state files' format (store). Nothing here imports from a layer above.

// The layer where programs run (clippy.toml keeps `Command::new` here).
#![allow(clippy::disallowed_methods)]

pub mod broker;
pub mod bwrap;
pub mod cgroup;
pub mod check;
pub mod editor;
pub mod fault;
pub mod gh;
pub mod git;
pub mod http;
pub mod mux;
pub mod process;
pub mod progress;
pub mod pty;
pub mod resource;
pub mod served;
pub mod shell;
pub mod ssh;
pub mod stdio;
pub mod store;
pub mod terminal;
pub mod tmux;
pub mod zellij;
