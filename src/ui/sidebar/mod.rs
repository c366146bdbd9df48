//! The sidebar: one task's workspace beside its agent's pane.
//!
//! - [`model`]: what a frame shows, as plain data (`orange sidebar --once --json`), and the
//!   pure steps from a task's records to it;
//! - [`gather`]: reading those records (task files, the observer's snapshot, one git diff);
//! - [`render`]: the model laid out for a width and a height: pure, snapshot-tested;
//! - [`runtime`]: one frame, or the loop that follows a task (or a remote one);
//! - [`screen`]: its terminal: keys in, frames out;
//! - [`pane`]: its own tmux pane: the focus, where its keys move it, closing it.

pub mod gather;
pub mod model;
pub mod pane;
pub mod render;
pub mod runtime;
pub mod screen;
