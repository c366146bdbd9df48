//! The arguments of `orange lane …` (dedicated worktrees for an outside orchestrator), in
//! a file of their own: `args` names them, `lane.rs` reads them.

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum LaneCmd {
    /// Create a lane: a dedicated worktree on lane/<id>, a fresh session, an agent
    Create(LaneCreateArgs),
    /// List lanes (closed ones with --include-closed)
    List {
        /// Closed lanes too
        #[arg(long)]
        include_closed: bool,
    },
    /// Show a lane and whether its backend session and agent are alive
    Status {
        /// The lane's id (from `lane create` or `lane list`)
        lane_id: String,
    },
    /// Close a lane: kill its session and remove its worktree (the branch is kept)
    Close {
        /// The lane's id (from `lane create` or `lane list`)
        lane_id: String,
        /// Keep the worktree on disk
        #[arg(long)]
        keep_worktree: bool,
        /// Close a running lane / remove a worktree with uncommitted changes
        #[arg(long)]
        force: bool,
    },
    /// Close finished/error lanes idle longer than the TTL; it never closes a running lane
    /// (`lane close --force` does)
    Gc {
        /// e.g. 30m, 2h, 1d
        #[arg(long, value_name = "DURATION")]
        idle_ttl: String,
        /// Also remove their worktrees (never one with uncommitted changes, unpushed
        /// commits or a process working in it, unless --force)
        #[arg(long)]
        remove_worktree: bool,
        /// With --remove-worktree, remove worktrees with uncommitted changes, unpushed
        /// commits or a process in them too (gc never closes a running lane, forced or not)
        #[arg(long)]
        force: bool,
        /// Show what would be closed, change nothing
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Debug, Args)]
pub struct LaneCreateArgs {
    /// The user-visible task key (any text; not blank)
    #[arg(long, allow_hyphen_values = true)]
    pub task_id: String,
    /// Start point of lane/<id> (default: origin/<default branch>)
    #[arg(long)]
    pub base_ref: Option<String>,
    /// Where the worktree goes (default: $ORANGE_HOME/lanes/<task-slug>-<lane-id>)
    #[arg(long)]
    pub worktree_path: Option<std::path::PathBuf>,
    /// Multiplexer backend
    #[arg(long, value_parser = ["tmux", "zellij"])]
    pub mux: Option<String>,
    /// Agent harness (default: config's default_harness, else the first installed)
    #[arg(long)]
    pub harness: Option<String>,
    /// Initial message for the agent (text only)
    #[arg(long, allow_hyphen_values = true)]
    pub seed_context: Option<String>,
}
