//! The user interface: the status widgets, the sidebar, the tmux plugin's actions and the output formats. Reads orchestration; never the other way round.

pub mod changes;
pub mod diff;
pub mod output;
pub mod plugin;
pub mod progress;
pub mod sidebar;
pub mod status;
