//! `orange task pr ID [--draft] [--title T] [--base B]`: push the task's branch and open
//! its pull request (or link the open one) — `orchestration::task::pr`, gh through
//! `adapters::gh` only.

use serde_json::json;

use super::context::{audited, Ctx};
use super::pr_args::PrArgs;
use crate::error::Result;
use crate::orchestration::task::pr::PrRequest;
use crate::orchestration::task::service::TaskService;
use crate::ui::output::Out;

pub fn run(ctx: &Ctx, tasks: &mut TaskService, a: PrArgs) -> Result<Out> {
    let req = PrRequest {
        draft: a.draft,
        title: a.title.clone(),
        base: a.base.clone(),
    };
    let inputs = json!({"id": a.id, "draft": a.draft, "title": a.title, "base": a.base});
    let opened = audited(ctx, "task.pr", inputs, || {
        tasks
            .open_pr(&a.id, ctx.project.as_deref(), &req)
            .map(|o| json!({"task": o.task, "pr": o.pr, "created": o.created}))
    })?;
    let pr = &opened["pr"];
    let verb = if opened["created"] == true {
        "opened"
    } else {
        "linked the open"
    };
    let text = format!(
        "{verb} pull request #{} for task {} ({}){}: {}\n",
        pr["number"],
        opened["task"]["id"].as_str().unwrap_or(""),
        opened["task"]["branch"].as_str().unwrap_or(""),
        if pr["draft"] == true {
            " as a draft"
        } else {
            ""
        },
        pr["url"].as_str().unwrap_or(""),
    );
    Ok(Out::new(opened, text))
}
