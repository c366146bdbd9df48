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
