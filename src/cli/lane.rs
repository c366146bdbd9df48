//! `orange lane create|list|status|close|gc` (seed 001).

use clap::{Args, Subcommand};
use serde_json::json;

use super::{audited, Ctx};
use crate::error::{OrangeError, Result};
use crate::orchestration::lane::{CreateRequest, LaneRecord, Lanes};
use crate::ui::output::{table, Out};

#[derive(Debug, Subcommand)]
pub enum LaneCmd {
    /// Create a lane: a dedicated worktree on lane/<id>, a fresh session, an agent
    Create(CreateArgs),
    /// List lanes (closed ones with --include-closed)
    List {
        /// Closed lanes too
        #[arg(long)]
        include_closed: bool,
    },
    /// Show a lane and whether its backend session and agent are alive
    Status {
        /// The lane's id (from `lane create` or `lane list`)
        lane_id: String,
    },
    /// Close a lane: kill its session and remove its worktree (the branch is kept)
    Close {
        /// The lane's id (from `lane create` or `lane list`)
        lane_id: String,
        /// Keep the worktree on disk
        #[arg(long)]
        keep_worktree: bool,
        /// Close a running lane / remove a worktree with uncommitted changes
        #[arg(long)]
        force: bool,
    },
    /// Close finished/error lanes idle longer than the TTL (never running ones)
    Gc {
        /// e.g. 30m, 2h, 1d
        #[arg(long, value_name = "DURATION")]
        idle_ttl: String,
        /// Also remove their worktrees (never one with uncommitted changes, unpushed
        /// commits or a process working in it, unless --force)
        #[arg(long)]
        remove_worktree: bool,
        /// Close running lanes too, and remove worktrees with uncommitted changes
        #[arg(long)]
        force: bool,
        /// Show what would be closed, change nothing
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The user-visible task key (any text; not blank)
    #[arg(long, allow_hyphen_values = true)]
    pub task_id: String,
    /// Start point of lane/<id> (default: origin/<default branch>)
    #[arg(long)]
    pub base_ref: Option<String>,
    /// Where the worktree goes (default: $ORANGE_HOME/lanes/<task-slug>-<lane-id>)
    #[arg(long)]
    pub worktree_path: Option<std::path::PathBuf>,
    /// Multiplexer backend
    #[arg(long, value_parser = ["tmux", "zellij"])]
    pub mux: Option<String>,
    /// Agent harness (default: config's default_harness, else the first installed)
    #[arg(long)]
    pub harness: Option<String>,
    /// Initial message for the agent (text only)
    #[arg(long, allow_hyphen_values = true)]
    pub seed_context: Option<String>,
}

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
    super::reconcile(ctx);
    match cmd {
        LaneCmd::Create(a) => {
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
        LaneCmd::List { include_closed } => {
            let list = lanes.list(include_closed)?;
            let text = rows(&list);
            Ok(Out::new(list, text))
        }
        LaneCmd::Status { lane_id } => {
            let (rec, backend) = lanes.status(&lane_id)?;
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
        LaneCmd::Close {
            lane_id,
            keep_worktree,
            force,
        } => {
            let inputs =
                json!({"lane_id": lane_id, "keep_worktree": keep_worktree, "force": force});
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
        LaneCmd::Gc {
            idle_ttl,
            remove_worktree,
            force,
            dry_run,
        } => {
            let ttl = humantime::parse_duration(&idle_ttl).map_err(|e| {
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
    }
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
