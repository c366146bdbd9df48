//! The arguments of `orange task review` (in a file of their own: `args` names them, and
//! `review` reads them).

use clap::Args;

/// `task review` (see `orange task review --help`).
#[derive(Debug, Clone, Args)]
pub struct ReviewArgs {
    /// The task: its id, a unique prefix of it, or its branch
    pub id: String,
    /// A comment on line LINE of PATH as the task's workspace has it now (repeatable):
    /// written without an editor, for scripts
    #[arg(
        long,
        num_args = 2,
        value_names = ["PATH:LINE", "TEXT"],
        allow_hyphen_values = true
    )]
    pub comment: Vec<String>,
    /// Send the round to the agent now: typed when it waits, held while it works, never
    /// into an agent on a dialog (without it, a terminal asks)
    #[arg(long)]
    pub send: bool,
    /// Send round N, recorded before, instead of writing a new one
    #[arg(long, value_name = "N", requires = "send", conflicts_with = "comment")]
    pub round: Option<u32>,
    /// With --send: type it whatever the agent's state (never into a dead agent)
    #[arg(long, requires = "send")]
    pub force: bool,
    /// Record the review's outcome, approved: the task moves on to `reviewing` (ready to
    /// merge); with no --comment, no editor opens
    #[arg(long)]
    pub approve: bool,
}

impl ReviewArgs {
    /// It opens an editor (and so needs a terminal).
    pub fn edits(&self) -> bool {
        self.comment.is_empty() && self.round.is_none() && !self.approve
    }
}
