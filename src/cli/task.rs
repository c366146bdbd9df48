//! `orange task create|list|show|peek|spawn|attach|respawn|update|complete|stuck|merge|cancel|delete`

use std::io::{IsTerminal, Read, Write};

use clap::{Args, Subcommand};
use serde_json::json;
use unicode_width::UnicodeWidthStr;

use super::{audited, Ctx};
use crate::error::{OrangeError, Result};
use crate::execution::sandbox;
use crate::orchestration::task::service::{TaskService, TaskView};
use crate::orchestration::task::start::CreateRequest;
use crate::orchestration::task::{Status, Task};
use crate::ui::output::{table, Out};

#[derive(Debug, Subcommand)]
pub enum TaskCmd {
    /// Create a task and start its agent (queued when the pool is full)
    Create(CreateArgs),
    /// List the project's tasks (oldest first) with their session state
    List {
        /// Only tasks with this status
        #[arg(long)]
        status: Option<String>,
        /// Every project's tasks, grouped by project
        #[arg(long)]
        all: bool,
    },
    /// Show one task: fields, session, TASK.md and history
    Show {
        /// The task: its id, a unique prefix of it, or its branch
        id: String,
    },
    /// Which signal decided the agent's current state, and when
    Explain {
        /// The task: its id, a unique prefix of it, or its branch
        id: String,
    },
    /// Print the last lines of the task's agent pane
    Peek {
        /// The task: its id, a unique prefix of it, or its branch
        id: String,
        /// How many lines from the bottom of its pane
        #[arg(long, default_value_t = 40)]
        lines: usize,
    },
    /// Start the agent of a pending task
    Spawn {
        /// The task: its id, a unique prefix of it, or its branch
        id: String,
    },
    /// Attach to the task's session (switch-client inside tmux, attach-session outside)
    Attach {
        /// The task: its id, a unique prefix of it, or its branch
        id: String,
    },
    /// Restart the agent of an active task whose agent exited or whose session is gone,
    /// or retry a failed task from the start
    Respawn {
        /// The task: its id, a unique prefix of it, or its branch
        id: String,
    },
    /// Change a task's status, summary or branch (ID defaults to $ORANGE_TASK_ID or the
    /// workspace you are in)
    Update {
        /// The task: its id, a unique prefix of it, or its branch (default: $ORANGE_TASK_ID, or
        /// the workspace you are in)
        id: Option<String>,
        /// New status (pending … stuck; done/cancelled go through merge/cancel)
        #[arg(long)]
        status: Option<String>,
        /// New summary (the first line of TASK.md and the sidebar's title)
        #[arg(long, allow_hyphen_values = true)]
        summary: Option<String>,
        /// Rename the branch to NAME, or without NAME record the branch the workspace is on
        #[arg(long, num_args = 0..=1, value_name = "NAME")]
        branch: Option<Option<String>>,
    },
    /// Mark the task ready for review (agents call this when done)
    Complete {
        /// The task: its id, a unique prefix of it, or its branch (default: $ORANGE_TASK_ID, or
        /// the workspace you are in)
        id: Option<String>,
    },
    /// Mark the task stuck (agents call this when they cannot go on)
    Stuck {
        /// The task: its id, a unique prefix of it, or its branch (default: $ORANGE_TASK_ID, or
        /// the workspace you are in)
        id: Option<String>,
    },
    /// Merge the task's branch into the default branch, return its workspace, mark it done
    Merge {
        /// The task: its id, a unique prefix of it, or its branch
        id: String,
        /// ff (fast-forward only, default) or merge (always a merge commit)
        #[arg(long, value_parser = ["ff", "merge"], default_value = "ff")]
        strategy: String,
        /// Do not look for a pull request with gh
        #[arg(long)]
        local: bool,
    },
    /// Cancel a task: kill its session and return its workspace (kept if it has uncommitted work)
    Cancel {
        /// The task: its id, a unique prefix of it, or its branch
        id: String,
        /// Do not ask for confirmation
        #[arg(long)]
        yes: bool,
    },
    /// Delete a done, cancelled or failed task's record (its branch stays)
    Delete {
        /// The task: its id, a unique prefix of it, or its branch
        id: String,
        /// Do not ask for confirmation
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Branch for the task (default: orange-tasks/<id>); an existing local or remote
    /// branch is reused
    pub branch: Option<String>,
    /// What the agent should do (its first prompt; quotes, $(…) and newlines are safe).
    /// Left out: the agent starts interactive, with no prompt; the first prompt you type
    /// in its pane becomes the summary
    #[arg(allow_hyphen_values = true)]
    pub summary: Option<String>,
    /// Agent harness: claude, pi, codex, opencode, or one from config.toml
    /// (default: config's default_harness, else the first installed of pi, opencode, claude, codex)
    #[arg(long)]
    pub harness: Option<String>,
    /// Extra context for TASK.md's ## Context: "-" reads standard input
    #[arg(long, value_name = "TEXT|-", allow_hyphen_values = true)]
    pub context: Option<String>,
    /// Create the task as pending (queued) without starting the agent
    #[arg(long)]
    pub no_spawn: bool,
    /// Run the agent in a sandbox: bwrap (bubblewrap: the system and $HOME read-only;
    /// writable only the workspace, the git dirs its commits need, the agent's own state
    /// and a private /tmp) or none. Default: the project's, the harness's, config.toml's
    #[arg(long, value_name = "bwrap|none")]
    pub sandbox: Option<String>,
}

pub(crate) fn first_line(s: &str, max: usize) -> String {
    let line = s.lines().next().unwrap_or("");
    let mut out = String::new();
    for c in line.chars() {
        if out.width() + c.to_string().width() > max {
            out.push('…');
            break;
        }
        out.push(c);
    }
    out
}

fn describe(v: &TaskView) -> String {
    format!(
        "{} {}/{} [{}] [{}] {} {}",
        v.task.id,
        v.task.project,
        v.task.branch,
        v.task.status,
        v.task.harness,
        v.session.icon(),
        v.session.state
    )
}

/// The task `id`, once the user said yes to `<verb> task …?` (or passed --yes).
fn confirmed(
    tasks: &TaskService,
    id: &str,
    project: Option<&str>,
    verb: &str,
    yes: bool,
) -> Result<crate::orchestration::task::Task> {
    let t = tasks.get(id, project)?;
    confirm(
        &format!("{verb} task {} ({}/{})?", t.id, t.project, t.branch),
        yes,
    )?;
    Ok(t)
}

pub(crate) fn confirm(question: &str, yes: bool) -> Result<()> {
    if yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        return Err(OrangeError::invalid(format!(
            "{question} — pass --yes to confirm (no terminal to ask on)"
        )));
    }
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .map_err(|e| OrangeError::io("reading the answer", e))?;
    if matches!(answer.trim(), "y" | "Y" | "yes") {
        Ok(())
    } else {
        Err(OrangeError::invalid("not confirmed; nothing changed"))
    }
}

