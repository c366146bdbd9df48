//! orange: a tmux-native orchestrator for parallel coding agents.

pub mod agent;
pub mod cmd;
pub mod config;
pub mod doctor;
pub mod error;
pub mod gh;
pub mod git;
pub mod harness;
pub mod lane;
pub mod lifecycle;
pub mod monitor;
pub mod output;
pub mod plugin;
pub mod pool;
pub mod project;
pub mod provision;
pub mod screen;
pub mod session;
pub mod shell;
pub mod sidebar;
pub mod status;
pub mod store;
pub mod task;
pub mod tmux;
pub mod zellij;
