//! The arguments of a fleet left alone (caps on running agents), in a file of their own:
//! `args` flattens them into the verbs that take them.

use clap::Args;

/// `project update --max-running N`.
#[derive(Debug, Default, Args)]
pub struct ProjectCapArgs {
    /// At most N of the project's agents run at once; more tasks wait in its queue and
    /// start as running ones end (0 removes the cap). Apart from the pool size
    #[arg(long, value_name = "N")]
    pub max_running: Option<usize>,
}
