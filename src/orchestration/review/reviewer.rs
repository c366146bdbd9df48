//! A reviewer agent beside a task's own (`task review ID --agent H`, `[review]
//! on_complete`): a second agent started by the one launcher in a window of the task's
//! session, in the task's workspace, read-only — in a bwrap sandbox when one can run
//! here, else checked afterwards (the worktree's HEAD, status and dirty files compared
//! with what they were before it started). Its prompt holds the task's summary and diff
//! ([`findings::prompt`]); its findings (`path:line: comment`, one a line) come back in a
//! file orange names, outside the worktree (`ORANGE_REVIEW_FINDINGS`), else as its last
//! answer (claude's transcript), and become a review round by the reviewer, sent at once
//! when asked (`--send`, `send = true`) through `task send`'s path.
//!
//! Its record, `reviewer.json` in the task's directory, is written BEFORE its window is
//! made (state `starting`, and for `on_complete` the readiness it runs for): a monitor
//! killed half-way never starts a second one for the same readiness; the next pass ends
//! an interrupted start as failed. The reviewer's own directory (`reviewer/`: its
//! findings file, what its hooks say) is all it may write in a sandbox. Its hooks
//! (`ORANGE_REVIEWER` in its environment) are recorded there, never as its task's agent.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::json;

use crate::adapters::store::{self, Home};
use crate::adapters::tmux::PaneInfo;
use crate::error::{OrangeError, Result};
use crate::execution::config::Config;
use crate::execution::harness::{self, Harness, Start};
use crate::execution::launch::{self, Launch, Owner, Workspace};
use crate::execution::repo::Project;
use crate::execution::sandbox;
use crate::execution::session::Mux;
use crate::orchestration::task::service::TaskService;
use crate::orchestration::task::Task;
use crate::text;

use super::findings::{self, Finding};
pub use super::record::{
    findings_path, line, load, own_dir, save, Guard, Heard, Reviewer, State, Trigger,
};
use super::record::{heard, heard_path};
use super::{Author, Comment, Side};

/// Set in a reviewer's environment: the file its findings go to.
pub const FINDINGS_ENV: &str = "ORANGE_REVIEW_FINDINGS";

/// How long a reviewer whose turn ended is given to write its answer down.
const ANSWER_GRACE: Duration = Duration::from_secs(10);

fn age(at: &str) -> Duration {
    chrono::DateTime::parse_from_rfc3339(at)
        .ok()
        .and_then(|t| chrono::Utc::now().signed_duration_since(t).to_std().ok())
        .unwrap_or(Duration::MAX)
}

/// What asks for a reviewer.
#[derive(Debug, Clone)]
pub struct Ask<'a> {
    pub harness: &'a str,
    pub prompt: Option<&'a str>,
    pub send: bool,
    pub trigger: Trigger,
    pub ready: Option<String>,
}

/// The diff of a task as a review file shows it (`ui::changes::task_patch`), given by the
/// command layer at start-up: the reviewer's prompt holds the same diff.
pub type PatchFn = fn(&Home, &Task) -> Result<String>;
static PATCH: OnceLock<PatchFn> = OnceLock::new();

pub fn set_patch_source(f: PatchFn) {
    let _ = PATCH.set(f);
}

/// The worktree's workspace path, and its pool name (none for a worktree of its own).
fn workspace_of(home: &Home, task: &Task) -> Result<(PathBuf, Option<String>)> {
    match task.workspace.as_deref() {
        Some(p) if p.starts_with('/') => Ok((PathBuf::from(p), None)),
        Some(ws) => Ok((
            crate::execution::pool::find(home, ws)?.path,
            Some(ws.to_string()),
        )),
        None => Err(OrangeError::InvalidTransition(format!(
            "task {} has no workspace: nothing to review",
            task.id
        ))),
    }
}

