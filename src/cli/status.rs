//! `orange status [--format tmux|plain|json]`: the status-line widget. It runs in users'
//! status lines every few seconds, so it reads the task files and at most one tmux snapshot
//! (usually none: see `crate::ui::status` for the cache), and never runs git. Asked for
//! JSON, or by a person at a terminal (on stderr), it also says whether a monitor watches.

use std::io::IsTerminal;

use super::args::StatusArgs;
use super::context::Ctx;
use crate::adapters::tmux::Tmux;
use crate::error::Result;
use crate::orchestration::monitor::presence;
use crate::ui::output::Out;
use crate::ui::status;

pub fn run(ctx: &Ctx, args: StatusArgs) -> Result<Out> {
    let summary = status::current(&ctx.home, &Tmux::from_env())?;
    let mut json = status::render_json(&summary);
    // Token use only for JSON: the status line's formats read no more files for it.
    if args.format == "json" || ctx.json {
        json["tokens"] = status::tokens_json(&ctx.home, &summary);
        json["fleet"] = fleet_json(&ctx.home, &summary);
    }
    // Whether a monitor watches: for a script asking for JSON, or a person at a terminal
    // (said on stderr), never for a status line (it may cost tmux calls).
    let person = args.format == "plain" && std::io::stderr().is_terminal();
    let watch = (args.format == "json" || ctx.json || person)
        .then(|| presence::watch(&ctx.home, &Tmux::from_env()).ok())
        .flatten();
    if let Some(w) = &watch {
        json["monitor"] = serde_json::to_value(w).unwrap_or_default();
    }
    if let Some(warning) = watch.as_ref().filter(|_| person).and_then(|w| w.warning()) {
        eprintln!("orange: {warning}");
    }
    let text = match args.format.as_str() {
        "tmux" => format!("{}\n", status::render_tmux(&summary)),
        "json" => format!("{json}\n"),
        _ => status::render_plain(&summary),
    };
    Ok(Out::new(json, text))
}

/// `fleet` in the JSON: the agents running and the tasks queued on this machine, and the
/// caps (`null`: none).
fn fleet_json(
    home: &crate::adapters::store::Home,
    summary: &crate::orchestration::attention::summary::Summary,
) -> serde_json::Value {
    use crate::orchestration::attention::classify::{Bucket, ItemKind};
    use crate::orchestration::attention::summary::is_running;
    let caps = crate::orchestration::task::cap::Caps::read(home);
    let local = |i: &&crate::orchestration::attention::classify::Item| {
        i.kind == ItemKind::Task && i.host.is_none()
    };
    let running = summary.items.iter().filter(|i| is_running(i)).count();
    let queued = summary
        .items
        .iter()
        .filter(local)
        .filter(|i| i.bucket == Bucket::Queued)
        .count();
    // What the running agents' process trees use, as the monitor's last pass read it.
    let store = crate::orchestration::task::TaskStore::new(home);
    let (mut memory, mut cpu) = (0u64, 0u64);
    for i in summary.items.iter().filter(local).filter(|i| is_running(i)) {
        let dir = store.dir(&i.project, &i.id);
        if let Some(u) = crate::orchestration::footprint::load(&dir) {
            memory += u.memory;
            cpu += u64::from(u.cpu);
        }
    }
    serde_json::json!({
        "running": running,
        "queued": queued,
        "max_running": caps.fleet,
        "projects": caps.projects,
        "memory": memory,
        "cpu": cpu,
    })
}
