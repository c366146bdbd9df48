//! `orange sidebar [--task ID | --lane ID] [--once] [--width N] [--height N]` and
//! `orange sidebar toggle`: the arguments, checked, handed to the sidebar's runtime
//! ([`crate::ui::sidebar::runtime`]: one frame, or the loop that follows a task).
//!
//! `--once` prints one frame (plain text unless stdout is a colour terminal; `--json`: the
//! model). Without it the sidebar redraws its terminal until killed.

use super::args::SidebarArgs;
use super::context::Ctx;
use crate::adapters::tmux::Tmux;
use crate::error::{OrangeError, Result};
use crate::orchestration::host;
use crate::ui::output::Out;
use crate::ui::sidebar::{gather, runtime};

pub fn run(ctx: &Ctx, args: SidebarArgs) -> Result<Out> {
    match args.action.as_deref() {
        None => {}
        Some("toggle") => return toggle(ctx),
        Some(other) => {
            return Err(OrangeError::invalid(format!(
                "unknown sidebar action {other:?}: the only one is `toggle`"
            )))
        }
    }
    for (name, v) in [("--width", args.width), ("--height", args.height)] {
        if v == Some(0) {
            return Err(OrangeError::invalid(format!("{name} must be at least 1")));
        }
    }
    // A remote task: drawn from its host's last snapshot, never over ssh.
    if let Some(id) = args.task.as_deref() {
        if let Some(link) = host::linked(&ctx.home, id) {
            let (once, width, height) = (args.once, args.width, args.height);
            return runtime::remote(&ctx.home, id, &link.host, once, width, height);
        }
    }
    let task = match &args.lane {
        Some(id) => gather::lane_task(&ctx.home, id)?,
        None => runtime::find_task(
            &ctx.home,
            ctx.project.as_deref(),
            &ctx.cwd,
            args.task.as_deref(),
        )?,
    };
    // This process only reads git.
    crate::adapters::git::fast_reads();
    if args.once {
        return runtime::once(&ctx.home, &task, args.width, args.height);
    }
    if std::env::args_os().any(|a| a == "--json") {
        return Err(OrangeError::invalid(
            "--json needs --once (the sidebar loop draws a terminal)",
        ));
    }
    runtime::follow(
        &ctx.home,
        task,
        args.lane.is_some(),
        args.width,
        args.height,
    )
}

fn toggle(ctx: &Ctx) -> Result<Out> {
    let tmux = Tmux::from_env();
    let v = crate::ui::plugin::toggle_sidebar(&ctx.home, &tmux)?;
    let text = match v["action"].as_str() {
        Some("opened") => format!("sidebar opened ({})\n", v["pane"].as_str().unwrap_or("?")),
        Some("closed") => "sidebar closed\n".to_string(),
        _ => String::new(),
    };
    Ok(Out::new(v, text))
}
