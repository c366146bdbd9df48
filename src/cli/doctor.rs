//! `orange doctor [--harness H] [--trust]`: is this machine ready to run an agent here?

use clap::Args;

use super::Ctx;
use crate::error::Result;
use crate::execution::config::Config;
use crate::execution::harness::Harness;
use crate::orchestration::doctor;
use crate::ui::output::Out;

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The harness to check (default: config's default_harness, else the first installed)
    #[arg(long, value_name = "H")]
    pub harness: Option<String>,
    /// Record the project's repository as trusted in Claude Code's ~/.claude.json (only
    /// that key changes; a backup is kept; a file that does not parse is left alone)
    #[arg(long)]
    pub trust: bool,
}

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
    let report = doctor::run(&harness, repo.as_deref(), a.trust)?;
    let text = doctor::render(&report);
    Ok(Out::new(report, text))
}
