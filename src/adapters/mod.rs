//! The adapters: the only modules that run tmux, git, zellij and gh or touch the state files's format (store). Nothing here imports from a layer above.

pub mod fault;
pub mod gh;
pub mod git;
pub mod shell;
pub mod store;
pub mod tmux;
pub mod zellij;