pub fn run(ctx: &Ctx, cmd: TaskCmd) -> Result<Out> {
    let starts = matches!(
        cmd,
        TaskCmd::Create(_) | TaskCmd::Spawn { .. } | TaskCmd::Respawn { .. }
    );
    let mutating = !matches!(
        cmd,
        TaskCmd::List { .. }
            | TaskCmd::Show { .. }
            | TaskCmd::Explain { .. }
            | TaskCmd::Peek { .. }
            | TaskCmd::Attach { .. }
    );
    // Every task command sees repaired state (a crashed command's leftovers).
    super::reconcile(ctx);
    let out = run_command(ctx, cmd);
    if mutating {
        // Failed commands change state too (a task recorded as failed).
        let tasks = TaskService::new(&ctx.home);
        crate::ui::status::changed(&ctx.home, &tasks.tmux);
        if let Ok(out) = &out {
            auto_sidebar(&tasks, &out.json, starts);
        }
    }
    out
}

/// `@orange-sidebar-auto on`: a session that just started (this task's, or the queued
/// task a merge or cancel started) opens with the sidebar. Best effort: the plugin side
/// must never fail a task command.
fn auto_sidebar(tasks: &TaskService, out: &serde_json::Value, starts: bool) {
    let mut sessions: Vec<String> = vec![];
    if starts {
        sessions.extend(out["tmux_session_id"].as_str().map(str::to_string));
    }
    if let Some(id) = out["next"]["spawned"].as_str() {
        if let Ok(t) = tasks.get(id, None) {
            sessions.extend(t.tmux_session_id);
        }
    }
    for s in sessions {
        let _ = crate::ui::plugin::auto_sidebar(tasks.home, &tasks.tmux, &s);
    }
}

