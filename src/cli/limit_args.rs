//! `task create --memory/--cpu/--pids`: the resource limits of one task's agent, flattened
//! into `TaskCreateArgs` (over `[project.NAME]`, over `[harness.NAME]`).

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
