//! `orange workspace init|list|acquire|release|gc|shutdown`: one function per verb. The
//! repairs before them and the status widgets after a release or a gc (a queued task may
//! have started) are the table's (`args::Command::does`).

use std::time::Duration;

use serde_json::json;

use super::args::{AcquireArgs, WorkspaceCmd};
use super::context::{audited, Ctx};
use crate::error::{OrangeError, Result};
use crate::execution::pool::{self, Workspace};
use crate::orchestration::task::service::TaskService;
use crate::orchestration::task::TaskStore;
use crate::ui::output::{table, Out};

fn parse_wait(s: &str) -> Result<Duration> {
    if s == "forever" {
        return Ok(Duration::from_secs(u64::MAX / 4));
    }
    humantime::parse_duration(s).map_err(|e| {
        OrangeError::invalid(format!(
            "invalid --wait duration {s:?}: {e} (examples: 30s, 5m, 1h)"
        ))
    })
}

fn rows(list: &[Workspace], with_project: bool) -> String {
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|w| {
            let mut r = vec![
                w.name.clone(),
                w.status.clone(),
                w.task.clone().unwrap_or_else(|| "-".into()),
                w.path.display().to_string(),
            ];
            if with_project {
                r.insert(0, w.project.clone());
            }
            r
        })
        .collect();
    if with_project {
        table(&["PROJECT", "NAME", "STATUS", "TASK", "PATH"], &rows)
    } else {
        table(&["NAME", "STATUS", "TASK", "PATH"], &rows)
    }
}

pub fn run(ctx: &Ctx, cmd: WorkspaceCmd) -> Result<Out> {
    let tasks = TaskStore::new(&ctx.home);
    match cmd {
        WorkspaceCmd::Init => init(ctx),
        WorkspaceCmd::List { all } => list(ctx, all),
        WorkspaceCmd::Acquire(a) => acquire(ctx, &tasks, a),
        WorkspaceCmd::Release { name, force } => release(ctx, &tasks, name, force),
        WorkspaceCmd::Gc { force, dry_run } => gc(ctx, &tasks, force, dry_run),
        WorkspaceCmd::Shutdown { force } => shutdown(ctx, force),
    }
}

/// `workspace init`
fn init(ctx: &Ctx) -> Result<Out> {
    let p = ctx.project()?;
    let r = audited(ctx, "workspace.init", json!({"project": p.name}), || {
        pool::init(&ctx.home, &p)
    })?;
    let mut text = format!(
        "{}: {} workspace(s), {} created",
        p.name,
        r.workspaces.len(),
        r.created.len()
    );
    for (what, v) in [
        ("healed", &r.healed),
        ("recreated", &r.recreated),
        ("adopted", &r.adopted),
    ] {
        if !v.is_empty() {
            text.push_str(&format!(", {what}: {}", v.join(" ")));
        }
    }
    for s in &r.skipped {
        text.push_str(&format!(
            "\nskipped {} (not an orange worktree; left alone)",
            s.display()
        ));
    }
    text.push('\n');
    Ok(Out::new(r, text))
}

/// `workspace list [--all]`
fn list(ctx: &Ctx, all: bool) -> Result<Out> {
    let list = if all {
        pool::list(&ctx.home, None)?
    } else {
        let p = ctx.project()?;
        pool::list(&ctx.home, Some(&p.name))?
    };
    let text = if list.is_empty() {
        "no workspaces\n".to_string()
    } else {
        rows(&list, all)
    };
    // Nothing but a table, whose cells are made safe one by one.
    let out = Out::new(list, text);
    Ok(if crate::ui::output::table_colored() {
        out.styled()
    } else {
        out
    })
}

/// `workspace acquire --task LABEL [--wait [DURATION]]`
fn acquire(ctx: &Ctx, tasks: &TaskStore, a: AcquireArgs) -> Result<Out> {
    let p = ctx.project()?;
    let wait = a.wait.as_deref().map(parse_wait).transpose()?;
    let inputs = json!({"project": p.name, "task": a.task, "wait": a.wait});
    let w = audited(ctx, "workspace.acquire", inputs, || {
        pool::acquire(&ctx.home, &p, &a.task, wait, tasks)
    })?;
    let text = format!("{}\t{}\n", w.name, w.path.display());
    Ok(Out::new(w, text))
}

