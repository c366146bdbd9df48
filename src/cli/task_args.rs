//! The arguments of the task verbs that take many (`task create`, `task review`), in a
//! file of their own: `args` names them, their commands read them.

use clap::Args;

#[derive(Debug, Args)]
pub struct TaskCreateArgs {
    /// Branch for the task (default: orange-tasks/<id>); an existing local or remote
    /// branch is reused
    pub branch: Option<String>,
    /// What the agent should do (its first prompt; quotes, $(…) and newlines are safe).
    /// Left out: the agent starts interactive, with no prompt; the first prompt you type
    /// in its pane becomes the summary
    #[arg(allow_hyphen_values = true)]
    pub summary: Option<String>,
    /// Agent harness: claude, pi, codex, opencode, or one from config.toml
    /// (default: config's default_harness, else the first installed of pi, opencode, claude, codex).
    /// Repeated, or as H:N, it makes a group: one member per agent (`orange group`)
    #[arg(long, value_name = "H[:N]")]
    pub harness: Vec<String>,
    /// Best of N: a group of N members, each its own task on BRANCH/1..N with the same
    /// prompt (`orange group`); 1 is an ordinary task
    #[arg(long, value_name = "N")]
    pub n: Option<u32>,
    /// A group of more than 10 members
    #[arg(long)]
    pub force: bool,
    /// A group's judging: auto (the monitor judges it when its last member is ready, and
    /// tells you) or manual (`orange group judge`, the default)
    #[arg(long, value_name = "auto|manual")]
    pub judge: Option<String>,
    /// Extra context for TASK.md's ## Context: "-" reads standard input
    #[arg(long, value_name = "TEXT|-", allow_hyphen_values = true)]
    pub context: Option<String>,
    /// Create the task as pending (queued) without starting the agent
    #[arg(long)]
    pub no_spawn: bool,
    /// Run the agent in a sandbox: bwrap (bubblewrap: the system and $HOME read-only;
    /// writable only the workspace, the git dirs its commits need, the agent's own state
    /// and a private /tmp) or none. Default: the project's, the harness's, config.toml's
    #[arg(long, value_name = "bwrap|none")]
    pub sandbox: Option<String>,
    /// Run the agent headless, one-shot (pi -p, codex exec, opencode run) instead of its
    /// interactive interface: it exits at the end of its turn, and an exit 0 then means it
    /// finished (the task goes to review). Default: [harness.NAME] mode in config.toml,
    /// else interactive
    #[arg(long)]
    pub headless: bool,
    #[command(flatten)]
    pub limits: super::limit_args::LimitArgs,
}

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
    /// Start a reviewer agent (claude, pi, codex, opencode, or one from config.toml) in the
    /// task's workspace, read-only, in a window of the task's session: its findings
    /// (`path:line: comment`) become a round by the reviewer, which `task review ID`
    /// opens; with --send, sent at once when it ends
    #[arg(long, value_name = "HARNESS", conflicts_with_all = ["comment", "round", "approve"])]
    pub agent: Option<String>,
    /// With --agent: what the reviewer should look at in particular (added to its prompt)
    #[arg(
        long,
        value_name = "TEXT",
        requires = "agent",
        allow_hyphen_values = true
    )]
    pub prompt: Option<String>,
    /// Send round N, recorded before, instead of writing a new one
    #[arg(long, value_name = "N", requires = "send", conflicts_with = "comment")]
    pub round: Option<u32>,
    /// With --send: type it whatever the agent's state (never into a dead agent)
    #[arg(long, requires = "send")]
    pub force: bool,
    /// The review comments of the task's pull request (`gh api`) as the round, each on
    /// its file and line: what its reviewers asked, for the agent
    #[arg(long, conflicts_with_all = ["comment", "round"])]
    pub from_pr: bool,
    /// Record the review's outcome, approved: the task moves on to `reviewing` (ready to
    /// merge); with no --comment, no editor opens
    #[arg(long)]
    pub approve: bool,
}

impl TaskCreateArgs {
    /// `--context`: its text, or standard input's for `-`.
    pub fn context_text(&self) -> crate::error::Result<Option<String>> {
        use std::io::Read;
        Ok(match self.context.as_deref() {
            Some("-") => {
                let mut s = String::new();
                std::io::stdin().read_to_string(&mut s).map_err(|e| {
                    crate::error::OrangeError::io("reading --context from standard input", e)
                })?;
                Some(s)
            }
            other => other.map(str::to_string),
        })
    }

    /// It makes a group (best of N), not one task.
    pub fn is_group(&self) -> bool {
        let many = |h: &String| h.rsplit_once(':').is_some_and(|(_, n)| n != "1");
        self.n.is_some_and(|n| n != 1) || self.harness.len() > 1 || self.harness.iter().any(many)
    }
}

impl ReviewArgs {
    /// It opens an editor (and so needs a terminal).
    pub fn edits(&self) -> bool {
        self.comment.is_empty()
            && self.round.is_none()
            && !self.approve
            && !self.from_pr
            && self.agent.is_none()
    }
}
