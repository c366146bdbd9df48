//! One repair of what a crashed command left behind (see `reconcile`).

use serde::Serialize;

/// One repair.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Repair {
    /// `adopted`, `stopped`, `released`, `settled`.
    pub action: &'static str,
    /// A session, a workspace or a lane.
    pub target: String,
    pub reason: String,
    /// The task's project, when a workspace may have been freed there (its queue may
    /// start: see `TaskService::after_repairs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub freed_in: Option<String>,
}

impl std::fmt::Display for Repair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.action, self.target, self.reason)
    }
}
