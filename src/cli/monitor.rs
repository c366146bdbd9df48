//! `orange monitor [--once]`: the agent monitor.

use serde_json::json;

use super::args::MonitorArgs;
use super::context::Ctx;
use crate::adapters::tmux::Tmux;
use crate::error::{OrangeError, Result};
use crate::orchestration::monitor::{self, run::Ended};
use crate::orchestration::observe::snapshot::Snapshot;
use crate::ui::output::Out;

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
    if let Some(n) = a.passes {
        let poke = match a.poke.as_deref() {
            None => monitor::run::Poke::Nothing,
            Some("task") => monitor::run::Poke::Task,
            Some("other") => monitor::run::Poke::Other,
            Some("all") => monitor::run::Poke::All,
            Some(other) => {
                return Err(OrangeError::invalid(format!(
                    "invalid --poke {other:?}: task, other or all"
                )))
            }
        };
        let widgets = crate::ui::status::publish;
        let ms: Vec<f64> = monitor::run::passes(&ctx.home, &tmux, n, poke, widgets)?
            .iter()
            .map(|r| r.pass_ms)
            .collect();
        let text = ms.iter().map(|m| format!("{m} ms\n")).collect::<String>();
        return Ok(Out::new(json!({ "pass_ms": ms }), text));
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