fn run_command(ctx: &Ctx, cmd: TaskCmd) -> Result<Out> {
    let mut tasks = TaskService::new(&ctx.home);
    let t = &mut tasks;
    match cmd {
        TaskCmd::Create(a) => create(ctx, t, a),
        TaskCmd::List { status, all } => list(ctx, t, status, all),
        TaskCmd::Show { id } => show(ctx, t, &id),
        TaskCmd::Explain { id } => explain(ctx, t, &id),
        TaskCmd::Peek { id, lines } => peek(ctx, t, &id, lines),
        TaskCmd::Spawn { id } => spawn(ctx, t, id),
        TaskCmd::Respawn { id } => respawn(ctx, t, id),
        TaskCmd::Attach { id } => attach(ctx, t, &id),
        TaskCmd::Update {
            id,
            status,
            summary,
            branch,
        } => update(ctx, t, id, status, summary, branch),
        TaskCmd::Complete { id } => report(ctx, t, id, Status::Reviewing, "task.complete"),
        TaskCmd::Stuck { id } => report(ctx, t, id, Status::Stuck, "task.stuck"),
        TaskCmd::Merge {
            id,
            strategy,
            local,
        } => merge(ctx, t, id, strategy, local),
        TaskCmd::Cancel { id, yes } => cancel(ctx, t, id, yes),
        TaskCmd::Delete { id, yes } => delete(ctx, t, id, yes),
    }
}

/// `task create`
fn create(ctx: &Ctx, tasks: &mut TaskService, a: CreateArgs) -> Result<Out> {
    let project = ctx.project()?;
    let context = match a.context.as_deref() {
        Some("-") => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| OrangeError::io("reading --context from standard input", e))?;
            Some(s)
        }
        other => other.map(str::to_string),
    };
    let inputs = json!({"project": project.name, "branch": a.branch, "summary": a.summary, "harness": a.harness, "no_spawn": a.no_spawn, "sandbox": a.sandbox});
    let created = audited(ctx, "task.create", inputs, || {
        tasks.create(
            &project,
            CreateRequest {
                branch: a.branch.filter(|b| !b.is_empty()),
                summary: a.summary,
                harness: a.harness,
                context,
                spawn: !a.no_spawn,
                sandbox: a.sandbox,
            },
        )
    })?;
    let t = &created.task;
    let mut text = format!(
        "created task {} ({}/{}) [{}] [{}]",
        t.id, t.project, t.branch, t.status, t.harness
    );
    match created.outcome {
        "spawned" => text.push_str(&format!(
            " in {} → tmux session {}",
            t.workspace.as_deref().unwrap_or("?"),
            t.tmux_session.as_deref().unwrap_or("?")
        )),
        "queued" => text.push_str(&format!(
            "; queued: {}",
            created.note.as_deref().unwrap_or("")
        )),
        _ => {}
    }
    text.push('\n');
    if t.awaiting_prompt && created.outcome == "spawned" {
        text.push_str(&format!(
            "no prompt: the agent waits for yours; type it in its pane (`orange task attach {}`)\n",
            t.id
        ));
    }
    Ok(Out::new(created, text))
}

