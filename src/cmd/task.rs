//! `orange task …` (the task lifecycle; not built yet).

use clap::{Args, Subcommand};

use super::Ctx;
use crate::error::{OrangeError, Result};
use crate::output::Out;

#[derive(Debug, Subcommand)]
pub enum TaskCmd {
    /// Create a task (and spawn its agent unless --no-spawn)
    Create(CreateArgs),
    /// List tasks
    List {
        #[arg(long)]
        status: Option<String>,
        /// Every project's tasks
        #[arg(long)]
        all: bool,
    },
    /// Show one task
    Show { id: String },
    /// Print the last lines of the task's agent pane
    Peek {
        id: String,
        #[arg(long, default_value_t = 40)]
        lines: usize,
    },
    /// Start the agent of a pending task
    Spawn { id: String },
    /// Attach to (or switch to) the task's session
    Attach { id: String },
    /// Restart the agent of an active task whose session is gone
    Respawn { id: String },
    /// Change a task's status, summary or branch
    Update {
        id: Option<String>,
        #[arg(long)]
        status: Option<String>,
        #[arg(long, allow_hyphen_values = true)]
        summary: Option<String>,
        #[arg(long, num_args = 0..=1)]
        branch: Option<Option<String>>,
    },
    /// Mark the task ready for review (called by agents)
    Complete { id: String },
    /// Mark the task stuck (called by agents)
    Stuck { id: String },
    /// Merge the task's branch and return its workspace
    Merge {
        id: String,
        #[arg(long, value_parser = ["ff", "merge"])]
        strategy: Option<String>,
        #[arg(long)]
        local: bool,
    },
    /// Cancel a task: kill its session and return its workspace
    Cancel {
        id: String,
        #[arg(long)]
        yes: bool,
    },
    /// Delete a done or cancelled task
    Delete {
        id: String,
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Branch for the task (default: orange-tasks/<id>)
    pub branch: Option<String>,
    /// One-line summary (the agent's prompt)
    #[arg(allow_hyphen_values = true)]
    pub summary: Option<String>,
    /// Agent harness: claude, pi, codex, opencode, or one from config.toml
    #[arg(long)]
    pub harness: Option<String>,
    /// Read extra context for TASK.md from standard input ("-")
    #[arg(long, value_name = "-")]
    pub context: Option<String>,
    /// Create the task as pending without starting the agent
    #[arg(long)]
    pub no_spawn: bool,
}

pub fn run(_ctx: &Ctx, cmd: TaskCmd) -> Result<Out> {
    let name = format!("{cmd:?}");
    let sub = name
        .split(['(', ' ', '{'])
        .next()
        .unwrap_or("")
        .to_lowercase();
    Err(OrangeError::NotImplemented(format!("task {sub}")))
}
