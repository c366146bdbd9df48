//! `orange task create|list|show|explain|peek|spawn|attach|respawn|send|nudge|update|complete|stuck|merge|cancel|delete`
//! (`review`: in `review.rs`):
//! one function per verb. What they print is in `task_text`; the repairs before them and
//! the effects after them are the table's (`args::Command::does`), fed by what each
//! returns ([`Done`]).

use std::io::Read;
use std::path::PathBuf;

use serde_json::json;

use super::args::{TaskCmd, TaskCreateArgs};
use super::context::{audited, confirm, Ctx, Done};
use super::task_text;
use crate::adapters::tmux::Tmux;
use crate::error::{OrangeError, Result};
use crate::execution::sandbox;
use crate::orchestration::attention::session::SessionState;
use crate::orchestration::monitor::presence;
use crate::orchestration::task::cap;
use crate::orchestration::task::queue::NextSpawn;
use crate::orchestration::task::send::Outcome;
use crate::orchestration::task::service::{TaskService, TaskView};
use crate::orchestration::task::start::CreateRequest;
use crate::orchestration::task::{SendKind, Status, Task};
use crate::ui::output::Out;

pub fn run(ctx: &Ctx, cmd: TaskCmd) -> Result<Done> {
    let mut tasks = TaskService::new(&ctx.home);
    let t = &mut tasks;
    match cmd {
        TaskCmd::Create(a) => create(ctx, t, a),
        TaskCmd::List { status, all } => list(ctx, t, status, all).map(Done::from),
        TaskCmd::Show { id } => show(ctx, t, &id).map(Done::from),
        TaskCmd::Explain { id } => explain(ctx, t, &id).map(Done::from),
        TaskCmd::Peek { id, lines } => peek(ctx, t, &id, lines).map(Done::from),
        TaskCmd::Spawn { id } => spawn(ctx, t, id),
        TaskCmd::Respawn(a) => {
            // New limits first (checked, recorded), then the respawn as asked.
            let config = a.limits.config();
            if config != Default::default() {
                let (_, warning) = t.set_limits(&a.id, ctx.project.as_deref(), &config)?;
                if let Some(w) = warning {
                    eprintln!("warning: {w}");
                }
            }
            match a.force {
                true => respawn_forced(ctx, t, a.id, a.reason, a.yes),
                false => respawn(ctx, t, a.id),
            }
        }
        TaskCmd::Send {
            id,
            text,
            file,
            force,
            from_buffer,
        } => {
            let text = message(text, file, from_buffer)?;
            send(ctx, t, &id, &text, SendKind::Message, force).map(Done::from)
        }
        TaskCmd::Nudge { id, force } => {
            send(ctx, t, &id, "", SendKind::Nudge, force).map(Done::from)
        }
        TaskCmd::Review(a) => super::review::run(ctx, t, a).map(Done::from),
        TaskCmd::Pr(a) => super::pr::run(ctx, t, a).map(Done::from),
        TaskCmd::Attach { id } => attach(ctx, t, &id).map(Done::from),
        TaskCmd::Update {
            id,
            status,
            summary,
            branch,
        } => update(ctx, t, id, status, summary, branch).map(Done::from),
        TaskCmd::Complete { id } => {
            report(ctx, t, id, Status::Reviewing, "task.complete").map(Done::from)
        }
        TaskCmd::Stuck { id } => report(ctx, t, id, Status::Stuck, "task.stuck").map(Done::from),
        TaskCmd::Merge { id, dry_run, .. } if dry_run => merge_preview(ctx, t, &id).map(Done::from),
        TaskCmd::Merge {
            id,
            strategy,
            local,
            force,
            ..
        } => merge(ctx, t, id, strategy, local, force),
        TaskCmd::Cancel { id, yes } => cancel(ctx, t, id, yes),
        TaskCmd::Delete { id, yes } => delete(ctx, t, id, yes).map(Done::from),
    }
}

/// What a command that acted on task `t` did, for the effects after it: `t`'s session, and
/// the session of the queued task it started (`next`), if any.
fn done(out: Out, tasks: &TaskService, t: &Task, next: Option<&NextSpawn>) -> Done {
    let next_session = next
        .and_then(|n| n.spawned.as_deref())
        .and_then(|id| tasks.get(id, None).ok())
        .and_then(|t| t.tmux_session_id);
    Done {
        out,
        session: t.tmux_session_id.clone(),
        next_session,
    }
}

/// The task `id`, once the user said yes to `<verb> task …?` (or passed --yes).
fn confirmed(
    tasks: &TaskService,
    id: &str,
    project: Option<&str>,
    verb: &str,
    yes: bool,
) -> Result<Task> {
    let t = tasks.get(id, project)?;
    confirm(
        &format!("{verb} task {} ({}/{})?", t.id, t.project, t.branch),
        yes,
    )?;
    Ok(t)
}