/// The worktree as a reviewer must leave it: HEAD, and each changed or new file with its
/// content's hash (a file already dirty and changed again counts).
pub fn tree_state(ws: &Path) -> Result<Vec<String>> {
    use crate::adapters::git::diff::{self, StatusRecord};
    let mut out = vec![format!(
        "HEAD {}",
        crate::adapters::git::rev_parse(ws, "HEAD").unwrap_or_default()
    )];
    for r in diff::status_start(ws).wait()? {
        let path = match r {
            StatusRecord::Changed { path, .. }
            | StatusRecord::Unmerged { path, .. }
            | StatusRecord::Untracked { path } => path,
        };
        let hash = std::fs::read(ws.join(&path))
            .ok()
            .and_then(|b| diff::hash_blob(&b))
            .map_or_else(|| "gone".to_string(), |o| o.to_string());
        out.push(format!("{path} {hash}"));
    }
    out.sort();
    Ok(out)
}

/// What differs between two [`tree_state`]s: the paths (and `HEAD`).
fn differences(before: &[String], after: &[String]) -> Vec<String> {
    let name = |l: &String| l.rsplit_once(' ').map_or(l.clone(), |(p, _)| p.to_string());
    let mut out: Vec<String> = before
        .iter()
        .filter(|l| !after.contains(l))
        .chain(after.iter().filter(|l| !before.contains(l)))
        .map(name)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Start a reviewer for `task` (see the module's header). Refused while one is at work.
pub fn start(tasks: &mut TaskService, task: &Task, ask: Ask) -> Result<Reviewer> {
    let home = tasks.home;
    let dir = tasks.store.dir(&task.project, &task.id);
    if let Some(r) = load(&dir).filter(|r| r.state.running()) {
        let alive = match &r.pane_id {
            Some(p) => tasks
                .tmux
                .pane_values(p, &["pane_dead"])?
                .is_some_and(|v| v[0] != "1"),
            None => true,
        };
        if alive {
            return Err(OrangeError::InvalidTransition(format!(
                "task {} already has a reviewer at work (started {}): wait for its round",
                task.id, r.started_at
            )));
        }
    }
    let session = task
        .tmux_session_id
        .clone()
        .or_else(|| task.tmux_session.clone())
        .filter(|_| task.status.is_active())
        .ok_or_else(|| {
            OrangeError::InvalidTransition(format!(
                "task {} has no session to start a reviewer in ({}): `orange task respawn {}` starts one",
                task.id, task.status, task.id
            ))
        })?;
    let (ws_path, ws_name) = workspace_of(home, task)?;
    let config = Config::load(home)?;
    let mut h = Harness::named(ask.harness, &config)?;
    // One-shot where the program has it: the reviewer ends with its answer.
    if crate::execution::config::HEADLESS.contains(&h.name.as_str()) {
        h.mode = harness::kind::Mode::Headless;
    }
    let project = crate::orchestration::project::get(home, &task.project)?;
    let wanted = match config.review.sandbox.as_deref() {
        Some(s) => sandbox::Kind::parse(s)?,
        None => sandbox::Kind::Bwrap,
    };
    let guard = match wanted {
        sandbox::Kind::Bwrap
            if launch::check_sandbox(home, &config, &project, &h, wanted).is_ok() =>
        {
            Guard::Sandbox
        }
        _ => Guard::Check,
    };
    let own = own_dir(&dir);
    store::ensure_dir(&own)?;
    let findings_file = findings_path(&dir);
    for f in [&findings_file, &heard_path(&dir)] {
        let _ = std::fs::remove_file(f);
    }
    let diff = PATCH.get().and_then(|f| f(home, task).ok());
    let prompt = findings::prompt(
        &task.summary,
        diff.as_deref(),
        &findings_file.display().to_string(),
        ask.prompt,
    );
    let mut r = Reviewer {
        harness: h.name.clone(),
        state: State::Starting,
        trigger: ask.trigger,
        send: ask.send,
        guard,
        started_at: store::now_rfc3339(),
        starter: std::process::id(),
        ended_at: None,
        ready: ask.ready.clone(),
        window_id: None,
        pane_id: None,
        conversation: None,
        findings_file: findings_file.display().to_string(),
        round: None,
        findings: 0,
        changed: vec![],
        detail: None,
        before: vec![],
        prompt: ask.prompt.map(str::to_string),
    };
    let at = Where {
        project: &project,
        config: &config,
        harness: &h,
        session: &session,
        ws: (&ws_path, ws_name.as_deref()),
    };
    match launch_window(tasks, task, &at, &own, prompt, &mut r) {
        Ok(w) => {
            working(tasks, task, &mut r, w, None)?;
            Ok(r)
        }
        Err(e) => {
            r.state = State::Failed;
            r.ended_at = Some(store::now_rfc3339());
            r.detail = Some(format!("could not start: {e}"));
            save(&dir, &r)?;
            Err(e)
        }
    }
}

/// Its window is made (`repaired`: found again by the next pass): it works; the history
/// says it started.
fn working(
    tasks: &TaskService,
    task: &Task,
    r: &mut Reviewer,
    w: crate::adapters::tmux::AgentWindow,
    repaired: Option<&str>,
) -> Result<()> {
    r.window_id = Some(w.window_id);
    r.pane_id = Some(w.pane_id);
    r.state = State::Working;
    save(&tasks.store.dir(&task.project, &task.id), r)?;
    let mut data = json!({"harness": r.harness, "guard": r.guard, "trigger": r.trigger});
    if let Some(how) = repaired {
        data["repaired"] = how.into();
    }
    tasks.store.append_history(task, "reviewer.started", data)
}

/// Where a reviewer starts.
struct Where<'a> {
    project: &'a Project,
    config: &'a Config,
    harness: &'a Harness,
    session: &'a str,
    ws: (&'a Path, Option<&'a str>),
}

/// The name of a reviewer's window while it works (how a start killed half-way finds the
/// window it made).
fn working_name(harness: &str) -> String {
    text::for_tmux(&format!("reviewer {}: working", text::safe_line(harness)))
}

/// A start that failed before its record was written, recorded as failed for the
/// readiness it was for (never tried again for it).
pub fn record_failed_start(
    task_dir: &Path,
    harness: &str,
    ready: String,
    e: &OrangeError,
) -> Result<()> {
    let now = store::now_rfc3339();
    save(
        task_dir,
        &Reviewer {
            harness: harness.to_string(),
            state: State::Failed,
            trigger: Trigger::OnComplete,
            send: false,
            guard: Guard::Check,
            started_at: now.clone(),
            starter: std::process::id(),
            ended_at: Some(now),
            ready: Some(ready),
            window_id: None,
            pane_id: None,
            conversation: None,
            findings_file: String::new(),
            round: None,
            findings: 0,
            changed: vec![],
            detail: Some(format!("could not start: {e}")),
            before: vec![],
            prompt: None,
        },
    )
}

/// The launcher's part of [`start`]: the workspace set up, the worktree's state taken
/// after that, the intent recorded (`r`, state `starting`), the window made.
fn launch_window(
    tasks: &TaskService,
    task: &Task,
    at: &Where,
    own: &Path,
    prompt: String,
    r: &mut Reviewer,
) -> Result<crate::adapters::tmux::AgentWindow> {
    let mux = Mux::Tmux(tasks.tmux.clone());
    let l = Launch {
        home: tasks.home,
        config: at.config,
        project: at.project,
        owner: Owner::Reviewer(&task.id),
        branch: &task.branch,
        workspace: Workspace {
            path: at.ws.0,
            name: at.ws.1,
        },
        harness: at.harness,
        start: Start::First,
        prompt: Some(prompt),
        conversation: None,
        permission_mode: None,
        sandbox: match r.guard {
            Guard::Sandbox => sandbox::Kind::Bwrap,
            Guard::Check => sandbox::Kind::None,
        },
        limits: Default::default(),
        agent_dir: own,
        task_md: None,
        mux: &mux,
        exit_file: None,
        marks: vec![],
    };
    let ready = l.prepare()?;
    // After the harness's own workspace setup (its settings file), before it runs.
    r.before = tree_state(at.ws.0)?;
    r.conversation = ready.conversation.as_ref().map(|c| c.id().to_string());
    // The intent first: a start killed from here on is found again, never made twice.
    let dir = tasks.store.dir(&task.project, &task.id);
    save(&dir, r)?;
    crate::adapters::fault::point("reviewer.recorded");
    let findings = (FINDINGS_ENV.to_string(), r.findings_file.clone());
    let (w, _) = ready.start_window(at.session, &working_name(&r.harness), &[findings])?;
    crate::adapters::fault::point("reviewer.window");
    Ok(w)
}

/// An event of a reviewer's own hooks (`orange hook agent EVENT` with `ORANGE_REVIEWER`
/// set): what it says, kept in its own directory for the monitor's next pass.
pub fn hook(home: &Home, task_id: &str, event: &str, payload: &str) -> Result<serde_json::Value> {
    let tasks = TaskService::new(home);
    let task = tasks.get(task_id, None)?;
    let dir = tasks.store.dir(&task.project, &task.id);
    let Some(r) = load(&dir) else {
        return Ok(json!({"task": task.id, "reviewer": true, "ignored": "no reviewer recorded"}));
    };
    let payload: serde_json::Value = serde_json::from_str(payload).unwrap_or_default();
    let Some(says) = harness::kind_of(&r.harness).hook_says(event, &payload) else {
        return Ok(
            json!({"task": task.id, "reviewer": true, "event": event, "ignored": "says nothing of its turn"}),
        );
    };
    use crate::execution::harness::state::State as S;
    let mut h = heard(&dir);
    h.worked |= matches!(says.state, S::Working);
    h.state = Some(says.state);
    h.event = event.to_string();
    h.at = store::now_rfc3339();
    h.detail = says.detail.clone();
    if let Some(a) = payload
        .get("last_assistant_message")
        .and_then(|a| a.as_str())
    {
        h.answer = Some(a.chars().take(1 << 20).collect());
    }
    store::write_json_atomic(&heard_path(&dir), &h)?;
    store::poke(home);
    Ok(json!({"task": task.id, "reviewer": true, "event": event, "state": says.state}))
}

/// A workspace's file by its relative path (none outside the workspace).
fn read_in(ws: &Path, rel: &str) -> Option<String> {
    if Path::new(rel)
        .components()
        .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return None;
    }
    store::read_regular(&ws.join(rel), 16 << 20)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// Findings anchored to the workspace's files as they are: at their line with its code;
/// a line the file does not have, or a file it does not hold, about the whole file (its
/// line said in the comment).
pub fn anchor(found: Vec<Finding>, ws: &Path) -> Vec<Comment> {
    found
        .into_iter()
        .map(|f| {
            let code = read_in(ws, &f.path)
                .and_then(|c| c.lines().nth(f.line as usize - 1).map(str::to_string));
            match code {
                Some(code) => Comment {
                    path: f.path,
                    side: Some(Side::New),
                    line: Some(f.line),
                    code,
                    text: f.text,
                    moved_from: None,
                    lost: false,
                },
                None => Comment {
                    path: f.path,
                    side: None,
                    line: None,
                    code: String::new(),
                    text: format!("(line {}) {}", f.line, f.text),
                    moved_from: None,
                    lost: false,
                },
            }
        })
        .collect()
}

/// What a reviewer at work has come to, seen in `panes` (the monitor's look): `None` while
/// it works; else its record once ended — its findings read into a round (sent when it
/// was asked to be), its process stopped (its window stays, showing its end).
pub fn check(tasks: &mut TaskService, task: &Task, panes: &[PaneInfo]) -> Result<Option<Reviewer>> {
    let dir = tasks.store.dir(&task.project, &task.id);
    let Some(mut r) = load(&dir).filter(|r| r.state.running()) else {
        return Ok(None);
    };
    let pane = r
        .pane_id
        .as_deref()
        .and_then(|id| panes.iter().find(|p| p.pane_id == id));
    if r.state == State::Starting {
        return repair(tasks, task, r);
    }
    let heard = heard(&dir);
    use crate::execution::harness::state::State as S;
    let said_done = heard.worked && heard.state == Some(S::Waiting);
    let said_error = heard.state == Some(S::Error);
    let exited = match pane {
        Some(p) => p.pane_dead,
        // Not in the look: made after it (a command started it meanwhile), or gone.
        None => match r.pane_id.as_deref() {
            Some(id) => tasks
                .tmux
                .pane_values(id, &["pane_dead"])?
                .is_none_or(|v| v.first().is_some_and(|d| d == "1")),
            None => true,
        },
    };
    if exited && pane.is_none() && r.pane_id.is_some() {
        // Seen dead only now: the next pass reads it with its exit status.
        if tasks
            .tmux
            .pane_values(r.pane_id.as_deref().unwrap_or(""), &["pane_id"])?
            .is_some()
        {
            return Ok(None);
        }
    }
    if !(said_done || said_error || exited) {
        return Ok(None);
    }
    let (ws, _) = workspace_of(tasks.home, task)?;
    // Its findings: the file, else its last answer.
    let written = store::read_regular(Path::new(&r.findings_file), 1 << 20)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .filter(|t| !t.trim().is_empty());
    let answer = written
        .or_else(|| heard.answer.clone())
        .or_else(|| harness::kind_of(&r.harness).last_answer(r.conversation.as_deref(), &ws));
    // Its turn ended but nothing of its answer is written yet (a transcript is flushed
    // after the hook): a little longer, while it lives.
    if answer.is_none() && !exited && !said_error && age(&heard.at) < ANSWER_GRACE {
        return Ok(None);
    }
    let found = answer.as_deref().map(findings::parse).unwrap_or_default();
    if r.guard == Guard::Check {
        r.changed = differences(&r.before, &tree_state(&ws)?);
    }
    // Stop it (a claude waits at the end of its turn): its window stays, readable.
    if let Some(p) = pane.filter(|p| !p.pane_dead) {
        let _ = crate::adapters::process::stop_tree(p.pane_pid, Duration::from_secs(3));
    }
    let failed = if said_error {
        Some(format!(
            "its turn ended on an error{}",
            heard
                .detail
                .as_deref()
                .map(|d| format!(": {}", text::safe_line(d)))
                .unwrap_or_default()
        ))
    } else {
        let why = pane.and_then(|p| {
            p.pane_dead_status
                .filter(|c| *c != 0)
                .map(|c| format!("it exited {c}"))
                .or_else(|| {
                    p.pane_dead_signal
                        .map(|s| format!("it was killed (signal {s})"))
                })
        });
        match (why, pane) {
            // Its last words: the end of its pane (made safe to show).
            (Some(why), Some(p)) if found.is_empty() => {
                let shown = tasks.tmux.capture_pane(&p.pane_id, 50).unwrap_or_default();
                let last: Vec<&str> = shown
                    .lines()
                    .filter(|l| !l.trim().is_empty() && !l.starts_with("Pane is dead"))
                    .collect();
                let tail = last[last.len().saturating_sub(3)..].join(" / ");
                Some(if tail.is_empty() {
                    why
                } else {
                    format!("{why}: {}", text::safe_line(&tail))
                })
            }
            _ => None,
        }
    };
    if found.is_empty() {
        let state = if failed.is_some() {
            State::Failed
        } else {
            State::Done
        };
        let detail = failed.or_else(|| {
            answer.is_some().then(|| {
                "its answer held no finding in the `path:line: comment` format".to_string()
            })
        });
        return end(tasks, task, &mut r, state, detail).map(Some);
    }
    // A pass killed after it made the round made it once: that round, not another.
    let made = r
        .round
        .and_then(|n| super::rounds(&dir).ok()?.into_iter().find(|x| x.n == n));
    let round = match made {
        Some(round) => round,
        None => {
            let round = super::create(&dir, Author::Reviewer, anchor(found, &ws))?;
            r.round = Some(round.n);
            r.findings = round.comments.len();
            save(&dir, &r)?;
            crate::adapters::fault::point("reviewer.round");
            tasks.store.append_history(
                task,
                "review.round",
                json!({"round": round.n, "comments": round.comments.len(), "by": round.by}),
            )?;
            round
        }
    };
    if !r.changed.is_empty() {
        tasks.store.append_history(
            task,
            "reviewer.changed_worktree",
            json!({"files": r.changed}),
        )?;
    }
    let mut r = end(tasks, task, &mut r, State::Done, None)?;
    if r.send && r.changed.is_empty() {
        let mut round = round;
        let read = |p: &str| read_in(&ws, p);
        match super::send_round(tasks, task, &dir, &mut round, false, read) {
            Ok(_) => {}
            Err(e) => {
                r.detail = Some(format!("round {} not sent: {e}", round.n));
                save(&dir, &r)?;
            }
        }
    }
    Ok(Some(r))
}

/// A start interrupted before its window was recorded (a command or a monitor killed):
/// while the process that starts it lives, nothing; else the window it made is adopted
/// when there is one, else it is started now — for the same readiness, once.
fn repair(tasks: &mut TaskService, task: &Task, mut r: Reviewer) -> Result<Option<Reviewer>> {
    if r.starter != 0
        && r.starter != std::process::id()
        && crate::adapters::process::alive(r.starter)
    {
        return Ok(None);
    }
    let dir = tasks.store.dir(&task.project, &task.id);
    let session = task
        .tmux_session_id
        .clone()
        .or_else(|| task.tmux_session.clone());
    let made = match &session {
        Some(s) => tasks.tmux.windows_named(s, &working_name(&r.harness))?,
        None => vec![],
    };
    if let Some(w) = made.into_iter().next() {
        working(tasks, task, &mut r, w, Some("its window, found again"))?;
        return Ok(None);
    }
    r.state = State::Failed;
    r.detail = Some("interrupted while it was starting: started again".into());
    save(&dir, &r)?;
    let ask = Ask {
        harness: &r.harness,
        prompt: r.prompt.as_deref(),
        send: r.send,
        trigger: r.trigger,
        ready: r.ready.clone(),
    };
    start(tasks, task, ask)?;
    Ok(None)
}

/// The reviewer ended: its record, its window's name, the history.
fn end(
    tasks: &mut TaskService,
    task: &Task,
    r: &mut Reviewer,
    state: State,
    detail: Option<String>,
) -> Result<Reviewer> {
    let dir = tasks.store.dir(&task.project, &task.id);
    r.state = state;
    r.ended_at = Some(store::now_rfc3339());
    if detail.is_some() {
        r.detail = detail;
    }
    save(&dir, r)?;
    if let Some(w) = &r.window_id {
        let _ = tasks.tmux.rename_window(w, &text::for_tmux(&line(r)));
    }
    let event = match state {
        State::Failed => "reviewer.failed",
        _ => "reviewer.done",
    };
    tasks.store.append_history(
        task,
        event,
        json!({"harness": r.harness, "round": r.round, "findings": r.findings, "detail": r.detail}),
    )?;
    Ok(r.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_are_anchored_to_the_files_as_they_are() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.rs"), "one\ntwo\nthree\n").unwrap();
        let c = anchor(
            findings::parse("a.rs:2: bad\na.rs:9: past the end\nnone.rs:1: gone\n../x:1: out\n"),
            d.path(),
        );
        assert_eq!(
            (c[0].line, c[0].code.as_str(), c[0].side),
            (Some(2), "two", Some(Side::New))
        );
        assert_eq!(
            (c[1].line, c[1].text.as_str()),
            (None, "(line 9) past the end")
        );
        assert_eq!(c[2].line, None);
        assert_eq!(c[3].line, None);
    }

    #[test]
    fn what_changed_is_named_by_path() {
        let before = vec!["HEAD 1".to_string(), "a.rs 11".into(), "b.rs 22".into()];
        let after = vec!["HEAD 1".to_string(), "a.rs 12".into(), "c.rs 33".into()];
        assert_eq!(differences(&before, &after), vec!["a.rs", "b.rs", "c.rs"]);
        assert!(differences(&before, &before).is_empty());
    }
}