/// `task list [--status S] [--all]`
fn list(ctx: &Ctx, tasks: &mut TaskService, status: Option<String>, all: bool) -> Result<Out> {
    let status_arg = status.clone();
    let status = status.as_deref().map(Status::parse).transpose()?;
    let project = if all { None } else { Some(ctx.project()?.name) };
    let mut list = tasks.list(project.as_deref(), status)?;
    if all {
        // Many projects in one view: grouped by project, oldest first in each.
        list.sort_by(|a, b| {
            a.task
                .project
                .cmp(&b.task.project)
                .then(a.task.created_at.cmp(&b.task.created_at))
        });
    }
    // Every host's tasks too (one request per host, at once), marked with their host; a
    // host that cannot be asked keeps its last known tasks, marked with its `host_state`.
    let remote = match all {
        true => super::remote::task_lists(ctx, status_arg.as_deref()),
        false => vec![],
    };
    let mut rows: Vec<Vec<String>> = list
        .iter()
        .map(|v| {
            let mut r = vec![
                v.task.id.clone(),
                v.task.status.as_str().to_string(),
                format!("{} {}", v.session.icon(), v.session.state),
                match (v.agent.state, &v.agent.escalated) {
                    (_, Some(_)) => "needs you".to_string(),
                    (Some(st), _) if v.task.status.is_active() => st.as_str().to_string(),
                    _ => "-".to_string(),
                },
                v.task.branch.clone(),
                v.task.harness.clone(),
                first_line(&v.task.summary, 48),
            ];
            if all {
                r.insert(0, v.task.project.clone());
            }
            r
        })
        .collect();
    rows.extend(remote.iter().map(|v| super::remote::row(v, true)));
    let text = if rows.is_empty() {
        "no tasks\n".to_string()
    } else if all {
        table(
            &[
                "PROJECT", "ID", "STATUS", "SESSION", "AGENT", "BRANCH", "HARNESS", "SUMMARY",
            ],
            &rows,
        )
    } else {
        table(
            &[
                "ID", "STATUS", "SESSION", "AGENT", "BRANCH", "HARNESS", "SUMMARY",
            ],
            &rows,
        )
    };
    let mut json = serde_json::to_value(&list).unwrap_or_default();
    if let Some(a) = json.as_array_mut() {
        a.extend(remote);
    }
    Ok(Out::new(json, text))
}

/// `task show ID`
fn show(ctx: &Ctx, tasks: &mut TaskService, id: &str) -> Result<Out> {
    let t = tasks.get(id, ctx.project.as_deref())?;
    let history = tasks.store.history(&t.project, &t.id);
    let md_path = tasks.store.task_md(&t.project, &t.id);
    // One invalid byte must not drop the whole text: shown lossily.
    let md = crate::text::lossy(std::fs::read(&md_path).unwrap_or_default());
    // Token use as of now (only what the transcripts gained since the last read). Best
    // effort: `task show` must not fail on it.
    let _ = tasks.update_usage(&t);
    let view = tasks.view(t, &tasks.panes());
    let mut text = format!(
        "{}\nsummary: {}{}\nworkspace: {}\nsession: {}{}\nTASK.md: {}\n",
        describe(&view),
        view.task.summary,
        if view.task.awaiting_prompt {
            " (its branch: the agent waits for its first prompt, typed in its pane)"
        } else {
            ""
        },
        view.task.workspace.as_deref().unwrap_or("-"),
        view.task.tmux_session.as_deref().unwrap_or("-"),
        match (view.session.exit_status, view.session.exit_signal) {
            (Some(c), _) => format!(" (agent exited with status {c})"),
            (_, Some(s)) => format!(" (agent killed by signal {s})"),
            _ => String::new(),
        },
        md_path.display()
    );
    if view.task.sandbox != sandbox::Kind::None {
        text.push_str(&format!(
            "sandbox: {} (writes only its workspace, its git dirs, its agent's state)\n",
            view.task.sandbox.as_str()
        ));
    }
    if let Some(f) = &view.task.failure {
        text.push_str(&format!(
            "failed: {f}\nto do: `orange task respawn {id}` retries, `orange task delete {id}` removes it\n",
            id = view.task.id
        ));
    }
    text.push_str(&agent_text(&view.agent, &view.task.id));
    text.push_str(&tokens_text(view.tokens.as_ref(), &view.task.harness));
    let body = md.trim_end();
    if !body.is_empty() {
        text.push_str("\nTASK.md:\n");
        for line in body.lines() {
            text.push_str(&format!("  {line}\n"));
        }
        text.push('\n');
    }
    text.push_str("history (newest first):\n");
    let now = chrono::Utc::now();
    for e in history.iter().rev().take(10) {
        text.push_str(&format!(
            "  {:>8}  {}\n",
            crate::ui::output::ago(&e.ts, now),
            event_text(e)
        ));
    }
    if history.len() > 10 {
        text.push_str(&format!(
            "  … {} older (all of them with --json)\n",
            history.len() - 10
        ));
    }
    let mut v = serde_json::to_value(&view).unwrap();
    v["history"] = serde_json::to_value(&history).unwrap();
    v["task_md"] = json!(md);
    v["task_md_path"] = json!(md_path);
    Ok(Out::new(v, text))
}