/// `task create`
fn create(ctx: &Ctx, tasks: &mut TaskService, a: TaskCreateArgs) -> Result<Done> {
    if a.is_group() {
        return super::group::create(ctx, tasks, a);
    }
    let project = ctx.project()?;
    let context = a.context_text()?;
    // `--harness claude:1` is one claude.
    let harness = a
        .harness
        .first()
        .map(|h| h.trim_end_matches(":1").to_string());
    let inputs = json!({"project": project.name, "branch": a.branch, "summary": a.summary, "harness": a.harness, "no_spawn": a.no_spawn, "sandbox": a.sandbox, "headless": a.headless, "memory": a.limits.memory, "cpu": a.limits.cpu, "pids": a.limits.pids});
    let created = audited(ctx, "task.create", inputs, || {
        tasks.create(
            &project,
            CreateRequest {
                branch: a.branch.filter(|b| !b.is_empty()),
                summary: a.summary,
                harness,
                context,
                spawn: !a.no_spawn,
                sandbox: a.sandbox,
                headless: a.headless,
                group: None,
                limits: a.limits.config(),
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
    if let Some(w) = &created.warning {
        eprintln!("warning: {w}");
    }
    if t.awaiting_prompt && created.outcome == "spawned" {
        text.push_str(&format!(
            "no prompt: the agent waits for yours; type it in its pane (`orange task attach {}`)\n",
            t.id
        ));
    }
    Ok(done(Out::new(&created, text), tasks, &created.task, None))
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
    // Queued behind a cap: why, in the agent's column and the JSON.
    let capped = cap::now(&ctx.home, &tasks.store);
    let waits: Vec<Option<cap::Full>> = list
        .iter()
        .map(|v| {
            let (caps, counts) = capped.as_ref()?;
            (v.task.status == Status::Pending)
                .then(|| caps.full(counts, &v.task.project))
                .flatten()
        })
        .collect();
    // A group's members under one parent row (a listed task's group whose record cannot be
    // read is said on stderr: its members are listed as tasks of their own).
    let (groups, unreadable) =
        crate::orchestration::group::GroupStore::new(&ctx.home).list_readable(project.as_deref());
    for (id, e) in &unreadable {
        if list
            .iter()
            .any(|v| v.task.group.as_deref() == Some(id.as_str()))
        {
            let e = e.to_string();
            eprintln!(
                "orange: group {id} is not shown: {}",
                crate::text::safe_line(&e)
            );
        }
    }
    let of = |v: &TaskView| {
        let id = v.task.group.as_deref()?;
        groups
            .iter()
            .find(|g| g.id == id && g.project == v.task.project)
    };
    let mut rows = super::group_text::nest(
        list.iter()
            .zip(&waits)
            .map(|(v, full)| {
                let mut row = task_text::row(v, all);
                if let Some(f) = full {
                    row[3 + usize::from(all)] = f.reason();
                }
                (of(v), row)
            })
            .collect(),
        all,
    );
    rows.extend(remote.iter().map(|v| task_text::remote_row(v, true)));
    let mut text = task_text::list(&rows, all);
    if let Some((caps, counts)) = &capped {
        text.push_str(&task_text::fleet_line(caps, counts, &list));
    }
    // Agents no monitor watches: their states are not updated (said on stderr: stdout is
    // the list).
    if list.iter().any(|v| v.task.status.is_active()) {
        let watch = presence::watch(&ctx.home, &Tmux::from_env());
        if let Some(warning) = watch.ok().and_then(|w| w.warning()) {
            eprintln!("orange: {warning}");
        }
    }
    let mut json = serde_json::to_value(&list).unwrap_or_default();
    if let Some(a) = json.as_array_mut() {
        for (row, full) in a.iter_mut().zip(&waits) {
            if let Some(f) = full {
                row["queued"] = f.json();
            }
        }
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
    let changes = crate::ui::changes::git_part(&ctx.home, &t);
    let panes = tasks.panes();
    let view = with_keys_here(tasks, tasks.view(t, &panes), &panes);
    let mut text = task_text::show(&view, &md, &md_path, &history, &changes);
    let mut v = serde_json::to_value(&view).unwrap();
    if view.task.status == Status::Pending {
        if let Some(full) = cap::now(&ctx.home, &tasks.store)
            .and_then(|(caps, counts)| caps.full(&counts, &view.task.project))
        {
            text = task_text::with_queued_line(&text, &full);
            v["queued"] = full.json();
        }
    }
    v["changes"] = json!(changes.diff);
    if let Some(e) = &changes.error {
        v["changes_error"] = json!(e);
    }
    v["history"] = serde_json::to_value(&history).unwrap();
    v["task_md"] = json!(md);
    v["task_md_path"] = json!(md_path);
    Ok(Out::new(v, text))
}

/// `task explain ID`
fn explain(ctx: &Ctx, tasks: &mut TaskService, id: &str) -> Result<Out> {
    let t = tasks.get(id, ctx.project.as_deref())?;
    let panes = tasks.panes();
    let view = with_keys_here(tasks, tasks.view(t, &panes), &panes);
    let text = task_text::explain(&view);
    Ok(Out::new(
        json!({"id": view.task.id, "agent": view.agent, "session": view.session, "crash_count": view.task.crash_count, "next_step": view.next_step, "never_started": view.never_started}),
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
fn spawn(ctx: &Ctx, tasks: &mut TaskService, id: String) -> Result<Done> {
    let t = audited(ctx, "task.spawn", json!({"id": id}), || {
        tasks.spawn(&id, ctx.project.as_deref())
    })?;
    let text = format!(
        "spawned task {} in {} → tmux session {}\n",
        t.id,
        t.workspace.as_deref().unwrap_or("?"),
        t.tmux_session.as_deref().unwrap_or("?")
    );
    Ok(done(Out::new(&t, text), tasks, &t, None))
}

/// `task respawn ID`
fn respawn(ctx: &Ctx, tasks: &mut TaskService, id: String) -> Result<Done> {
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
    Ok(done(Out::new(&t, text), tasks, &t, None))
}

/// `task respawn ID --force [--reason TEXT] [--yes]`: asked first when its agent runs.
fn respawn_forced(
    ctx: &Ctx,
    tasks: &mut TaskService,
    id: String,
    reason: Option<String>,
    yes: bool,
) -> Result<Done> {
    let t = tasks.get(&id, ctx.project.as_deref())?;
    let live = tasks.view(t.clone(), &tasks.panes()).session.state == SessionState::Live;
    if live {
        confirm(
            &format!(
                "Stop and restart the running agent of task {} ({}/{})?",
                t.id, t.project, t.branch
            ),
            yes,
        )?;
    }
    let inputs = json!({"id": id, "force": true, "reason": reason});
    let (t, stopped) = audited(ctx, "task.respawn", inputs, || {
        tasks.respawn_forced(&t.id, Some(&t.project), reason.as_deref())
    })?;
    let how = match &stopped {
        Some(s) if s.killed.is_empty() => format!(
            "stopped its agent ({} process(es), SIGTERM) and respawned it",
            s.terminated.len()
        ),
        Some(s) => format!(
            "stopped its agent ({} process(es); {} needed SIGKILL) and respawned it",
            s.terminated.len(),
            s.killed.len()
        ),
        None => "its agent was not running; respawned it".to_string(),
    };
    let text = match t.status {
        Status::Pending => format!(
            "task {} is queued: the pool is full; it starts when a workspace is released\n",
            t.id
        ),
        _ => format!(
            "task {}: {how} → tmux session {}\n",
            t.id,
            t.tmux_session.as_deref().unwrap_or("?")
        ),
    };
    let mut v = serde_json::to_value(&t).unwrap();
    v["forced"] = json!(true);
    v["stopped"] = serde_json::to_value(&stopped).unwrap();
    Ok(done(Out::new(v, text), tasks, &t, None))
}

/// The message of `task send`: TEXT, standard input (`-`), `--file`, or the plugin's
/// prompt buffers (`--from-buffer`).
fn message(text: Option<String>, file: Option<PathBuf>, buffer: Option<String>) -> Result<String> {
    if let Some(b) = buffer {
        return crate::ui::plugin::prompt_text(&crate::adapters::tmux::Tmux::from_env(), &b);
    }
    if let Some(f) = file {
        let bytes = std::fs::read(&f)
            .map_err(|e| OrangeError::io(format!("reading {}", f.display()), e))?;
        return Ok(crate::text::lossy(bytes));
    }
    match text.as_deref() {
        Some("-") => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .map_err(|e| OrangeError::io("reading the message from standard input", e))?;
            Ok(crate::text::lossy(bytes))
        }
        Some(t) => Ok(t.to_string()),
        None => Err(OrangeError::invalid(
            "nothing to send: give TEXT, - or --file PATH",
        )),
    }
}

/// `task send ID TEXT|-|--file PATH [--force]` and `task nudge ID [--force]` (the nudge's
/// text is the policy's: `text` is unused).
fn send(
    ctx: &Ctx,
    tasks: &mut TaskService,
    id: &str,
    text: &str,
    kind: SendKind,
    force: bool,
) -> Result<Out> {
    let (op, inputs) = match kind {
        SendKind::Message | SendKind::Review | SendKind::Resume => (
            "task.send",
            json!({"id": id, "force": force, "chars": text.chars().count()}),
        ),
        SendKind::Nudge => ("task.nudge", json!({"id": id, "force": force})),
    };
    let project = ctx.project.as_deref();
    let sent = audited(ctx, op, inputs, || match kind {
        SendKind::Message | SendKind::Review | SendKind::Resume => {
            tasks.send(id, project, text, kind, force)
        }
        SendKind::Nudge => tasks.nudge(id, project, force),
    })?;
    let what = match kind {
        SendKind::Message | SendKind::Review | SendKind::Resume => "message",
        SendKind::Nudge => "nudge",
    };
    let line = task_text::first_line(&sent.text, 60);
    let state = sent.agent_state.map_or("not known yet", |s| s.as_str());
    let text = match sent.outcome {
        Outcome::Held => format!(
            "held the {what} for task {}: its agent is {state}; it is typed in when its turn ends ({} held): {line}\n",
            sent.id, sent.held
        ),
        Outcome::Sent => {
            let mut t = format!("sent the {what} to task {} (agent {state}", sent.id);
            if sent.forced {
                t.push_str(", forced");
            }
            if sent.with_held > 0 {
                t.push_str(&format!(", after {} held message(s)", sent.with_held));
            }
            t.push_str(&format!("): {line}\n"));
            t
        }
    };
    Ok(Out::new(&sent, text))
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
    force: bool,
) -> Result<Done> {
    let inputs = json!({"id": id, "strategy": strategy, "local": local, "force": force});
    let (t, info, next) = audited(ctx, "task.merge", inputs, || {
        tasks.merge(&id, ctx.project.as_deref(), strategy == "ff", local, force)
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
    task_text::push_next(&mut text, &next);
    let mut v = serde_json::to_value(&t).unwrap();
    v["merge"] = info;
    v["next"] = serde_json::to_value(&next).unwrap();
    Ok(done(Out::new(v, text), tasks, &t, Some(&next)))
}

/// `task merge ID --dry-run`: what merging would bring into the default branch (the
/// task's change list) or why it would refuse; nothing changes.
fn merge_preview(ctx: &Ctx, tasks: &mut TaskService, id: &str) -> Result<Out> {
    let (t, refusal) = tasks.merge_check(id, ctx.project.as_deref())?;
    let changes = crate::ui::changes::git_part(&ctx.home, &t);
    let mut text = match &refusal {
        None => format!("task {} ({}) would merge:\n", t.id, t.branch),
        Some(why) => format!("task {} ({}) would not merge: {why}\n", t.id, t.branch),
    };
    text.push_str(&task_text::changes_text(&changes, usize::MAX));
    let mut v = json!({
        "id": t.id,
        "project": t.project,
        "branch": t.branch,
        "dry_run": true,
        "would_merge": refusal.is_none(),
        "refusal": refusal,
        "changes": changes.diff,
    });
    if let Some(e) = &changes.error {
        v["changes_error"] = json!(e);
    }
    Ok(Out::new(v, text))
}

/// `task cancel ID [--yes]`
fn cancel(ctx: &Ctx, tasks: &mut TaskService, id: String, yes: bool) -> Result<Done> {
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
    task_text::push_next(&mut text, &next);
    let mut v = serde_json::to_value(&t).unwrap();
    v["note"] = json!(note);
    v["next"] = serde_json::to_value(&next).unwrap();
    Ok(done(Out::new(v, text), tasks, &t, Some(&next)))
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
    if std::env::var_os(crate::execution::launch::REVIEWER_ENV).is_some_and(|v| !v.is_empty()) {
        return Err(crate::error::OrangeError::InvalidTransition(
            "a reviewer does not report its task's outcome: write your findings instead".into(),
        ));
    }
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

/// The view with its next step's key, when this command runs in a pane of the task's own
/// session on the server its tasks run on (the plugin's menu key acts on the session it is
/// pressed in); elsewhere the step names its command only.
fn with_keys_here(
    tasks: &TaskService,
    mut view: crate::orchestration::task::service::TaskView,
    panes: &[crate::adapters::tmux::PaneInfo],
) -> crate::orchestration::task::service::TaskView {
    use crate::adapters::tmux::Tmux;
    let Some(step) = &view.next_step else {
        return view;
    };
    let same_server = std::env::var("TMUX").ok().is_some_and(|t| {
        Tmux::new(Tmux::server_from(None, Some(&t))).socket_path() == tasks.tmux.socket_path()
    });
    let pane = std::env::var("TMUX_PANE").ok();
    let in_its_session = same_server
        && panes.iter().any(|p| {
            Some(&p.pane_id) == pane.as_ref()
                && view.task.tmux_session_id.as_deref() == Some(p.session_id.as_str())
        });
    if in_its_session {
        let keys = crate::orchestration::observe::snapshot::read(tasks.home, &tasks.tmux)
            .map(|s| s.step_keys());
        view.next_step = Some(step.keyed(&view.task.id, keys.as_ref()));
    }
    view
}
