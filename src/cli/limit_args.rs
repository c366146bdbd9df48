//! `task create --memory/--cpu/--pids`: the resource limits of one task's agent, flattened
//! into `TaskCreateArgs` (over `[project.NAME]`, over `[harness.NAME]`); and `task respawn`,
//! which may change them.

use clap::Args;

use crate::execution::resources::LimitConfig;

#[derive(Debug, Clone, Default, Args)]
pub struct LimitArgs {
    /// Memory limit of the agent's whole process tree: 4G, 512M, 1.5G (binary units).
    /// Default: [project.NAME] memory, else [harness.NAME] memory, else none
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<String>,
    /// CPU limit of the agent's tree, in cores (1.5 = 150% of one core)
    #[arg(long, value_name = "CORES")]
    pub cpu: Option<f64>,
    /// Limit on the processes and threads of the agent's tree
    #[arg(long, value_name = "N")]
    pub pids: Option<u32>,
}

impl LimitArgs {
    pub fn config(&self) -> LimitConfig {
        LimitConfig {
            memory: self.memory.clone(),
            cpu: self.cpu,
            pids: self.pids,
        }
    }
}

/// `task respawn`: restart the agent of an active task whose agent exited or whose session
/// is gone, or retry a failed task from the start.
#[derive(Debug, Clone, Args)]
pub struct RespawnArgs {
    /// The task: its id, a unique prefix of it, or its branch
    pub id: String,
    /// Stop a running agent first (its whole process tree: SIGTERM, SIGKILL after 5 s),
    /// then start it again, continuing its conversation where it can. Asks first
    #[arg(long)]
    pub force: bool,
    /// Why (with --force): kept in the history and told to the restarted agent
    #[arg(
        long,
        requires = "force",
        allow_hyphen_values = true,
        value_name = "TEXT"
    )]
    pub reason: Option<String>,
    /// Do not ask for confirmation (with --force)
    #[arg(long)]
    pub yes: bool,
    /// New resource limits for the agent started (each over the recorded one)
    #[command(flatten)]
    pub limits: LimitArgs,
}
