//! Orchestration: projects, remote hosts, tasks (model, store, service, queue, merge), lanes, the agent monitor and the crash repair. Built on execution and the adapters.

pub mod agent;
pub mod attention;
pub mod doctor;
pub mod footprint;
pub mod group;
pub mod host;
pub mod lane;
pub mod limits;
/// The old path of the task service (`task::service`), kept for callers outside it.
pub mod monitor;
pub mod observe;
/// Old path of `observe::snapshot`, kept until the branches that use it are merged.
pub mod project;
pub mod prompt;
pub mod reconcile;
pub mod repair;
pub mod review;
pub mod screen;
pub mod task;
pub mod teammates;
pub mod usage;

/// Old path of `monitor::notify`, kept until the branches that use it are merged.
pub use monitor::notify;
