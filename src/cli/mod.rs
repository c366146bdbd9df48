//! The command line: [`args`] defines it (and says what each verb does), [`entry`] runs
//! one, [`dispatch`] hands it to its family's file (or to the remote host it belongs to),
//! with the effects around it from [`context`].

pub mod args;
pub mod completions;
pub mod context;
pub mod demo;
pub mod doctor;
pub mod entry;
pub mod fleet_args;
pub mod group;
pub mod group_args;
pub mod group_text;
pub mod hook;
pub mod host;
pub mod lane;
pub mod lane_args;
pub mod limit_args;
pub mod monitor;
pub mod plugin;
pub mod pr;
pub mod pr_args;
pub mod project_cmd;
pub mod remote;
pub mod restore;
pub mod review;
pub mod serve;
pub mod sidebar;
pub mod status;
pub mod task;
pub mod task_args;
pub mod task_text;
pub mod workspace;

use crate::error::Result;
use crate::ui::output::Out;
use args::Command;
use context::Done;

// The old paths of `Ctx` and `audited` (`super::Ctx` in a family's file), kept only while
// other branches move the sidebar and monitor loops out of cli/sidebar.rs and
// cli/monitor.rs: remove once those are merged.
pub use context::{audited, Ctx};

/// Run a parsed command: on the remote host it belongs to, or here.
pub fn dispatch(ctx: &Ctx, cmd: Command) -> Result<Out> {
    // A reviewer's prompt holds the task's diff as a review file shows it.
    crate::orchestration::review::reviewer::set_patch_source(crate::ui::changes::task_patch);
    let does = cmd.does();
    if let Some(h) = remote::route(ctx, &does)? {
        return remote::forward(ctx, &h, &cmd, &does);
    }
    context::before(ctx, &does);
    let done = match cmd {
        Command::Project(c) => project_cmd::run(ctx, c).map(Done::from),
        Command::Host(c) => host::run(ctx, c).map(Done::from),
        Command::Workspace(c) => workspace::run(ctx, c).map(Done::from),
        Command::Task(c) => task::run(ctx, c),
        Command::Group(c) => group::run(ctx, c),
        Command::Lane(c) => lane::run(ctx, c).map(Done::from),
        Command::Sidebar(a) => sidebar::run(ctx, a).map(Done::from),
        Command::Status(a) => status::run(ctx, a).map(Done::from),
        Command::Monitor(a) => monitor::run(ctx, a).map(Done::from),
        Command::Restore(a) => restore::run(ctx, a).map(Done::from),
        Command::Hook(a) => hook::run(ctx, a).map(Done::from),
        Command::Demo(a) => demo::run(ctx, a).map(Done::from),
        Command::Doctor(a) => doctor::run(ctx, a).map(Done::from),
        Command::Plugin(c) => plugin::run(ctx, c).map(Done::from),
        Command::Completions(a) => completions::run(ctx, a).map(Done::from),
        Command::Serve(a) => serve::run(ctx, a).map(Done::from),
    };
    context::after(ctx, &does, done)
}