/// One history event in words, with what it carries: `status working → reviewing (via
/// sandbox)`, `agent exited (status 1): why`, `nudged: Please continue…`.
fn event_text(e: &crate::orchestration::task::Event) -> String {
    let d = &e.data;
    let s = |k: &str| d.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let via = s("via").map(|v| format!(" (via {v})")).unwrap_or_default();
    match e.event.as_str() {
        "status.changed" => format!(
            "status {} → {}{via}",
            s("from").unwrap_or_else(|| "?".into()),
            s("to").unwrap_or_else(|| "?".into())
        ),
        "task.created" => format!(
            "created on branch {} ({}{})",
            s("branch").unwrap_or_default(),
            s("harness").unwrap_or_default(),
            s("sandbox")
                .filter(|x| x != "none")
                .map(|x| format!(", sandbox {x}"))
                .unwrap_or_default()
        ),
        "agent.spawned" => format!(
            "agent started in {} (session {})",
            s("workspace").unwrap_or_default(),
            s("tmux_session").unwrap_or_default()
        ),
        "agent.exited" => {
            let how = match (
                d.get("exit_status").and_then(|v| v.as_i64()),
                d.get("exit_signal").and_then(|v| v.as_i64()),
            ) {
                (Some(c), _) => format!("status {c}"),
                (_, Some(sig)) => format!("signal {sig}"),
                _ => "?".into(),
            };
            let why = s("detail").map(|w| format!(": {w}")).unwrap_or_default();
            format!("agent exited ({how}){why}")
        }
        "agent.nudged" => format!("nudged: {}", s("message").unwrap_or_default()),
        "task.failed" => format!("could not start: {}", s("error").unwrap_or_default()),
        _ => {
            let mut extra: Vec<String> = d
                .iter()
                .filter(|(k, _)| k.as_str() != "via")
                .map(|(k, v)| match v.as_str() {
                    Some(t) => format!("{k}={t}"),
                    None => format!("{k}={v}"),
                })
                .collect();
            extra.truncate(4);
            let extra = if extra.is_empty() {
                String::new()
            } else {
                format!(" {}", extra.join(" "))
            };
            format!("{}{extra}{via}", e.event)
        }
    }
}

/// `task explain ID`
fn explain(ctx: &Ctx, tasks: &mut TaskService, id: &str) -> Result<Out> {
    let t = tasks.get(id, ctx.project.as_deref())?;
    let view = tasks.view(t, &tasks.panes());
    let a = &view.agent;
    let state = a.state.map(|s| s.as_str()).unwrap_or("unknown");
    let mut text = format!("task {}: agent {state}", view.task.id);
    match a.signal {
        Some(sig) if !a.at.is_empty() => text.push_str(&format!(
            ", decided by {} at {} (in this state since {})",
            match sig {
                crate::orchestration::agent::Signal::Hook => "an agent hook",
                crate::orchestration::agent::Signal::Log => "the Claude session log",
                crate::orchestration::agent::Signal::Pane => "the tmux pane (process exit)",
                crate::orchestration::agent::Signal::Screen => "screen activity",
                crate::orchestration::agent::Signal::None => "nothing",
            },
            a.at,
            a.since
        )),
        _ => text.push_str(" (the monitor has not looked at it yet)"),
    }
    text.push('\n');
    if let (Some(e), Some(at)) = (&a.hook_event, &a.hook_at) {
        text.push_str(&format!("last agent hook: {e} at {at}\n"));
    }
    text.push_str(&agent_text(a, &view.task.id));
    if a.nudges > 0 {
        text.push_str(&format!("nudged {} time(s)\n", a.nudges));
    }
    if view.task.crash_count > 0 {
        text.push_str(&format!("crashes: {}\n", view.task.crash_count));
    }
    if let Some(e) = &a.escalated {
        text.push_str(&format!("ESCALATED at {}: {}\n", e.at, e.reason));
    }
    Ok(Out::new(
        json!({"id": view.task.id, "agent": view.agent, "session": view.session, "crash_count": view.task.crash_count}),
        text,
    ))
}

