//! Groups (best of N): one prompt fanned out to N agents, each an ordinary task on
//! `BRANCH/<member>` in its own workspace and session; judged by the project's check
//! command, the size of each diff and optionally a judge agent; one member picked and
//! carried on, the rest cancelled. The record ([`model`]) and its store ([`store`]);
//! its members as they are now ([`members`]); what happens to a group ([`service`]);
//! the judging ([`judge`]).

pub mod auto;
pub mod judge;
pub mod members;
pub mod model;
pub mod service;
pub mod store;

pub use model::Group;
pub use store::GroupStore;
