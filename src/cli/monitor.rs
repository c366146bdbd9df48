//! `orange monitor [--once]` and `orange restore`: the agent monitor and recovery after
//! a reboot or a tmux server restart.

use std::time::{Duration, Instant};

use clap::Args;
use serde_json::json;

use super::{audited, Ctx};
use crate::adapters::tmux::Tmux;
use crate::error::{OrangeError, Result};
use crate::orchestration::host;
use crate::orchestration::monitor::{self, Monitor};
use crate::orchestration::observer::{self, Snapshot};
use crate::orchestration::task::service::TaskService;
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
        let started = Instant::now();
        // Remote hosts first (one ssh call each, at once): the pass's summary shows them.
        host::fetch_all(&ctx.home);
        let mut m = Monitor::new(&ctx.home, tmux.clone())?;
        let mut r = m.pass()?;
        if let Some(snap) = r.snapshot.take() {
            publish_and_notify(&ctx.home, &tmux, &snap);
        }
        r.pass_ms = (started.elapsed().as_secs_f64() * 1e5).round() / 100.0;
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
    let Some(server) = tmux.server_identity()? else {
        return Ok(Out::new(
            json!({"running": false, "reason": "no tmux server runs"}),
            "orange monitor: no tmux server runs\n",
        ));
    };
    let Some(guard) = monitor::singleton(&ctx.home, &server)? else {
        return Ok(Out::new(
            json!({"running": false, "reason": "a monitor already runs for this tmux server"}),
            "orange monitor already runs for this tmux server\n",
        ));
    };
    let stop = |reason: &str| {
        let _ = std::fs::remove_file(guard.path().with_extension("json"));
        let _ = std::fs::remove_file(guard.path());
        Ok(Out::new(json!({"running": false, "reason": reason}), ""))
    };
    watch_hosts(&ctx.home, interval);
    let mut idle_servers = 0;
    loop {
        // Its data root is gone (a removed sandbox): nothing to watch, nothing to write.
        if !ctx.home.root.exists() {
            return Ok(Out::new(
                json!({"running": false, "reason": "ORANGE_HOME is gone"}),
                "",
            ));
        }
        let started = Instant::now();
        let pokes = crate::adapters::store::pokes(&ctx.home);
        let mut m = Monitor::new(&ctx.home, tmux.clone())?.on_server(server.clone());
        match m.pass() {
            Ok(mut r) => {
                let snap = r.snapshot.take().unwrap_or_default();
                // The server it watches is gone, or replaced by a new one on the same
                // socket: that one is not this monitor's (it gets its own).
                if snap.server_id.as_ref() != Some(&server) {
                    return stop("the tmux server it watched was stopped or replaced");
                }
                publish_and_notify(&ctx.home, &tmux, &snap);
                // Stop with the tmux server: a monitor must not outlive what it watches.
                if snap.sessions.is_empty() {
                    idle_servers += 1;
                    if idle_servers >= 2 {
                        return stop("the tmux server has no sessions left");
                    }
                } else {
                    idle_servers = 0;
                }
            }
            Err(e) => crate::adapters::store::log(
                &ctx.home,
                "error",
                "monitor pass failed",
                json!({"error": e.to_string(), "code": e.code()}),
            ),
        }
        wait_for_poke(
            &ctx.home,
            started,
            pokes,
            interval.max(Duration::from_millis(200)),
        );
    }
}

/// Remote hosts, beside the passes so a slow or unreachable host never delays
/// one: every `interval`, each host's snapshot over its one connection (one ssh call per
/// host, at once), and at once when a command here changed something on a host
/// (`run/hosts/poke`); a poke when what they show changed, so the next pass publishes it.
fn watch_hosts(home: &crate::adapters::store::Home, interval: Duration) {
    let home = home.clone();
    std::thread::spawn(move || {
        let mut last: Vec<(String, bool, Option<String>, serde_json::Value)> = Vec::new();
        let poked = host::poke_path(&home);
        loop {
            let started = Instant::now();
            // Counted before the fetch: a poke during it asks for another one.
            let count = crate::adapters::store::pokes_at(&poked);
            let seen: Vec<_> = host::fetch_all(&home)
                .into_iter()
                .map(|s| {
                    let summary = serde_json::to_value(&s.summary).unwrap_or_default();
                    (s.name, s.reachable, s.error, summary)
                })
                .collect();
            if seen != last {
                crate::adapters::store::poke(&home);
                last = seen;
            }
            // Until the interval is over, or a command changed something on a host.
            std::thread::sleep(Duration::from_millis(250));
            while started.elapsed() < interval && crate::adapters::store::pokes_at(&poked) == count
            {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    });
}

/// Sleep until `interval` has passed since `started`, or until something is poked after
/// the pass began (the count of pokes moved from `pokes`: a command changed a task, a
/// hook fired, the pass itself changed something): one `stat` every 50 ms, and never sooner than
/// 250 ms after the last pass began.
fn wait_for_poke(
    home: &crate::adapters::store::Home,
    started: Instant,
    pokes: u64,
    interval: Duration,
) {
    const TICK: Duration = Duration::from_millis(50);
    // Passes at most four times a second, even when each pokes (its own changes do).
    const MIN_GAP: Duration = Duration::from_millis(250);
    if let Some(rest) = MIN_GAP.checked_sub(started.elapsed()) {
        std::thread::sleep(rest);
    }
    while crate::adapters::store::pokes(home) == pokes {
        let waited = started.elapsed();
        if waited >= interval {
            return;
        }
        std::thread::sleep(TICK.min(interval - waited));
    }
}

pub fn restore(ctx: &Ctx, a: RestoreArgs) -> Result<Out> {
    super::reconcile(ctx);
    let mut tasks = TaskService::new(&ctx.home);
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

/// Write a pass's snapshot for the readers and publish the status widgets. Errors are not
/// the monitor's business: the next pass publishes again.
pub fn publish(home: &crate::adapters::store::Home, tmux: &Tmux, snap: &Snapshot) {
    observer::write(home, tmux, snap);
    let _ = crate::ui::status::publish(tmux, snap);
}

/// [`publish`], then tell the people attached what newly needs them (only a monitor pass
/// does: its report holds the pass lock while this runs).
pub fn publish_and_notify(home: &crate::adapters::store::Home, tmux: &Tmux, snap: &Snapshot) {
    publish(home, tmux, snap);
    crate::orchestration::notify::after_pass(home, tmux, snap);
}
