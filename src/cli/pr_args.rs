//! The arguments of `task pr`, in a file of their own (args.rs names them).

use clap::Args;

/// `task pr` (see `orange task pr --help`).
#[derive(Debug, Clone, Args)]
pub struct PrArgs {
    /// The task: its id, a unique prefix of it, or its branch
    pub id: String,
    /// Open it as a draft
    #[arg(long)]
    pub draft: bool,
    /// Its title (default: the first line of the task's summary; quotes, $(…) and
    /// newlines are safe)
    #[arg(long, allow_hyphen_values = true)]
    pub title: Option<String>,
    /// The branch it merges into (default: the project's default branch)
    #[arg(long, value_name = "BRANCH")]
    pub base: Option<String>,
}
