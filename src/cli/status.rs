//! `orange status [--format tmux|plain|json]`: the status-line widget. It runs in users'
//! status lines every few seconds, so it reads the task files and at most one tmux snapshot
//! (usually none: see `crate::ui::status` for the cache), and never runs git.

use super::args::StatusArgs;
use super::context::Ctx;
use crate::adapters::tmux::Tmux;
use crate::error::Result;
use crate::ui::output::Out;
use crate::ui::status;

pub fn run(ctx: &Ctx, args: StatusArgs) -> Result<Out> {
    let summary = status::current(&ctx.home, &Tmux::from_env())?;
    let mut json = status::render_json(&summary);
    // Token use only for JSON: the status line's formats read no more files for it.
    if args.format == "json" || ctx.json {
        json["tokens"] = status::tokens_json(&ctx.home, &summary);
    }
    let text = match args.format.as_str() {
        "tmux" => format!("{}\n", status::render_tmux(&summary)),
        "json" => format!("{json}\n"),
        _ => status::render_plain(&summary),
    };
    Ok(Out::new(json, text))
}
