//! Typed errors shared by every module, each mapped to its canonical code (DESIGN.md).

use std::path::PathBuf;

pub type Result<T, E = OrangeError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum OrangeError {
    #[error("project not found: {0}")]
    ProjectNotFound(String),
    #[error("task not found: {0}")]
    TaskNotFound(String),
    #[error("lane not found: {0}")]
    LaneNotFound(String),
    #[error("workspace not found: {0}")]
    WorkspaceNotFound(String),
    #[error("pool exhausted for project {project}: {bound}/{size} workspaces bound")]
    PoolExhausted {
        project: String,
        bound: usize,
        size: usize,
    },
    #[error("worktree {} has uncommitted changes ({detail}); commit or stash them, or pass --force", path.display())]
    WorktreeDirty { path: PathBuf, detail: String },
    #[error("lane {0} is running; pass --force to close it anyway")]
    LaneRunning(String),
    #[error("invalid transition: {0}")]
    InvalidTransition(String),
    #[error("{0}")]
    InvalidArgument(String),
    #[error("backend not found: {0}")]
    BackendNotFound(String),
    #[error("{0}")]
    BackendCommandFailed(String),
    #[error("state file {} is corrupt: {detail}; fix or move it aside (orange never treats it as empty)", path.display())]
    StateCorrupt { path: PathBuf, detail: String },
    #[error("timed out after {waited} waiting for lock {}", path.display())]
    LockTimeout { path: PathBuf, waited: String },
    /// A recorded task could not start: it is kept as `failed` (the code is its cause's).
    #[error("task {id} could not start and is kept as failed: {source}; `orange task respawn {id}` retries, `orange task delete {id}` removes it")]
    TaskFailed {
        id: String,
        source: Box<OrangeError>,
    },
    /// A task cannot start now: as many agents run as the project's or the fleet's
    /// `max_running` allows (it waits in the queue).
    #[error("{scope} runs {running} of {cap} agents (max_running); the task starts when one ends")]
    CapReached {
        /// `project NAME` or `the fleet`.
        scope: String,
        running: usize,
        cap: usize,
    },
    /// A remote host could not be reached over SSH (nothing was changed here).
    #[error("host {host} is unreachable: {detail}")]
    HostUnreachable { host: String, detail: String },
    /// The orange on a remote host refused or failed: its own code and message.
    #[error("on host {host}: {message}")]
    Remote {
        host: String,
        code: &'static str,
        message: String,
    },
    /// An agent that cannot take text now (`task send`): dead, or a dialog or an approval
    /// prompt on its screen. `state` is its agent state; `advice` the next step.
    #[error("task {id}'s agent is {state}{detail}; {advice}")]
    AgentNotReady {
        id: String,
        state: String,
        /// What holds it, as ` (…)`, or empty.
        detail: String,
        advice: String,
    },
    /// A pull-request feature needs the GitHub CLI, and it is not on PATH.
    #[error("gh is not installed: pull requests need the GitHub CLI (https://cli.github.com; Debian: apt install gh)")]
    GhNotInstalled,
    /// gh is there but has no credentials for the host.
    #[error("gh is not logged in: run `gh auth login` (or set GH_TOKEN; GH_ENTERPRISE_TOKEN for a GitHub Enterprise host){0}")]
    GhNotLoggedIn(String),
    /// A task's pull request cannot be merged now (checks failing or pending, changes
    /// requested, conflicts); `--force` merges anyway.
    #[error("{0}")]
    PrNotReady(String),
    /// The agent's cgroup cannot be made with its limits here (the kernel refused a
    /// directory, a controller or a limit): nothing was recorded.
    #[error("the agent's cgroup cannot be made: {0}; lower or remove the limit (--memory, --cpu, --pids, or memory, cpu, pids in config.toml), or see `orange doctor`'s resources line")]
    CgroupFailed(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl OrangeError {
    /// The canonical, stable error code of DESIGN.md.
    pub fn code(&self) -> &'static str {
        match self {
            OrangeError::ProjectNotFound(_) => "project_not_found",
            OrangeError::TaskNotFound(_) => "task_not_found",
            OrangeError::LaneNotFound(_) => "lane_not_found",
            OrangeError::WorkspaceNotFound(_) => "workspace_not_found",
            OrangeError::PoolExhausted { .. } => "pool_exhausted",
            OrangeError::CapReached { .. } => "cap_reached",
            OrangeError::WorktreeDirty { .. } => "worktree_dirty",
            OrangeError::LaneRunning(_) => "lane_running",
            OrangeError::InvalidTransition(_) => "invalid_transition",
            OrangeError::InvalidArgument(_) => "invalid_argument",
            OrangeError::BackendNotFound(_) => "backend_not_found",
            OrangeError::BackendCommandFailed(_) => "backend_command_failed",
            OrangeError::StateCorrupt { .. } => "state_corrupt",
            OrangeError::LockTimeout { .. } => "lock_timeout",
            OrangeError::TaskFailed { source, .. } => source.code(),
            OrangeError::HostUnreachable { .. } => "host_unreachable",
            OrangeError::Remote { code, .. } => code,
            OrangeError::Io { .. } => "io_error",
            OrangeError::GhNotInstalled => "gh_not_installed",
            OrangeError::GhNotLoggedIn(_) => "gh_not_logged_in",
            OrangeError::PrNotReady(_) => "pr_not_ready",
            OrangeError::CgroupFailed(_) => "cgroup_failed",
            OrangeError::AgentNotReady { .. } => "agent_not_ready",
        }
    }

    /// Does this error, met while starting a recorded task, make that task `failed`? Not
    /// when it says nothing of the task: a full pool (it waits in the queue), a busy lock,
    /// a corrupt state file or an I/O error (the same would stop any task).
    pub fn fails_the_task(&self) -> bool {
        !matches!(
            self,
            OrangeError::PoolExhausted { .. }
                | OrangeError::CapReached { .. }
                | OrangeError::LockTimeout { .. }
                | OrangeError::StateCorrupt { .. }
                | OrangeError::Io { .. }
        )
    }

    /// The canonical code `code` names (a remote orange's), or `backend_command_failed`
    /// for one this orange does not know (a newer remote).
    pub fn canonical(code: &str) -> &'static str {
        const CODES: &[&str] = &[
            "project_not_found",
            "task_not_found",
            "lane_not_found",
            "workspace_not_found",
            "pool_exhausted",
            "cap_reached",
            "worktree_dirty",
            "lane_running",
            "invalid_transition",
            "invalid_argument",
            "backend_not_found",
            "backend_command_failed",
            "state_corrupt",
            "lock_timeout",
            "host_unreachable",
            "io_error",
            "agent_not_ready",
            "gh_not_installed",
            "gh_not_logged_in",
            "pr_not_ready",
            "cgroup_failed",
        ];
        CODES
            .iter()
            .find(|c| **c == code)
            .copied()
            .unwrap_or("backend_command_failed")
    }

    pub fn invalid(msg: impl Into<String>) -> Self {
        OrangeError::InvalidArgument(msg.into())
    }

    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        OrangeError::Io {
            context: context.into(),
            source,
        }
    }
}

/// Attach a context line to an `io::Result`.
pub trait IoContext<T> {
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| OrangeError::io(context(), e))
    }
}
