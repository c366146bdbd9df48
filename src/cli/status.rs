//! `orange status [--format tmux|plain|json]`: the status-line widget. It runs in users'
//! status lines every few seconds, so it reads the task files and at most one tmux snapshot
//! (usually none: see `crate::ui::status` for the cache), and never runs git. Asked by a
//! person or a script (`--format plain|json`), it also says whether a monitor watches.

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
    // Whether a monitor watches: for a person or a script asking, not the status line
    // (it costs a tmux call).
    let watch = (args.format != "tmux" || ctx.json)
        .then(|| presence::watch(&ctx.home, &Tmux::from_env()).ok())
        .flatten();
    if let Some(w) = &watch {
        json["monitor"] = serde_json::to_value(w).unwrap_or_default();
    }
    let text = match args.format.as_str() {
        "tmux" => format!("{}\n", status::render_tmux(&summary)),
        "json" => format!("{json}\n"),
        _ => {
            let mut text = status::render_plain(&summary);
            if let Some(warning) = watch.as_ref().and_then(|w| w.warning()) {
                text.push_str(&format!("{warning}\n"));
            }
            text
        }
    };
    Ok(Out::new(json, text))
}
