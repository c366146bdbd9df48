//! The arguments of `orange group …` (best of N), in a file of their own: `args` names
//! them, `group.rs` reads them.

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum GroupCmd {
    /// List the project's groups (made by `task create BRANCH PROMPT --n N`)
    List {
        /// Every project's groups
        #[arg(long)]
        all: bool,
    },
    /// Show a group: each member's agent, state, checks, diff, judge's reason and rank
    Show {
        /// The group: its id, a unique prefix of it, or its base branch
        group: String,
    },
    /// Rank the members that are ready for review: the project's check command in each
    /// workspace, each diff's size, and optionally a judge agent
    Judge {
        /// The group: its id, a unique prefix of it, or its base branch
        group: String,
        /// Also ask a judge agent of this harness (started in a scratch worktree; it
        /// answers with a ranking, see docs/groups.md)
        #[arg(long, value_name = "HARNESS")]
        agent: Option<String>,
        /// Judge every member as it is now, ready or not
        #[arg(long)]
        now: bool,
        /// How long the judge agent may take (default 15m)
        #[arg(long, value_name = "DURATION")]
        timeout: Option<String>,
        /// Wait for the judge agent's ranking (by default the command returns once it is
        /// started: the next `group judge G`, or the monitor, reads its answer)
        #[arg(long)]
        wait: bool,
        /// Only read the answer of a judge agent at work (what the monitor runs)
        #[arg(long, hide = true)]
        collect: bool,
        /// Tell the people attached the verdict, once (what the monitor's `--judge auto`
        /// judging does)
        #[arg(long, hide = true)]
        notify: bool,
    },
    /// Keep one member: the others are cancelled (a workspace with uncommitted work stays
    /// bound) and each member's history says what became of it
    Pick {
        /// The group: its id, a unique prefix of it, or its base branch
        group: String,
        /// The member: its label (`2`, `/2`, `claude`), its task id or its branch
        member: String,
        /// Merge the winner as `task merge` does
        #[arg(long, conflicts_with = "pr")]
        merge: bool,
        /// Push the winner's branch and open its pull request as `task pr` does
        #[arg(long)]
        pr: bool,
        /// Do not ask, even when the member is still working
        #[arg(long)]
        yes: bool,
    },
    /// Cancel every member of a group
    Cancel {
        /// The group: its id, a unique prefix of it, or its base branch
        group: String,
        /// Do not ask
        #[arg(long)]
        yes: bool,
    },
}
