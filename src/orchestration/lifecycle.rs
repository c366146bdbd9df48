//! The old path of the task service (now `orchestration::task::service::TaskService`),
//! kept for the callers outside this change (the monitor, the sidebar); the lead removes
//! it once they import from `orchestration::task`.

pub use crate::orchestration::attention::{agent_pane, agent_state, SessionView};
pub use crate::orchestration::task::model::{
    first_prompt, respawn_prompt, validate_branch, validate_summary, MAX_BRANCH, MAX_SUMMARY,
};
pub use crate::orchestration::task::queue::{FailedStart, NextSpawn};
pub use crate::orchestration::task::service::{Recovery, TaskService as Tasks, TaskView};
pub use crate::orchestration::task::start::{CreateRequest, Created};
