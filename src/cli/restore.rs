//! `orange restore [--yes]`: after a reboot or a tmux server restart, the tasks whose
//! session is gone, listed or (with --yes) started again. The repairs before it and the
//! status widgets after it are the table's (`args::Command::does`).

use serde_json::json;

use super::args::RestoreArgs;
use super::context::{audited, Ctx};
use crate::error::Result;
use crate::orchestration::task::service::TaskService;
use crate::ui::output::Out;

pub fn run(ctx: &Ctx, a: RestoreArgs) -> Result<Out> {
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