/// The task and its session's target, which must exist.
fn live_session(
    ctx: &Ctx,
    tasks: &TaskService,
    id: &str,
) -> Result<(crate::orchestration::task::Task, String)> {
    let t = tasks.get(id, ctx.project.as_deref())?;
    let target = tasks.session_target(&t)?;
    if !tasks.tmux.has_session(&target)? {
        return Err(OrangeError::invalid(format!(
            "task {}'s session is gone; `orange task respawn {}` starts a new one",
            t.id, t.id
        )));
    }
    Ok((t, target))
}

/// `task peek ID [--lines N]`
fn peek(ctx: &Ctx, tasks: &mut TaskService, id: &str, lines: usize) -> Result<Out> {
    let (t, target) = live_session(ctx, tasks, id)?;
    let screen = tasks.tmux.capture_pane(&target, lines)?;
    // A quiet agent leaves the screen mostly blank: fold runs of blank lines so the
    // last N lines are the ones with something on them.
    let mut all: Vec<&str> = vec![];
    for l in screen.lines() {
        if !(l.trim().is_empty() && all.last().is_none_or(|p: &&str| p.trim().is_empty())) {
            all.push(l);
        }
    }
    let tail = all[all.len().saturating_sub(lines)..].join("\n");
    let text = format!("{tail}\n");
    Ok(Out::new(
        json!({"id": t.id, "session": target, "lines": tail}),
        text,
    ))
}

/// `task spawn ID`
fn spawn(ctx: &Ctx, tasks: &mut TaskService, id: String) -> Result<Out> {
    let t = audited(ctx, "task.spawn", json!({"id": id}), || {
        tasks.spawn(&id, ctx.project.as_deref())
    })?;
    let text = format!(
        "spawned task {} in {} → tmux session {}\n",
        t.id,
        t.workspace.as_deref().unwrap_or("?"),
        t.tmux_session.as_deref().unwrap_or("?")
    );
    Ok(Out::new(t, text))
}

/// `task respawn ID`
fn respawn(ctx: &Ctx, tasks: &mut TaskService, id: String) -> Result<Out> {
    let t = audited(ctx, "task.respawn", json!({"id": id}), || {
        tasks.respawn(&id, ctx.project.as_deref())
    })?;
    let text = if t.status == Status::Pending {
        format!(
            "task {} is queued: the pool is full; it starts when a workspace is released\n",
            t.id
        )
    } else {
        format!(
            "respawned task {} → tmux session {}\n",
            t.id,
            t.tmux_session.as_deref().unwrap_or("?")
        )
    };
    Ok(Out::new(t, text))
}

/// `task attach ID`
fn attach(ctx: &Ctx, tasks: &mut TaskService, id: &str) -> Result<Out> {
    let (t, target) = live_session(ctx, tasks, id)?;
    if std::env::var_os("TMUX").is_some_and(|v| !v.is_empty()) {
        tasks.tmux.switch_client(&target)?;
        Ok(Out::new(
            json!({"id": t.id, "session": target, "via": "switch-client"}),
            "",
        ))
    } else {
        Err(tasks.tmux.attach(&target))
    }
}

