//! Execution: workspaces (the pooled worktrees, their provisioning), sessions (tmux or zellij), the agent harnesses and the configuration. Built on the adapters only.

pub mod config;
pub mod fleet;
pub mod harness;
pub mod launch;
pub mod pool;
pub mod provision;
pub mod repo;
pub mod resources;
pub mod sandbox;
pub mod sandbox_git;
pub mod session;
