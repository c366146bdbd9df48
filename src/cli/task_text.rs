//! What the task commands print: the rows of `task list` (a remote task's too, as its
//! host reported it), `task show` and `task explain` in words. Text only: nothing here
//! reads or changes state.

use std::path::Path;

use serde_json::Value;
use unicode_width::UnicodeWidthStr;

use crate::execution::sandbox;
use crate::orchestration::agent::{self, AgentInfo, Signal};
use crate::orchestration::task::queue::NextSpawn;
use crate::orchestration::task::service::TaskView;
use crate::orchestration::task::{cap, Event, Held, Status};
use crate::ui::changes::GitPart;
use crate::ui::output::table;

/// The first line of `s`, cut to `max` columns (with `…`).
pub fn first_line(s: &str, max: usize) -> String {
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
        if v.task.headless {
            format!("{}, headless", v.task.harness)
        } else {
            v.task.harness.clone()
        },
        v.session.icon(),
        v.session.state
    )
}

/// A local task's row in `task list` (its PROJECT first with `all`).
pub fn row(v: &TaskView, all: bool) -> Vec<String> {
    let mut r = vec![
        v.task.id.clone(),
        v.task.status.as_str().to_string(),
        format!("{} {}", v.session.icon(), v.session.state),
        match (v.agent.state, &v.agent.escalated) {
            // Killed by the kernel at its memory limit: said so (it needs you too).
            _ if v.agent.killed_at_limit.is_some() && v.task.status.is_active() => {
                crate::orchestration::agent::killed_reason(
                    v.agent.killed_at_limit.unwrap_or_default(),
                )
            }
            (_, Some(_)) => "needs you".to_string(),
            _ if v.held.is_some() => v.held.clone().unwrap_or_default(),
            // What its process tree uses now: `working 312M·4%`.
            (Some(st), _) if v.task.status.is_active() => match v.usage {
                Some(u) => format!("{} {}", st.as_str(), u.short()),
                None => st.as_str().to_string(),
            },
            _ => "-".to_string(),
        },
        v.task.branch.clone(),
        v.task.harness.clone(),
        pr_cell(v.task.pr.as_ref()),
        first_line(&v.task.summary, 48),
    ];
    if all {
        r.insert(0, v.task.project.clone());
    }
    r
}

/// The PR column of `task list`: `#12 open · checks 3/4 ✗ · changes requested`, or `-`.
fn pr_cell(pr: Option<&Value>) -> String {
    pr.and_then(crate::ui::sidebar::model::pr_text)
        .unwrap_or_else(|| "-".into())
}

/// A remote task's row in `task list` (PROJECT@HOST first when `with_project`): a task of a
/// host that could not be listed shows `? unreachable (last seen 4m ago)` as its session.
pub fn remote_row(v: &Value, with_project: bool) -> Vec<String> {
    // Every field is the host's (summary, branch, states): `table` makes each cell safe.
    let s = |x: &Value| x.as_str().unwrap_or("-").to_string();
    let session = match v.get("host_state") {
        Some(st) => {
            let age = st["last_seen"]
                .as_str()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .map(|t| (chrono::Utc::now() - t.with_timezone(&chrono::Utc)).num_seconds());
            let age = age.map(|a| a.max(0) as u64);
            if st["reachable"] == false {
                crate::ui::output::unreachable_label(age)
            } else {
                crate::ui::output::unreachable_label(age).replace("unreachable", "not listed")
            }
        }
        None => s(&v["session"]["state"]),
    };
    let mut r = vec![
        s(&v["id"]),
        s(&v["status"]),
        session,
        s(&v["agent"]["state"]),
        s(&v["branch"]),
        s(&v["harness"]),
        pr_cell(v.get("pr")),
        first_line(v["summary"].as_str().unwrap_or(""), 48),
    ];
    if with_project {
        r.insert(0, format!("{}@{}", s(&v["project"]), s(&v["host"])));
    }
    r
}

