//! Tasks, as a feature folder: the model ([`model`]: the record, the statuses and their
//! map, the ids, TASK.md's text, the prompts), the store under `tasks/<project>/<id>/`
//! ([`store`]), and the task service ([`service::TaskService`]) — what happens to a task,
//! in `service.rs` (its record and session state), `start.rs` (create, spawn, respawn),
//! `fanout.rs` (several created and started together: a group's members; `batch.rs` where
//! their sessions are made at once, in order),
//! `queue.rs` (the FIFO queue), `cap.rs` (max_running: when the queue waits), `merge.rs` (merge, cancel, delete), `pr.rs` (its pull request) and `send.rs` (text
//! typed into its agent: the one path every message and nudge takes).
//!
//! The model and the store are re-exported here (`task::Task`, `task::TaskStore`): every
//! layer above reads them. The service is named by its file (`task::service::TaskService`):
//! it uses the modules that read the model (attention, observer), which must not depend on
//! it.

pub mod batch;
pub mod cap;
pub mod fanout;
pub mod merge;
pub mod model;
pub mod pr;
pub mod queue;
pub mod send;
pub mod service;
pub mod start;
pub mod store;

pub use model::*;
pub use store::TaskStore;
