//! `orange lane create|list|status|close|gc` (seed 001): one function per verb. The
//! repairs before them are the table's (`args::Command::does`).

use serde_json::json;

use super::args::{LaneCmd, LaneCreateArgs};
use super::context::{audited, Ctx};
use crate::error::{OrangeError, Result};
use crate::orchestration::lane::{CreateRequest, LaneRecord, Lanes};
use crate::ui::output::{table, Out};

fn rows(lanes: &[LaneRecord]) -> String {
    if lanes.is_empty() {
        return "no lanes\n".into();
    }
    let rows: Vec<Vec<String>> = lanes
        .iter()
        .map(|l| {
            vec![
                l.lane_id.clone(),
                l.state.as_str().to_string(),
                l.mux_backend.clone(),
                l.task_id.clone(),
                l.branch_name.clone(),
                l.last_error.clone().unwrap_or_default(),
            ]
        })
        .collect();
    table(&["LANE", "STATE", "MUX", "TASK", "BRANCH", "ERROR"], &rows)
}

pub fn run(ctx: &Ctx, cmd: LaneCmd) -> Result<Out> {
    let lanes = Lanes::new(&ctx.home);
    match cmd {
        LaneCmd::Create(a) => create(ctx, &lanes, a),
        LaneCmd::List { include_closed } => list(&lanes, include_closed),
        LaneCmd::Status { lane_id } => status(&lanes, &lane_id),
        LaneCmd::Close {
            lane_id,
            keep_worktree,
            force,
        } => close(ctx, &lanes, lane_id, keep_worktree, force),
        LaneCmd::Gc {
            idle_ttl,
            remove_worktree,
            force,
            dry_run,
        } => gc(ctx, &lanes, &idle_ttl, remove_worktree, force, dry_run),
    }
}

/// `lane create --task-id KEY …`
fn create(ctx: &Ctx, lanes: &Lanes, a: LaneCreateArgs) -> Result<Out> {
    let inputs = json!({"task_id": a.task_id, "base_ref": a.base_ref, "worktree_path": a.worktree_path,
        "mux": a.mux, "harness": a.harness, "seed_context": a.seed_context});
    let created = audited(ctx, "lane.create", inputs, || {
        let project = ctx.project()?;
        lanes.create(
            &project,
            CreateRequest {
                task_id: a.task_id,
                base_ref: a.base_ref,
                worktree_path: a.worktree_path,
                mux: a.mux,
                harness: a.harness,
                seed_context: a.seed_context,
            },
        )
    })?;
    let l = &created.lane;
    let text = format!(
        "lane {} ({}) running in {} session {}\n  attach:   {}\n  status:   {}\n  close:    {}\n  worktree: {}\n",
        l.lane_id, l.branch_name, l.mux_backend, l.mux_target,
        created.hints.attach, created.hints.status, created.hints.close, created.hints.worktree
    );
    Ok(Out::new(created, text))
}

/// `lane list [--include-closed]`
fn list(lanes: &Lanes, include_closed: bool) -> Result<Out> {
    let list = lanes.list(include_closed)?;
    let text = rows(&list);
    Ok(Out::new(list, text))
}

/// `lane status LANE`
fn status(lanes: &Lanes, lane_id: &str) -> Result<Out> {
    let (rec, backend) = lanes.status(lane_id)?;
    let text = format!(
        "lane {} [{}] for task {}\n  session   {} {}: {}\n  worktree  {}\n{}",
        rec.lane_id,
        rec.state.as_str(),
        rec.task_id,
        rec.mux_backend,
        rec.mux_target,
        backend_text(&backend),
        rec.worktree_path.display(),
        rec.last_error
            .as_ref()
            .map(|e| format!("  last error: {e}\n"))
            .unwrap_or_default()
    );
    let mut v = serde_json::to_value(&rec).unwrap();
    v["backend"] = backend;
    Ok(Out::new(v, text))
}

/// `lane close LANE [--keep-worktree] [--force]`
fn close(
    ctx: &Ctx,
    lanes: &Lanes,
    lane_id: String,
    keep_worktree: bool,
    force: bool,
) -> Result<Out> {
    let inputs = json!({"lane_id": lane_id, "keep_worktree": keep_worktree, "force": force});
    let rec = audited(ctx, "lane.close", inputs, || {
        lanes.close(&lane_id, !keep_worktree, force)
    })?;
    let text = format!(
        "lane {} closed{}\n",
        rec.lane_id,
        if rec.worktree_removed {
            " (worktree removed; branch kept)"
        } else {
            ""
        }
    );
    Ok(Out::new(rec, text))
}

/// `lane gc --idle-ttl DURATION [--remove-worktree] [--force] [--dry-run]`
fn gc(
    ctx: &Ctx,
    lanes: &Lanes,
    idle_ttl: &str,
    remove_worktree: bool,
    force: bool,
    dry_run: bool,
) -> Result<Out> {
    let ttl = humantime::parse_duration(idle_ttl).map_err(|e| {
        OrangeError::invalid(format!(
            "invalid --idle-ttl {idle_ttl:?}: {e} (examples: 30m, 2h, 1d)"
        ))
    })?;
    let inputs = json!({"idle_ttl": idle_ttl, "remove_worktree": remove_worktree,
        "force": force, "dry_run": dry_run});
    let r = audited(ctx, "lane.gc", inputs, || {
        lanes.gc(ttl, remove_worktree, force, dry_run)
    })?;
    let text = format!(
        "checked {}, closed {}, skipped {}, errors {}\n",
        r.checked,
        r.closed.len(),
        r.skipped.len(),
        r.errors.len()
    );
    Ok(Out::new(r, text))
}

/// What `lane status` says of its session, in words: `live, agent running, last output 12s
/// ago`, `agent exited with status 3`, `gone`.
fn backend_text(b: &serde_json::Value) -> String {
    if let Some(e) = b["error"].as_str() {
        return format!("could not be asked ({e})");
    }
    if b["session_exists"] != true {
        return "gone".into();
    }
    let mut parts = vec!["live".to_string()];
    if b["agent_running"] == true {
        parts.push("agent running".into());
    } else if let Some(c) = b["exit_status"].as_i64() {
        parts.push(format!("agent exited with status {c}"));
    } else if let Some(sig) = b["exit_signal"].as_i64() {
        parts.push(format!("agent killed by signal {sig}"));
    } else {
        parts.push("agent exited".into());
    }
    if let Some(t) = b["last_activity"].as_i64() {
        let now = chrono::Utc::now().timestamp();
        parts.push(format!(
            "last output {}",
            crate::ui::output::ago_secs(now - t)
        ));
    }
    parts.join(", ")
}
