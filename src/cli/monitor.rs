//! `orange monitor [--once]` and `orange restore`: the agent monitor and recovery after
//! a reboot or a tmux server restart.

use clap::Args;
use serde_json::json;

use super::{audited, Ctx};
use crate::adapters::tmux::Tmux;
use crate::error::{OrangeError, Result};
use crate::orchestration::lifecycle::Tasks;
use crate::orchestration::monitor::{self, run::Ended};
use crate::orchestration::observe::snapshot::Snapshot;
use crate::ui::output::Out;

#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// Run one pass and exit (prints what it saw and did)
    #[arg(long)]
    pub once: bool,
    /// Time between passes
    #[arg(long, default_value = "5s", value_name = "DURATION")]
    pub interval: String,
}

#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// Recreate the sessions (without it, only list what would be restored)
    #[arg(long)]
    pub yes: bool,
}

pub fn run(ctx: &Ctx, a: MonitorArgs) -> Result<Out> {
    let tmux = Tmux::from_env();
    if a.once {
        let r = monitor::run::once(&ctx.home, &tmux, crate::ui::status::publish)?;
        let text = format!(
            "checked {} task(s); {} action(s)\n{}",
            r.checked,
            r.actions.len(),
            r.actions
                .iter()
                .map(|a| format!("  {a}\n"))
                .collect::<String>()
        );
        return Ok(Out::new(r, text));
    }
    let interval = humantime::parse_duration(&a.interval)
        .map_err(|e| OrangeError::invalid(format!("invalid --interval {:?}: {e}", a.interval)))?;
    let ended = monitor::run::watch(&ctx.home, &tmux, interval, crate::ui::status::publish)?;
    let text = match ended {
        Ended::NoServer => "orange monitor: no tmux server runs\n",
        Ended::AlreadyRuns => "orange monitor already runs for this tmux server\n",
        _ => "",
    };
    Ok(Out::new(
        json!({"running": false, "reason": ended.reason()}),
        text,
    ))
}

pub fn restore(ctx: &Ctx, a: RestoreArgs) -> Result<Out> {
    super::reconcile(ctx);
    let mut tasks = Tasks::new(&ctx.home);
    let orphans = tasks.orphaned()?;
    if !a.yes {
        let mut text = if orphans.is_empty() {
            "no task has lost its session: nothing to restore\n".to_string()
        } else {
            format!("{} task(s) whose session is gone:\n", orphans.len())
        };
        for t in &orphans {
            text.push_str(&format!(
                "  {} {}/{} [{}] {}\n",
                t.id,
                t.project,
                t.branch,
                t.status,
                if t.agent_session_id.is_some() {
                    "(conversation resumable)"
                } else {
                    ""
                }
            ));
        }
        if !orphans.is_empty() {
            text.push_str("run `orange restore --yes` to recreate them\n");
        }
        return Ok(Out::new(
            json!({"restorable": orphans, "restored": []}),
            text,
        ));
    }
    let mut restored = vec![];
    let mut failed = vec![];
    for t in orphans {
        // A branch name read back: ui::progress shows it safely.
        let step = crate::adapters::progress::step(format!(
            "restoring task {} ({}/{})",
            t.id, t.project, t.branch
        ));
        match audited(ctx, "task.restore", json!({"id": t.id}), || {
            tasks.respawn(&t.id, Some(&t.project))
        }) {
            Ok(t) => {
                step.done(format!("restored task {}", t.id));
                restored.push(t)
            }
            Err(e) => failed.push(json!({"id": t.id, "code": e.code(), "message": e.to_string()})),
        }
    }
    crate::ui::status::changed(&ctx.home, &tasks.tmux);
    let mut text = format!(
        "restored {} task(s), {} failed\n",
        restored.len(),
        failed.len()
    );
    for t in &restored {
        text.push_str(&format!(
            "  {} {}/{} restarted\n",
            t.id, t.project, t.branch
        ));
    }
    for f in &failed {
        text.push_str(&format!(
            "  {} failed: {}\n",
            f["id"].as_str().unwrap_or("?"),
            f["message"].as_str().unwrap_or("?")
        ));
    }
    Ok(Out::new(
        json!({"restored": restored, "failed": failed}),
        text,
    ))
}

/// Write a pass's snapshot for the readers and publish the status widgets (see
/// [`monitor::run::publish`]).
pub fn publish(home: &crate::adapters::store::Home, tmux: &Tmux, snap: &Snapshot) {
    monitor::run::publish(home, tmux, snap, crate::ui::status::publish);
}

/// [`publish`], then tell the people attached what newly needs them (see
/// [`monitor::run::publish_and_notify`]).
pub fn publish_and_notify(home: &crate::adapters::store::Home, tmux: &Tmux, snap: &Snapshot) {
    monitor::run::publish_and_notify(home, tmux, snap, crate::ui::status::publish);
}