/// `task update [ID] [--status S] [--summary TEXT] [--branch [NAME]]`
fn update(
    ctx: &Ctx,
    tasks: &mut TaskService,
    id: Option<String>,
    status: Option<String>,
    summary: Option<String>,
    branch: Option<Option<String>>,
) -> Result<Out> {
    let t = match id {
        Some(id) => tasks.get(&id, ctx.project.as_deref())?,
        None => tasks.infer(&ctx.cwd)?,
    };
    if status.is_none() && summary.is_none() && branch.is_none() {
        return Err(OrangeError::invalid(
            "nothing to update: pass --status, --summary or --branch",
        ));
    }
    if sandbox::inside() && branch.is_none() {
        if let Some(s) = &status {
            Status::parse(s)?;
        }
        return requested(tasks, &t, "update", status, summary);
    }
    let inputs = json!({"id": t.id, "status": status, "summary": summary, "branch": branch});
    let t = audited(ctx, "task.update", inputs, || {
        let mut t = t;
        if let Some(s) = &summary {
            t = tasks.set_summary(&t, s)?;
        }
        if let Some(b) = &branch {
            t = tasks.set_branch(&t, b.as_deref())?;
        }
        if let Some(s) = &status {
            t = tasks.set_status(&t, Status::parse(s)?, "update")?;
        }
        Ok(t)
    })?;
    let text = format!(
        "task {} ({}/{}) [{}]\n",
        t.id, t.project, t.branch, t.status
    );
    Ok(Out::new(t, text))
}

/// `task merge ID [--strategy ff|merge] [--local]`
fn merge(
    ctx: &Ctx,
    tasks: &mut TaskService,
    id: String,
    strategy: String,
    local: bool,
) -> Result<Out> {
    let inputs = json!({"id": id, "strategy": strategy, "local": local});
    let (t, info, next) = audited(ctx, "task.merge", inputs, || {
        tasks.merge(&id, ctx.project.as_deref(), strategy == "ff", local)
    })?;
    let mut text = format!(
        "merged task {} ({}) via {}",
        t.id,
        t.branch,
        info["via"].as_str().unwrap_or("")
    );
    if let Some(c) = info["commit"].as_str() {
        text.push_str(&format!(" → {}", &c[..c.len().min(12)]));
    }
    if let Some(reason) = info["pr"]["reason"].as_str() {
        text.push_str(&format!(" ({reason})"));
    }
    text.push('\n');
    push_next(&mut text, &next);
    let mut v = serde_json::to_value(&t).unwrap();
    v["merge"] = info;
    v["next"] = serde_json::to_value(&next).unwrap();
    Ok(Out::new(v, text))
}

/// `task cancel ID [--yes]`
fn cancel(ctx: &Ctx, tasks: &mut TaskService, id: String, yes: bool) -> Result<Out> {
    let t = confirmed(tasks, &id, ctx.project.as_deref(), "Cancel", yes)?;
    let (t, note, next) = audited(ctx, "task.cancel", json!({"id": id}), || {
        tasks.cancel(&t.id, Some(&t.project))
    })?;
    let mut text = format!(
        "cancelled task {} ({}); {}\n",
        t.id,
        t.project,
        branch_left(ctx, &t)
    );
    if let Some(n) = &note {
        text.push_str(&format!("{n}\n"));
    }
    push_next(&mut text, &next);
    let mut v = serde_json::to_value(&t).unwrap();
    v["note"] = json!(note);
    v["next"] = serde_json::to_value(&next).unwrap();
    Ok(Out::new(v, text))
}

/// What became of a task's branch: kept; never made (the task never started: no agent
/// was ever spawned); or not there (deleted since, or its repository not readable).
fn branch_left(ctx: &Ctx, t: &Task) -> String {
    let exists = crate::orchestration::project::get(&ctx.home, &t.project)
        .is_ok_and(|p| crate::adapters::git::local_branch_exists(&p.path, &t.branch));
    let started = crate::orchestration::task::TaskStore::new(&ctx.home)
        .history(&t.project, &t.id)
        .iter()
        .any(|e| e.event == "agent.spawned");
    match (exists, started) {
        (true, _) => format!("branch {} kept", t.branch),
        (false, false) => format!("no branch {} was made (the task never started)", t.branch),
        (false, true) => format!("branch {} not found", t.branch),
    }
}