/// `task list`'s table of `rows` (with the PROJECT column with `all`).
pub fn list(rows: &[Vec<String>], all: bool) -> String {
    if rows.is_empty() {
        "no tasks\n".to_string()
    } else if all {
        table(
            &[
                "PROJECT", "ID", "STATUS", "SESSION", "AGENT", "BRANCH", "HARNESS", "PR", "SUMMARY",
            ],
            rows,
        )
    } else {
        table(
            &[
                "ID", "STATUS", "SESSION", "AGENT", "BRANCH", "HARNESS", "PR", "SUMMARY",
            ],
            rows,
        )
    }
}

/// `task show`: the task, its session, its sandbox, why it failed or waits, its tokens,
/// its changes, TASK.md (`md`, at `md_path`) and its last ten events of `history`.
pub fn show(
    view: &TaskView,
    md: &str,
    md_path: &Path,
    history: &[Event],
    changes: &GitPart,
) -> String {
    let mut text = format!(
        "{}\nsummary: {}{}\nworkspace: {}\nsession: {}{}\nTASK.md: {}\n",
        describe(view),
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
    if let Some(pr) = view.task.pr.as_ref() {
        if let Some(line) = crate::ui::sidebar::model::pr_text(pr) {
            let url = pr.get("url").and_then(|u| u.as_str()).unwrap_or("");
            text.push_str(&format!("pr: {line}  {url}\n"));
        }
    }
    text.push_str(&next_text(view));
    if let Some(f) = &view.task.failure {
        text.push_str(&format!(
            "failed: {f}\nto do: `orange task respawn {id}` retries, `orange task delete {id}` removes it\n",
            id = view.task.id
        ));
    }
    text.push_str(&agent_text(&view.agent, &view.task.id));
    text.push_str(&never_started_text(view));
    if !view.teammates.is_empty() {
        text.push_str("teammates (panes its agent split off; keystrokes go to the lead only):\n");
        for t in &view.teammates {
            text.push_str(&format!(
                "  {} [{}]\n",
                crate::orchestration::teammates::line(t),
                t.pane_id
            ));
        }
    }
    text.push_str(&reviewer_text(view));
    text.push_str(&held_text(&view.task.held));
    text.push_str(&tokens_text(view.tokens.as_ref(), &view.task.harness));
    text.push_str(&changes_text(changes, SHOW_FILES));
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
    text
}

/// One history event in words, with what it carries: `status working → reviewing (via
/// sandbox)`, `agent exited (status 1): why`, `nudged: Please continue…`.
fn event_text(e: &Event) -> String {
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
        "agent.nudged" => format!(
            "nudged: {}{via}",
            first_line(&s("message").unwrap_or_default(), 60)
        ),
        "message.sent" => format!(
            "sent: {}{}{via}",
            first_line(&s("text").unwrap_or_default(), 60),
            if d.contains_key("held_since") {
                " (held until its turn ended)"
            } else {
                ""
            }
        ),
        "message.held" => format!(
            "held: {} (until the agent's turn ends)",
            first_line(&s("text").unwrap_or_default(), 60)
        ),
        "agent.respawned" if d.get("forced").is_some_and(|f| f == true) => {
            match s("reason").filter(|r| !r.is_empty()) {
                Some(r) => format!("respawned (forced): {}", first_line(&r, 60)),
                None => "respawned (forced)".to_string(),
            }
        }
        "review.round" => format!(
            "review round {}: {} written",
            d.get("round").unwrap_or(&serde_json::Value::Null),
            comments(d)
        ),
        "review.sent" => format!(
            "review round {}: {} {}",
            d.get("round").unwrap_or(&serde_json::Value::Null),
            comments(d),
            if s("delivery").as_deref() == Some("held") {
                "held until its turn ends"
            } else {
                "sent"
            }
        ),
        "review.approved" => format!("review approved{via}"),
        ev if ev.starts_with("pr.") => {
            let mut t = crate::ui::sidebar::model::describe_event(e);
            if let Some(u) = s("url") {
                t.push_str(&format!(": {u}"));
            }
            t
        }
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

/// `3 comments`, `1 comment`: a review event's count.
fn comments(d: &serde_json::Map<String, serde_json::Value>) -> String {
    let n = d.get("comments").and_then(|v| v.as_u64()).unwrap_or(0);
    format!("{n} comment{}", if n == 1 { "" } else { "s" })
}

/// `task explain`: which signal decided the agent's state, and when; what it says.
pub fn explain(view: &TaskView) -> String {
    let a = &view.agent;
    let state = a.state.map(|s| s.as_str()).unwrap_or("unknown");
    let mut text = format!("task {}: agent {state}", view.task.id);
    match a.signal {
        Some(sig) if !a.at.is_empty() => text.push_str(&format!(
            ", decided by {} at {} (in this state since {})",
            match sig {
                Signal::Hook => "an agent hook",
                Signal::Log => "the Claude session log",
                Signal::Pane => "the tmux pane (process exit)",
                Signal::Screen => "screen activity",
                Signal::Osc => "the agent's status report (OSC 7501)",
                Signal::None => "nothing",
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
    if let Some(r) = &a.report {
        text.push_str(&format!(
            "last status report (osc): {} at {}\n",
            crate::text::safe_line(&r.said),
            r.at
        ));
    }
    text.push_str(&agent_text(a, &view.task.id));
    text.push_str(&never_started_text(view));
    if a.nudges > 0 {
        text.push_str(&format!("nudged {} time(s)\n", a.nudges));
    }
    if view.task.crash_count > 0 {
        text.push_str(&format!("crashes: {}\n", view.task.crash_count));
    }
    if let Some(e) = &a.escalated {
        text.push_str(&format!("ESCALATED at {}: {}\n", e.at, e.reason));
    }
    text.push_str(&reviewer_text(view));
    text.push_str(&next_text(view));
    text
}

/// The task's reviewer agent: its row, how it is kept read-only, what came of it.
fn reviewer_text(view: &TaskView) -> String {
    use crate::orchestration::review::reviewer::{self, Guard, State};
    let Some(r) = &view.reviewer else {
        return String::new();
    };
    let mut s = format!(
        "{} (started {}{}; {})\n",
        reviewer::line(r),
        r.started_at,
        r.ended_at
            .as_deref()
            .map(|e| format!(", ended {e}"))
            .unwrap_or_default(),
        match r.guard {
            Guard::Sandbox => "read-only in a bwrap sandbox",
            Guard::Check => "no sandbox: the worktree is compared before and after",
        }
    );
    if let Some(w) = &r.window_id {
        if r.state.running() {
            s.push_str(&format!("  in its window {w} of the task's session\n"));
        }
    }
    if let Some(d) = &r.detail {
        s.push_str(&format!("  {}\n", crate::text::safe_line(d)));
    }
    if !r.changed.is_empty() {
        s.push_str(&format!(
            "  it changed the worktree: {} (its round was not sent)\n",
            crate::text::safe_line(&r.changed.join(", "))
        ));
    }
    match (r.state, r.round) {
        (State::Done, Some(n)) => s.push_str(&format!(
            "  its findings are review round {n}: `orange task review {id} --round {n} --send` sends it\n",
            id = view.task.id
        )),
        (State::Failed, _) => s.push_str(&format!(
            "  to do: `orange task review {} --agent {}` starts another\n",
            view.task.id,
            crate::text::safe_line(&r.harness)
        )),
        _ => {}
    }
    s
}

/// `next: respawn: prefix O m r · orange task respawn 3fa2`: the task's next step when it
/// needs you, in the words every surface uses; empty otherwise.
pub fn next_text(view: &TaskView) -> String {
    match &view.next_step {
        Some(s) => format!("next: {}\n", s.text),
        None => String::new(),
    }
}

/// What a merge, a cancel or a release did about the queue, a line each.
pub fn push_next(text: &mut String, next: &NextSpawn) {
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
fn agent_text(a: &AgentInfo, task: &str) -> String {
    let mut text = String::new();
    if let Some(state) = a.state {
        text.push_str(&format!("agent: {}", state.as_str()));
        if let Some(k) = a.error_kind.filter(|_| state == agent::State::Error) {
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

/// Why its agent never started (joining its cgroup failed; unless its detail says it
/// already), and what to do.
fn never_started_text(view: &TaskView) -> String {
    let Some(why) = &view.never_started else {
        return String::new();
    };
    let mut text = String::new();
    if view.agent.detail.as_deref() != Some(why.as_str()) {
        text.push_str(&format!("{why}\n"));
    }
    text.push_str(&format!(
        "to do: {}\n",
        agent::never_started_advice(&view.task.id)
    ));
    text
}

/// What `task send` holds for the agent until its turn ends, a line each.
fn held_text(held: &[Held]) -> String {
    if held.is_empty() {
        return String::new();
    }
    let now = chrono::Utc::now();
    let mut text = format!(
        "held for the agent (typed in when its turn ends): {}\n",
        held.len()
    );
    for h in held {
        text.push_str(&format!(
            "  {:>8}  {}\n",
            crate::ui::output::ago(&h.at, now),
            first_line(&h.text, 60)
        ));
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

/// How many changed files `task show` lists (all of them with `--json`).
pub const SHOW_FILES: usize = 20;

/// `changes: 1 commit, 2 files, +3 -1 against origin/main` and the first `max` files
/// (`  M path`, `  R old → new`): the task's change list, as the sidebar has it.
pub fn changes_text(changes: &GitPart, max: usize) -> String {
    let Some(d) = &changes.diff else {
        return match &changes.error {
            Some(e) => format!("changes: unknown ({e})\n"),
            None => "changes: none (no workspace, no branch yet)\n".to_string(),
        };
    };
    let plural = |n: usize, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
    let mut text = format!(
        "changes: {}, {}, +{} -{} against {}\n",
        plural(d.commits, "commit"),
        plural(d.files.len(), "file"),
        d.added,
        d.removed,
        d.base
    );
    for f in d.files.iter().take(max) {
        let path = crate::text::safe_line(&f.path);
        match &f.from {
            Some(from) => text.push_str(&format!(
                "  {} {} → {path}\n",
                f.status,
                crate::text::safe_line(from)
            )),
            None => text.push_str(&format!("  {} {path}\n", f.status)),
        }
    }
    if d.files.len() > max {
        text.push_str(&format!(
            "  … {} more (all of them with --json)\n",
            d.files.len() - max
        ));
    }
    text
}

/// Under `task list` when a cap applies: `running: 3 of 4 (fleet); 2 queued`.
pub fn fleet_line(caps: &cap::Caps, counts: &cap::Counts, listed: &[TaskView]) -> String {
    let queued = listed
        .iter()
        .filter(|v| v.task.status == Status::Pending)
        .count();
    let mut parts = vec![];
    if let Some(c) = caps.fleet {
        parts.push(format!("{} of {c} (fleet)", counts.running));
    }
    let mut projects: Vec<&String> = listed.iter().map(|v| &v.task.project).collect();
    projects.dedup();
    for p in projects {
        if let Some(c) = caps.projects.get(p) {
            let n = counts.per_project.get(p).copied().unwrap_or(0);
            parts.push(format!("{n} of {c} ({p})"));
        }
    }
    if parts.is_empty() {
        return String::new();
    }
    format!("running: {}; {queued} queued\n", parts.join(", "))
}

/// `task show` of a task queued behind a full cap: the reason, after its first line.
pub fn with_queued_line(text: &str, full: &cap::Full) -> String {
    let line = format!("{} (max_running); it starts when one ends\n", full.reason());
    match text.split_once('\n') {
        Some((first, rest)) => format!("{first}\n{line}{rest}"),
        None => format!("{text}\n{line}"),
    }
}
