//! `orange doctor [--harness H] [--trust]`: is this machine ready to run an agent here,
//! and does a monitor watch this tmux server?

use super::args::DoctorArgs;
use super::context::Ctx;
use crate::adapters::tmux::Tmux;
use crate::error::Result;
use crate::execution::config::Config;
use crate::execution::harness::Harness;
use crate::orchestration::doctor;
use crate::orchestration::monitor::presence;
use crate::orchestration::task::store::TaskStore;
use crate::ui::output::Out;

pub fn run(ctx: &Ctx, a: DoctorArgs) -> Result<Out> {
    let config = Config::load(&ctx.home)?;
    let harness = Harness::resolve(a.harness.as_deref(), &config)?;
    // Trust is recorded for the main repository: its worktrees are not asked again.
    let repo = ctx.project().ok().map(|p| p.path);
    if a.trust && repo.is_none() {
        return Err(crate::error::OrangeError::invalid(
            "--trust needs a project: run it in a registered repository or pass --project NAME",
        ));
    }
    let mut report = doctor::run(&harness, repo.as_deref(), a.trust)?;
    doctor::add_channel_check(&mut report, &harness, &TaskStore::new(&ctx.home));
    if let Ok(watch) = presence::watch(&ctx.home, &Tmux::from_env()) {
        doctor::add_monitor_check(&mut report, &watch);
    }
    doctor::add_notify_check(&mut report, &ctx.home, &config.notify);
    doctor::add_resources_check(&mut report);
    let text = doctor::render(&report);
    Ok(Out::new(report, text))
}