/// `task delete ID [--yes]`
fn delete(ctx: &Ctx, tasks: &mut TaskService, id: String, yes: bool) -> Result<Out> {
    let t = confirmed(tasks, &id, ctx.project.as_deref(), "Delete", yes)?;
    let t = audited(ctx, "task.delete", json!({"id": id}), || {
        tasks.delete(&t.id, Some(&t.project))
    })?;
    let text = format!("deleted task {} ({})\n", t.id, branch_left(ctx, &t));
    Ok(Out::new(t, text))
}

/// `task complete [ID]` and `task stuck [ID]`: an agent reports its task's state.
fn report(
    ctx: &Ctx,
    tasks: &mut TaskService,
    id: Option<String>,
    to: Status,
    op: &str,
) -> Result<Out> {
    let t = match id {
        Some(id) => tasks.get(&id, ctx.project.as_deref())?,
        None => tasks.infer(&ctx.cwd)?,
    };
    if sandbox::inside() {
        let verb = if to == Status::Stuck {
            "stuck"
        } else {
            "complete"
        };
        return requested(tasks, &t, verb, None, None);
    }
    let t = audited(ctx, op, json!({"id": t.id}), || {
        tasks.set_status(&t, to, op)
    })?;
    let text = format!("task {} is now {}\n", t.id, t.status);
    Ok(Out::new(t, text))
}

/// Inside a sandbox, where orange's state is read-only: the change is queued in the
/// task's directory for the monitor outside to carry out.
fn requested(
    tasks: &TaskService,
    t: &Task,
    op: &str,
    status: Option<String>,
    summary: Option<String>,
) -> Result<Out> {
    let dir = tasks.store.dir(&t.project, &t.id);
    let req = sandbox::Request {
        op: op.to_string(),
        status,
        summary,
        at: crate::adapters::store::now_rfc3339(),
    };
    sandbox::request(tasks.home, &dir, &req)?;
    let text = format!(
        "task {}: {op} requested (from the sandbox; orange's monitor carries it out)\n",
        t.id
    );
    Ok(Out::new(
        json!({"id": t.id, "requested": req, "sandbox": true}),
        text,
    ))
}

fn push_next(text: &mut String, next: &crate::orchestration::task::queue::NextSpawn) {
    for f in &next.failed {
        text.push_str(&format!(
            "queued task {} could not start (now failed): {}\n",
            f.id, f.error
        ));
    }
    if let Some(id) = &next.spawned {
        text.push_str(&format!("started queued task {id}\n"));
    }
    if let Some(e) = &next.error {
        text.push_str(&format!("could not start the next queued task: {e}\n"));
    }
}

/// The agent's detail, what the person must do about a dialog, and a dead agent's last
/// lines: the part of `task show` and `task explain` that says why.
fn agent_text(a: &crate::orchestration::agent::AgentInfo, task: &str) -> String {
    let mut text = String::new();
    if let Some(state) = a.state {
        text.push_str(&format!("agent: {}", state.as_str()));
        if let Some(k) = a
            .error_kind
            .filter(|_| state == crate::orchestration::agent::State::Error)
        {
            text.push_str(&format!(" ({})", k.as_str()));
        }
        text.push('\n');
    }
    if let Some(d) = &a.detail {
        text.push_str(&format!("detail: {d}\n"));
    }
    if let Some(b) = a.blocker {
        if !a
            .detail
            .as_deref()
            .is_some_and(|d| d.contains(&b.advice(task)))
        {
            text.push_str(&format!("to do: {}\n", b.advice(task)));
        }
    }
    if !a.last_lines.is_empty() {
        text.push_str("last lines of its pane:\n");
        for l in &a.last_lines {
            text.push_str(&format!("  | {l}\n"));
        }
    }
    text
}

/// `tokens: 1.2M in (1.1M cached) · 35k out`, or why they are unknown.
fn tokens_text(tokens: Option<&crate::orchestration::usage::Tokens>, harness: &str) -> String {
    use crate::orchestration::usage::short_count;
    match tokens {
        Some(t) => format!(
            "tokens: {} in ({} cached) · {} out\n",
            short_count(t.all_input()),
            short_count(t.cache_read),
            short_count(t.output)
        ),
        None => format!("tokens: unknown ({harness} does not report them)\n"),
    }
}