/// `workspace release NAME [--force]`: refused while an active task's agent works in it;
/// a queued task starts in it.
fn release(ctx: &Ctx, tasks: &TaskStore, name: String, force: bool) -> Result<Out> {
    let ws = pool::find(&ctx.home, &name)?;
    let p = match &ctx.project {
        Some(_) => ctx.project()?,
        None => crate::orchestration::project::get(&ctx.home, &ws.project)?,
    };
    let inputs = json!({"project": p.name, "name": name, "force": force});
    // The task lock: no spawn binds it between the check and the release.
    let tasks_lock = tasks.lock(&p.name)?;
    let outcome = audited(ctx, "workspace.release", inputs, || {
        // An active task's agent works in it: freed, it would go to the next task
        // while that agent runs on. The task gives it back when it ends.
        if let Some(label) = ws.task.as_deref() {
            if pool::TaskLookup::is_live(tasks, &p.name, label) {
                return Err(OrangeError::InvalidTransition(format!(
                    "workspace {name} belongs to task {label}, which is active; `orange task merge {label}` or `orange task cancel {label}` returns it"
                )));
            }
        }
        pool::release(&ctx.home, &p, &name, force).map(|o| o.describe())
    })?;
    drop(tasks_lock);
    let ws = pool::find(&ctx.home, &name)?;
    let next = TaskService::new(&ctx.home).spawn_next(&p.name);
    let mut text = match outcome.as_str() {
        "already_available" => format!("{name} was already available\n"),
        "recreated" => format!("released {name} (its directory was gone: recreated)\n"),
        "recycled" => format!("released {name} (reset failed: worktree recreated)\n"),
        "set_up_again" => format!(
            "released {name} (its task changed what the setup command made: set up again)\n"
        ),
        _ => format!("released {name}\n"),
    };
    if let Some(id) = &next.spawned {
        text.push_str(&format!("started queued task {id}\n"));
    }
    let mut v = serde_json::to_value(ws).unwrap();
    v["outcome"] = json!(outcome);
    v["next"] = serde_json::to_value(&next).unwrap();
    Ok(Out::new(v, text))
}

/// `workspace gc [--force] [--dry-run]`: a queued task starts in what it freed.
fn gc(ctx: &Ctx, tasks: &TaskStore, force: bool, dry_run: bool) -> Result<Out> {
    let p = ctx.project()?;
    let inputs = json!({"project": p.name, "force": force, "dry_run": dry_run});
    // The task lock: no spawn is between acquiring a slot and recording it.
    let r = {
        let _tasks_lock = tasks.lock(&p.name)?;
        audited(ctx, "workspace.gc", inputs, || {
            let busy = crate::orchestration::reconcile::agent_workspaces(
                &ctx.home,
                &crate::adapters::tmux::Tmux::from_env(),
            )?;
            pool::gc(&ctx.home, &p, tasks, &busy, force, dry_run)
        })?
    };
    let next = if !dry_run && !r.released.is_empty() {
        Some(TaskService::new(&ctx.home).spawn_next(&p.name))
    } else {
        None
    };
    let mut text = format!(
        "{}{} released, {} kept, {} skipped\n",
        if dry_run { "(dry run) " } else { "" },
        r.released.len(),
        r.kept.len(),
        r.skipped.len()
    );
    for s in &r.skipped {
        text.push_str(&format!(
            "skipped {}: {}\n",
            s["name"].as_str().unwrap_or(""),
            s["reason"].as_str().unwrap_or("")
        ));
    }
    if let Some(id) = next.as_ref().and_then(|n| n.spawned.as_ref()) {
        text.push_str(&format!("started queued task {id}\n"));
    }
    let mut v = serde_json::to_value(&r).unwrap();
    v["next"] = serde_json::to_value(&next).unwrap();
    Ok(Out::new(v, text))
}

/// `workspace shutdown [--force]`
fn shutdown(ctx: &Ctx, force: bool) -> Result<Out> {
    let p = ctx.project()?;
    let r = audited(
        ctx,
        "workspace.shutdown",
        json!({"project": p.name, "force": force}),
        || pool::shutdown(&ctx.home, &p, force),
    )?;
    let mut text = format!("{}: removed {} worktree(s)\n", p.name, r.removed.len());
    for l in &r.left {
        text.push_str(&format!("left {} (not an orange worktree)\n", l.display()));
    }
    Ok(Out::new(r, text))
}
