//! `orange plugin …`: what the tmux plugin's keys run (hidden from `--help`). The choices
//! are the UI's (`ui::plugin`); going to a remote task is the CLI's attach over ssh.

use serde_json::json;

use super::args::PluginCmd;
use super::context::Ctx;
use crate::adapters::tmux::Tmux;
use crate::error::Result;
use crate::orchestration::host;
use crate::orchestration::task::TaskStore;
use crate::ui::output::Out;
use crate::ui::plugin::{
    pick_next, said_next, send_prompt, task_of_pane, toggle_sidebar, toggle_sidebar_at,
};

pub fn run(ctx: &Ctx, cmd: PluginCmd) -> Result<Out> {
    let tmux = Tmux::from_env();
    match cmd {
        PluginCmd::Project => {
            let p = ctx.project()?;
            let text = format!("{}\n", p.name);
            Ok(Out::new(json!({"name": p.name, "path": p.path}), text))
        }
        PluginCmd::Next { client, session } => {
            let client = client.as_deref();
            let Some(next) = pick_next(&ctx.home, &tmux, client, session.as_deref())? else {
                return Ok(Out::new(
                    json!({"switched": null}),
                    "orange: no task is waiting for you\n",
                ));
            };
            let target = match &next.host {
                None => {
                    let target = next.session_id.clone().unwrap_or_default();
                    tmux.switch_client_of(client, &target)?;
                    target
                }
                Some(name) => {
                    let h = host::get(&ctx.home, name)?;
                    let out = super::remote::attach(ctx, &h, &next.id, client)?;
                    out.json["local_session"].as_str().unwrap_or("").to_string()
                }
            };
            let msg = said_next(&tmux, client, &next);
            Ok(Out::new(
                json!({"switched": next.id, "session": target, "host": next.host, "status": next.status, "reason": next.reason}),
                format!("{msg}\n"),
            ))
        }
        PluginCmd::Prompt { client, task } => {
            let task = match task {
                Some(id) => TaskStore::new(&ctx.home).find(&id, None)?,
                None => task_of_pane(&ctx.home, &tmux)?,
            };
            send_prompt(&tmux, &task.id, client.as_deref())?;
            Ok(Out::new(json!({"prompt": task.id}), ""))
        }
        PluginCmd::Sidebar { pane } => {
            let v = match pane {
                Some(p) => toggle_sidebar_at(&ctx.home, &tmux, &p)?,
                None => toggle_sidebar(&ctx.home, &tmux)?,
            };
            let text = format!("sidebar {}\n", v["action"].as_str().unwrap_or(""));
            Ok(Out::new(v, text))
        }
    }
}
