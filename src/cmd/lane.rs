//! `orange lane …` (seed 001's lanes; not built yet).

use clap::{Args, Subcommand};

use super::Ctx;
use crate::error::{OrangeError, Result};
use crate::output::Out;

#[derive(Debug, Subcommand)]
pub enum LaneCmd {
    /// Create a lane: a dedicated worktree on lane/<id> and an agent session
    Create(CreateArgs),
    /// List lanes
    List {
        #[arg(long)]
        include_closed: bool,
    },
    /// Show a lane with backend liveness
    Status { lane_id: String },
    /// Close a lane (and remove its worktree unless --keep-worktree)
    Close {
        lane_id: String,
        #[arg(long)]
        keep_worktree: bool,
        #[arg(long)]
        force: bool,
    },
    /// Close finished/error lanes idle longer than the TTL
    Gc {
        #[arg(long, value_name = "DURATION")]
        idle_ttl: String,
        #[arg(long)]
        remove_worktree: bool,
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    #[arg(long)]
    pub task_id: String,
    #[arg(long)]
    pub base_ref: Option<String>,
    #[arg(long)]
    pub worktree_path: Option<std::path::PathBuf>,
    #[arg(long, value_parser = ["tmux", "zellij"])]
    pub mux: Option<String>,
    #[arg(long)]
    pub harness: Option<String>,
    #[arg(long, allow_hyphen_values = true)]
    pub seed_context: Option<String>,
}

pub fn run(_ctx: &Ctx, cmd: LaneCmd) -> Result<Out> {
    let name = format!("{cmd:?}");
    let sub = name
        .split(['(', ' ', '{'])
        .next()
        .unwrap_or("")
        .to_lowercase();
    Err(OrangeError::NotImplemented(format!("lane {sub}")))
}
