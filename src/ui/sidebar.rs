//! The sidebar: a model of one task's workspace and a pure render of it.
//!
//! [`Model`] is plain data (what `orange sidebar --once --json` prints); [`model_for_task`]
//! gathers it (task files, one tmux snapshot, one git diff); [`render`] lays it out for a
//! width and an optional height: REFERENCE.md §3 and seed 002's "Sidebar" section. Render is
//! pure (ages are computed against [`Model::now`]), measures text by display width (CJK and
//! emoji take two columns), never wraps and never leaves trailing spaces.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use unicode_width::UnicodeWidthStr;

use crate::adapters::git;
use crate::adapters::store::Home;
use crate::adapters::tmux::Tmux;
use crate::error::Result;
use crate::orchestration::lifecycle::SessionView;
use crate::orchestration::task::{Event, Status, Task, TaskStore};
use crate::ui::diff::{branch_diff, branch_diff_committed, BranchDiff, ChangedFile, LineCache};
use crate::{execution::pool, orchestration::project};

/// The hint line at the bottom of the sidebar (seed 002's footer, terminal focused).
pub const FOOTER: &str = "Ctrl+\\:sidebar  Ctrl+]:fullscreen";
/// Files listed before `+N more`.
pub const MAX_FILES: usize = 10;
/// History entries shown, newest first.
pub const MAX_HISTORY: usize = 5;
/// Lines of TASK.md shown.
pub const MAX_TASK_LINES: usize = 10;
/// Longest text kept from one line of input: nobody sees past the pane's width, and the
/// truncation below is quadratic in the length it has to scan.
const MAX_INPUT_CHARS: usize = 1024;

/// Everything one sidebar frame shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    pub id: String,
    pub project: String,
    pub branch: String,
    /// Task status (`working`, `reviewing`…).
    pub status: String,
    /// Session state: `live`, `dead` (the agent exited, its pane is kept) or `none`.
    pub session: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_signal: Option<i32>,
    pub harness: String,
    /// What the agent is doing (`working`, `waiting`, `dead`, `error: …`), when known.
    #[serde(default)]
    pub agent: Option<String>,
    /// Token use from the agent's log; `None`: unknown (its harness does not report it).
    #[serde(default)]
    pub tokens: Option<crate::orchestration::usage::Tokens>,
    /// The port reserved for the task's workspace, when there is one.
    #[serde(default)]
    pub port: Option<u16>,
    /// `#12 open`, `#12 merged ✓`…; `None`: no pull request known.
    #[serde(default)]
    pub pr: Option<String>,
    /// Commits on the branch that the default branch does not have; `None` when git could
    /// not be read (no workspace and no branch yet, or an error: see `notice`).
    #[serde(default)]
    pub commits: Option<usize>,
    #[serde(default)]
    pub added: usize,
    #[serde(default)]
    pub removed: usize,
    /// Changed files against the merge base with the default branch: committed, staged,
    /// unstaged and untracked.
    #[serde(default)]
    pub files: Vec<ChangedFile>,
    /// Newest first.
    #[serde(default)]
    pub history: Vec<HistoryEntry>,
    /// TASK.md's text as shown (title line unmarked, empty sections dropped).
    #[serde(default)]
    pub task: Vec<String>,
    /// A line worth the user's attention: the task is done, the workspace is gone, git failed.
    #[serde(default)]
    pub notice: Option<String>,
    pub footer: String,
    /// Unix time the ages are computed against.
    pub now: i64,
}

/// One line of history as the sidebar shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// Unix time of the event; `None` when its timestamp does not parse.
    pub at: Option<i64>,
    /// The `history.jsonl` event name (`status.changed`…).
    pub event: String,
    /// What the sidebar prints (`status → working`).
    pub text: String,
}

impl Model {
    /// A model with the task's identity and nothing else known yet.
    pub fn empty(id: &str, project: &str, branch: &str, now: i64) -> Model {
        Model {
            id: id.into(),
            project: project.into(),
            branch: branch.into(),
            status: "pending".into(),
            session: "none".into(),
            exit_status: None,
            exit_signal: None,
            harness: String::new(),
            agent: None,
            tokens: None,
            port: None,
            pr: None,
            commits: None,
            added: 0,
            removed: 0,
            files: vec![],
            history: vec![],
            task: vec![],
            notice: None,
            footer: FOOTER.into(),
            now,
        }
    }
}

/// A remote task (on another host) as its host's last snapshot shows it (`item`, `None` when the
/// host listed it no more: finished, or never seen), rendered here without ssh: no git,
/// no history, and a notice saying which host and how old the view is.
pub fn remote_model(
    id: &str,
    item: Option<&crate::orchestration::attention::Item>,
    host: &crate::orchestration::attention::HostView,
    now: i64,
) -> Model {
    use crate::orchestration::attention::Bucket;
    let mut m = match item {
        Some(i) => {
            let mut m = Model::empty(id, &i.project, &i.branch, now);
            m.status = i.status.clone();
            m.session = match (i.bucket, i.session.is_some()) {
                (Bucket::Dead, _) => "dead".into(),
                (_, true) => "live".into(),
                _ => "none".into(),
            };
            m.exit_status = i.exit_status;
            m.exit_signal = i.exit_signal;
            m.agent = Some(i.reason.clone());
            m.harness = i.harness.clone();
            m
        }
        None => Model::empty(id, "?", "?", now),
    };
    let age = host
        .age_s
        .map(|a| format!("{a}s ago"))
        .unwrap_or_else(|| "never".into());
    // Its files, history and TASK.md are there: said, not shown as empty.
    m.task = vec![format!(
        "On host {}: `orange task show {id}` for its TASK.md and history.",
        host.name
    )];
    m.notice = Some(match (host.reachable, item.is_some()) {
        (true, true) => format!("on host {} · seen {age}", host.name),
        (true, false) => format!("not open on host {} (finished, or unknown)", host.name),
        (false, _) => format!("host {} unreachable · last seen {age}", host.name),
    });
    // Its host cannot be reached: the session is not known now (never called dead).
    if !host.reachable {
        m.session = crate::ui::output::unreachable_label(host.age_s)
            .trim_start_matches("? ")
            .to_string();
        m.exit_status = None;
        m.exit_signal = None;
    }
    m
}

// ---------------------------------------------------------------------------------------
// Gathering the model
// ---------------------------------------------------------------------------------------

/// What git says about a task: its diff, or why there is none.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GitPart {
    pub diff: Option<BranchDiff>,
    pub error: Option<String>,
}

/// The task's diff against its project's default branch: in its workspace (everything,
/// untracked files included) when it has one, else its branch's commits in the project.
pub fn git_part(home: &Home, task: &Task) -> GitPart {
    let run = || -> Result<Option<BranchDiff>> {
        let project = project::get(home, &task.project)?;
        let base = git::base_ref(&project.path, &project.default_branch)?;
        let cache_path = line_cache_path(home, task);
        let mut cache: LineCache = std::fs::read(&cache_path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let diff = if let Some(path) = task.workspace.as_deref().filter(|w| w.starts_with('/')) {
            // A lane: its dedicated worktree, by path (see `lane_task`).
            branch_diff(Path::new(path), &base, Some(&mut cache))?
        } else if let Some(ws) = &task.workspace {
            let ws = pool::find(home, ws)?;
            if !ws.path.join(".git").exists() {
                return Err(crate::error::OrangeError::WorkspaceNotFound(format!(
                    "{}: {} is gone",
                    ws.name,
                    ws.path.display()
                )));
            }
            branch_diff(&ws.path, &base, Some(&mut cache))?
        } else if git::local_branch_exists(&project.path, &task.branch) {
            branch_diff_committed(&project.path, &task.branch, &base, Some(&mut cache))?
        } else {
            return Ok(None);
        };
        if cache.dirty {
            save_line_cache(&cache_path, &cache);
        }
        Ok(Some(diff))
    };
    match run() {
        Ok(diff) => GitPart { diff, error: None },
        Err(e) => GitPart {
            diff: None,
            error: Some(e.to_string()),
        },
    }
}

/// Where a task's line counts are kept between frames (a cache: losing it costs time only).
pub fn line_cache_path(home: &Home, task: &Task) -> PathBuf {
    home.sidebar_cache(&task.project, &task.id)
}

/// Best effort and without fsync: a temp file renamed over the old one, so a reader never
/// sees half a file.
fn save_line_cache(path: &Path, cache: &LineCache) {
    if let Ok(data) = serde_json::to_vec(cache) {
        let _ = crate::adapters::store::write_cache(path, &data);
    }
}

/// The model of `task` from its files (task.json as given, TASK.md, history), a session
/// state and a git part: no process is started here.
pub fn assemble(
    home: &Home,
    task: &Task,
    session: &SessionView,
    git: &GitPart,
    now: DateTime<Utc>,
) -> Model {
    let store = TaskStore::new(home);
    // One invalid byte must not drop the whole text: shown lossily.
    let md = crate::text::lossy(
        std::fs::read(store.task_md(&task.project, &task.id)).unwrap_or_default(),
    );
    let history = store.history(&task.project, &task.id);
    let mut m = Model::empty(&task.id, &task.project, &task.branch, now.timestamp());
    m.status = task.status.to_string();
    m.session = session.state.to_string();
    m.exit_status = session.exit_status;
    m.exit_signal = session.exit_signal;
    m.harness = task.harness.clone();
    // No PR known: "none" only when gh could have told; without gh it is unknown.
    m.pr = task.pr.as_ref().and_then(pr_text).or_else(|| {
        (!crate::adapters::shell::on_path("gh")).then(|| "unknown (gh not installed)".into())
    });
    m.history = history.iter().rev().map(history_entry).collect();
    m.task = task_lines(&md);
    if let Some(d) = &git.diff {
        m.commits = Some(d.commits);
        m.added = d.added;
        m.removed = d.removed;
        m.files = d.files.clone();
    }
    let agent = crate::orchestration::attention::agent_state(&store, task, session);
    m.agent = agent
        .state
        .map(|s| match (s, agent.error_kind, agent.blocker) {
            (crate::orchestration::agent::State::Error, Some(k), _) => {
                format!("error: {}", k.as_str())
            }
            (crate::orchestration::agent::State::Blocked, _, Some(b)) => {
                format!("blocked: {}", b.label())
            }
            (s, _, _) => s.as_str().to_string(),
        });
    m.tokens =
        crate::orchestration::usage::tokens(&store.dir(&task.project, &task.id), &task.harness);
    m.port = port_of(home, task);
    m.notice = match task.status {
        Status::Done => Some("Task done: merged, workspace released.".into()),
        Status::Cancelled => Some("Task cancelled.".into()),
        Status::Failed => Some(format!(
            "Failed to start: {}. `orange task respawn {}` retries.",
            task.failure.as_deref().unwrap_or("unknown reason"),
            task.id
        )),
        Status::Pending if task.workspace.is_none() => {
            Some("Pending: starts when a workspace is free.".into())
        }
        // Started without a prompt: what it waits for is not trouble.
        _ if task.awaiting_prompt
            && agent.escalated.is_none()
            && agent.state == Some(crate::orchestration::agent::State::Waiting) =>
        {
            Some("No prompt yet: type the first one in the agent's pane.".into())
        }
        _ => match (&agent.escalated, &git.error) {
            // A dialog, an error, a death: its detail says what happened and what to do.
            (Some(e), _) => Some(match &agent.detail {
                // A blocker's reason (`label — advice`) and a death's detail (`how: advice`)
                // end alike: the advice once.
                Some(d)
                    if e.reason
                        .split_once(" — ")
                        .is_some_and(|(_, a)| d.ends_with(a)) =>
                {
                    let label = e.reason.split_once(" — ").map_or("", |(l, _)| l);
                    format!("Needs you: {label} — {d}")
                }
                Some(d)
                    if !matches!(
                        agent.state,
                        Some(crate::orchestration::agent::State::Working) | None
                    ) && !e.reason.contains(d.as_str()) =>
                {
                    format!("Needs you: {} ({d})", e.reason)
                }
                _ => format!("Needs you: {}", e.reason),
            }),
            (None, _)
                if agent.state == Some(crate::orchestration::agent::State::Dead)
                    && agent.detail.is_some() =>
            {
                agent.detail.clone().map(|d| format!("Agent {d}"))
            }
            (None, Some(e)) => Some(format!("git: {e}")),
            (None, None) => None,
        },
    };
    m
}

/// The task's `ORANGE_PORT`: the project's port base plus its workspace's slot number.
fn port_of(home: &Home, task: &Task) -> Option<u16> {
    let (_, index) = pool::parse_name(task.workspace.as_deref()?)?;
    project::port_for(&project::get(home, &task.project).ok()?, index)
}

/// Gather the model of `task`: its files, its session (one tmux call) and its diff.
/// A lane seen as a task, so the sidebar shows lanes like tasks: its worktree (by absolute
/// path) as the workspace, its state as the status (running → working, finished →
/// reviewing, error → stuck, closed → done), its task key as the summary.
pub fn lane_task(home: &Home, lane_id: &str) -> Result<Task> {
    Ok(crate::orchestration::lane::Lanes::new(home)
        .get(lane_id)?
        .as_task())
}

pub fn model_for_task(home: &Home, task: &Task, now: DateTime<Utc>) -> Result<Model> {
    let tmux = Tmux::from_env();
    // The snapshot (a tmux call when stale) and the git diff do not depend on each other:
    // run them side by side.
    let (panes, git) = std::thread::scope(|s| {
        let panes = s.spawn(|| {
            crate::orchestration::observer::current(home, &tmux)
                .map(|snap| snap.panes)
                .unwrap_or_default()
        });
        let git = git_part(home, task);
        (panes.join().unwrap_or_default(), git)
    });
    let session = SessionView::of(task, &panes);
    Ok(assemble(home, task, &session, &git, now))
}

/// `#12 open` from the PR value stored in task.json (gh's shape: number, pr_state).
pub fn pr_text(pr: &serde_json::Value) -> Option<String> {
    let number = pr.get("number").and_then(|n| n.as_u64())?;
    let state = pr
        .get("pr_state")
        .or_else(|| pr.get("state"))
        .and_then(|s| s.as_str())
        .unwrap_or("")
        .to_lowercase();
    Some(match state.as_str() {
        "merged" => format!("#{number} merged ✓"),
        "" | "found" => format!("#{number}"),
        s => format!("#{number} {s}"),
    })
}

fn history_entry(e: &Event) -> HistoryEntry {
    HistoryEntry {
        at: DateTime::parse_from_rfc3339(&e.ts)
            .ok()
            .map(|t| t.timestamp()),
        event: e.event.clone(),
        text: describe_event(e),
    }
}

/// A history event in a few words: `spawned (claude)`, `status → working`, `crashed (1)`.
pub fn describe_event(e: &Event) -> String {
    let s = |k: &str| e.data.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let n = |k: &str| e.data.get(k).and_then(|v| v.as_u64());
    match e.event.as_str() {
        "task.created" => "created".into(),
        "agent.spawned" => match s("harness") {
            Some(h) => format!("spawned ({h})"),
            None => "spawned".into(),
        },
        "agent.respawned" => "respawned".into(),
        "auto.spawned" => "started from the queue".into(),
        "agent.spawn_failed" => "spawn failed".into(),
        "status.changed" => match s("to") {
            Some(to) => format!("status → {to}"),
            None => "status changed".into(),
        },
        "agent.crashed" => match n("crash_count") {
            Some(c) => format!("crashed ({c})"),
            None => "crashed".into(),
        },
        "auto.advanced" => match s("to") {
            Some(to) => format!("advanced → {to}"),
            None => "advanced".into(),
        },
        "task.merged" => "merged".into(),
        "task.cancelled" => "cancelled".into(),
        "pr.created" => match n("number") {
            Some(num) => format!("PR #{num} created"),
            None => "PR created".into(),
        },
        "pr.merged" => "PR merged".into(),
        "summary.changed" => "summary changed".into(),
        "branch.changed" => match s("to") {
            Some(to) => format!("branch → {to}"),
            None => "branch changed".into(),
        },
        other => other.replace(['.', '_'], " "),
    }
}

/// The lines of TASK.md the sidebar shows: YAML front matter skipped, the `# ` title kept
/// as plain text (it is the task's summary), headings of empty sections and runs of blank
/// lines dropped.
pub fn task_lines(md: &str) -> Vec<String> {
    let mut lines: Vec<&str> = md.lines().collect();
    if lines.first().is_some_and(|l| l.trim_end() == "---") {
        if let Some(end) = lines.iter().skip(1).position(|l| l.trim_end() == "---") {
            lines.drain(..end + 2);
        }
    }
    let mut out: Vec<String> = vec![];
    let mut title_done = false;
    for (i, line) in lines.iter().enumerate() {
        let line = line.trim_end();
        if !title_done && !line.is_empty() {
            title_done = true;
            if let Some(t) = line.strip_prefix("# ") {
                let t = t.trim();
                if !t.is_empty() && t != "(no summary)" {
                    out.push(t.to_string());
                }
                continue;
            }
        }
        if is_heading(line) {
            let empty = lines[i + 1..]
                .iter()
                .map(|l| l.trim())
                .take_while(|l| !is_heading(l))
                .all(str::is_empty);
            if empty {
                continue;
            }
        }
        if line.is_empty() && out.last().is_none_or(|l| l.is_empty()) {
            continue;
        }
        out.push(line.to_string());
    }
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    out
}

fn is_heading(line: &str) -> bool {
    let hashes = line.bytes().take_while(|b| *b == b'#').count();
    (1..=6).contains(&hashes) && line[hashes..].starts_with(' ')
}

/// `30s ago`, `5m ago`, `2h ago`, `2d ago`.
pub fn age(now: i64, at: Option<i64>) -> String {
    let Some(at) = at else {
        return "?".into();
    };
    let d = (now - at).max(0);
    match d {
        0..60 => format!("{d}s ago"),
        60..3600 => format!("{}m ago", d / 60),
        3600..86400 => format!("{}h ago", d / 3600),
        _ => format!("{}d ago", d / 86400),
    }
}

// ---------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    Bold,
    Dim,
    Green,
    Red,
    Yellow,
    Cyan,
}

impl Style {
    fn sgr(self) -> &'static str {
        match self {
            Style::Plain => "",
            Style::Bold => "\x1b[1m",
            Style::Dim => "\x1b[2m",
            Style::Green => "\x1b[32m",
            Style::Red => "\x1b[31m",
            Style::Yellow => "\x1b[33m",
            Style::Cyan => "\x1b[36m",
        }
    }
}

#[derive(Debug, Clone)]
struct Span {
    text: String,
    style: Style,
    /// Truncate from the left (`…/auth/callback.ts`): the end of a path says the most.
    keep_tail: bool,
}

#[derive(Debug, Clone, Default)]
struct Line(Vec<Span>);

impl Line {
    fn new() -> Line {
        Line(vec![])
    }
    fn text(s: impl AsRef<str>, style: Style) -> Line {
        Line::new().push(s, style)
    }
    fn push(mut self, s: impl AsRef<str>, style: Style) -> Line {
        self.0.push(Span {
            text: sanitize(s.as_ref()),
            style,
            keep_tail: false,
        });
        self
    }
    fn push_tail(mut self, s: impl AsRef<str>, style: Style) -> Line {
        self.0.push(Span {
            text: sanitize(s.as_ref()),
            style,
            keep_tail: true,
        });
        self
    }
    fn plain(&self) -> String {
        self.0.iter().map(|s| s.text.as_str()).collect()
    }
    fn ansi(&self) -> String {
        let mut out = String::new();
        for s in &self.0 {
            if s.style == Style::Plain || s.text.is_empty() {
                out.push_str(&s.text);
            } else {
                out.push_str(s.style.sgr());
                out.push_str(&s.text);
                out.push_str("\x1b[0m");
            }
        }
        out
    }
}

/// Text as one terminal line ([`crate::text::safe_line`]: control characters and escapes
/// shown, never interpreted), tabs two spaces; overlong input is cut.
fn sanitize(s: &str) -> String {
    let head: String = s.chars().take(MAX_INPUT_CHARS).collect();
    crate::text::safe_line(&head.replace('\t', "  ")).into_owned()
}

/// The longest prefix of `s` at most `cols` columns wide (never half a wide character).
fn head(s: &str, cols: usize) -> &str {
    let mut best = 0;
    for (i, c) in s.char_indices() {
        let end = i + c.len_utf8();
        if s[..end].width() > cols {
            break;
        }
        best = end;
    }
    &s[..best]
}

/// The longest suffix of `s` at most `cols` columns wide.
fn tail(s: &str, cols: usize) -> &str {
    let mut best = s.len();
    for (i, _) in s.char_indices().rev() {
        if s[i..].width() > cols {
            break;
        }
        best = i;
    }
    &s[best..]
}

/// Cut a line to `width` columns, marking the cut with `…`; then drop trailing spaces.
fn fit(line: Line, width: usize) -> Line {
    let total: usize = line.0.iter().map(|s| s.text.width()).sum();
    let mut spans = if total <= width {
        line.0
    } else if width == 0 {
        vec![]
    } else {
        let budget = width - 1; // room for the `…`
        let mut out: Vec<Span> = vec![];
        let mut used = 0;
        let n = line.0.len();
        for (i, span) in line.0.into_iter().enumerate() {
            let w = span.text.width();
            if used + w <= budget {
                used += w;
                out.push(span);
                continue;
            }
            let room = budget - used;
            let text = if span.keep_tail && i + 1 == n {
                format!("…{}", tail(&span.text, room))
            } else {
                format!("{}…", head(&span.text, room))
            };
            out.push(Span { text, ..span });
            break;
        }
        out
    };
    // Trailing spaces: never printed (a pane shows them as nothing anyway).
    while let Some(last) = spans.last_mut() {
        let trimmed = last.text.trim_end_matches(' ').len();
        last.text.truncate(trimmed);
        if last.text.is_empty() {
            spans.pop();
        } else {
            break;
        }
    }
    let line = Line(spans);
    // Widths of spans add up for everything orange builds; if some exotic sequence made
    // them not, fall back to cutting the plain text.
    let plain = line.plain();
    if plain.width() <= width {
        return line;
    }
    let mut cut = head(&plain, width.saturating_sub(1)).to_string();
    while !cut.is_empty() && cut.width() + 1 > width {
        cut.pop();
    }
    cut.push('…');
    Line::text(cut.trim_end(), Style::Plain)
}

/// `── Title ─────` filling `width`.
fn rule(title: &str, width: usize) -> Line {
    let label = format!("── {title} ");
    let fill = width.saturating_sub(label.width());
    Line::text(format!("{label}{}", "─".repeat(fill)), Style::Dim)
}

fn status_style(status: &str) -> Style {
    match status {
        "working" | "planning" => Style::Yellow,
        "reviewing" | "agent-review" | "done" => Style::Green,
        "stuck" | "clarification" => Style::Red,
        _ => Style::Plain,
    }
}

/// The first of `candidates` that fits `width` (the last one, to be cut, when none does).
fn first_fitting(candidates: Vec<Line>, width: usize) -> Line {
    let n = candidates.len();
    candidates
        .into_iter()
        .enumerate()
        .find(|(i, l)| i + 1 == n || l.plain().width() <= width)
        .map(|(_, l)| l)
        .unwrap_or_default()
}

/// The footer for the keys really bound: `@orange-sidebar-key` and `@orange-zoom-key`
/// (unset: the defaults `C-\\` and `C-]`; `off` or empty: not bound, not shown), each
/// only when the plugin did bind it (`bound`: its `@orange_bound_keys`, `table:key` words;
/// `None`: not known), else the plugin's help key (`prefix O ?`), else nothing.
pub fn footer_for_keys(
    sidebar: Option<&str>,
    zoom: Option<&str>,
    table: Option<&str>,
    bound: Option<&str>,
) -> String {
    let is_bound = |t: &str, k: &str| {
        bound.is_none_or(|b| b.split_whitespace().any(|w| w == format!("{t}:{k}")))
    };
    let shown = |k: Option<&str>, default: &str| -> Option<String> {
        match k.map(str::trim) {
            None => Some(default.to_string()),
            Some("") | Some("off") | Some("none") => None,
            Some(k) => Some(k.to_string()),
        }
    };
    let s = shown(sidebar, "C-\\").filter(|k| is_bound("root", k));
    let z = shown(zoom, "C-]").filter(|k| is_bound("root", k));
    if s.as_deref() == Some("C-\\") && z.as_deref() == Some("C-]") {
        return FOOTER.into();
    }
    let pretty = |k: &str| {
        k.strip_prefix("C-")
            .map_or(k.to_string(), |r| format!("Ctrl+{r}"))
    };
    let mut parts = vec![];
    if let Some(k) = s {
        parts.push(format!("{}:sidebar", pretty(&k)));
    }
    if let Some(k) = z {
        parts.push(format!("{}:fullscreen", pretty(&k)));
    }
    if parts.is_empty() {
        return match shown(table, "O").filter(|k| is_bound("prefix", k)) {
            Some(key) => format!("prefix {key} ?: keys"),
            None => String::new(),
        };
    }
    parts.join("  ")
}

/// The footer, shortened to fit: `^\` is how terminals write Ctrl+\.
fn footer_line(m: &Model, width: usize) -> Line {
    let mut candidates = vec![Line::text(&m.footer, Style::Dim)];
    if m.footer == FOOTER {
        candidates.push(Line::text("^\\:sidebar  ^]:fullscreen", Style::Dim));
        candidates.push(Line::text("^\\:sidebar ^]:full", Style::Dim));
    }
    first_fitting(candidates, width)
}

fn header_lines(m: &Model, width: usize) -> Vec<Line> {
    let mut out = vec![Line::text(
        format!("{}/{}", m.project, m.branch),
        Style::Bold,
    )];
    let (icon, icon_style) = match m.session.as_str() {
        "live" => ("●", Style::Green),
        "dead" => ("✗", Style::Red),
        s if s.starts_with("unreachable") => ("?", Style::Yellow),
        _ => ("○", Style::Dim),
    };
    let mut session = m.session.clone();
    match (m.exit_status, m.exit_signal) {
        (Some(c), _) => session.push_str(&format!(" (exit {c})")),
        (_, Some(s)) => session.push_str(&format!(" (signal {s})")),
        _ => {}
    }
    // Narrow panes lose the padding, then the label, before the session state.
    let status = |label: &str, gap: &str, session: &str| {
        Line::text(label, Style::Plain)
            .push(&m.status, status_style(&m.status))
            .push(gap, Style::Plain)
            .push(format!("{icon} {session}"), icon_style)
    };
    out.push(first_fitting(
        vec![
            status("Status: ", "   ", &session),
            status("Status: ", " ", &session),
            status("", " ", &session),
            status("", " ", &m.session),
            status("", " ", ""),
        ],
        width,
    ));
    if let Some(a) = &m.agent {
        let style = match a.as_str() {
            "working" => Style::Yellow,
            "waiting" => Style::Cyan,
            _ if a.starts_with("error") || a.starts_with("blocked") || a == "dead" => Style::Red,
            _ => Style::Plain,
        };
        out.push(Line::text("Agent: ", Style::Plain).push(a, style));
    }
    out.push(Line::text(format!("Harness: {}", m.harness), Style::Plain));
    // Narrow panes lose the label before the numbers.
    out.push(match &m.tokens {
        Some(t) => {
            let numbers = crate::orchestration::usage::short_text(t);
            first_fitting(
                vec![
                    Line::text(format!("Tokens: {numbers}"), Style::Plain),
                    Line::text(numbers, Style::Plain),
                ],
                width,
            )
        }
        None => Line::text("Tokens: unknown", Style::Plain),
    });
    out.push(Line::text(
        format!("PR: {}", m.pr.as_deref().unwrap_or("none")),
        Style::Plain,
    ));
    out.push(match m.commits {
        Some(n) => Line::text(format!("Commits: {n}  "), Style::Plain)
            .push(format!("+{}", m.added), Style::Green)
            .push(" ", Style::Plain)
            .push(format!("-{}", m.removed), Style::Red),
        None => Line::text("Commits: -", Style::Plain),
    });
    if let Some(p) = m.port {
        out.push(Line::text(format!("Port: {p}"), Style::Plain));
    }
    if let Some(n) = &m.notice {
        // Why it needs you is the point of the notice: wrapped, not cut at the first line.
        for l in wrap(n, width, NOTICE_LINES) {
            out.push(Line::text(l, Style::Yellow));
        }
    }
    out
}

/// Lines a notice may take.
const NOTICE_LINES: usize = 4;

/// `text` in lines of at most `width` columns (display width), broken at spaces where it
/// can, at most `max` lines (the last one then ends in `…` through the usual fitting).
fn wrap(text: &str, width: usize, max: usize) -> Vec<String> {
    let width = width.max(8);
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        let sep = usize::from(!cur.is_empty());
        if cur.width() + sep + word.width() > width && !cur.is_empty() {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    if lines.len() > max {
        let rest = lines.split_off(max - 1).join(" ");
        lines.push(rest);
    }
    lines
}

fn file_style(status: char) -> Style {
    match status {
        'A' => Style::Green,
        'D' => Style::Red,
        'R' => Style::Cyan,
        'U' => Style::Red,
        _ => Style::Yellow,
    }
}

/// The Files section in at most `limit` body lines.
fn files_lines(m: &Model, width: usize, limit: usize) -> Vec<Line> {
    let n = m.files.len();
    let mut out = vec![rule(&format!("Files ({n})"), width)];
    if n == 0 {
        // No diff read (git failed, or the task is on another host): not "no changes".
        let what = if m.commits.is_none() {
            " (not known here)"
        } else {
            " (no changes)"
        };
        out.push(Line::text(what, Style::Dim));
        return out;
    }
    let shown = if n <= limit {
        n
    } else {
        limit.saturating_sub(1)
    };
    for f in &m.files[..shown] {
        out.push(
            Line::text(" ", Style::Plain)
                .push(f.status.to_string(), file_style(f.status))
                .push(" ", Style::Plain)
                .push_tail(&f.path, Style::Plain),
        );
    }
    if shown < n {
        out.push(Line::text(format!(" +{} more", n - shown), Style::Dim));
    }
    out
}

fn history_lines(m: &Model, width: usize, limit: usize) -> Vec<Line> {
    let mut out = vec![rule("History", width)];
    if m.history.is_empty() {
        out.push(Line::text(" (none)", Style::Dim));
        return out;
    }
    let shown: Vec<(String, &HistoryEntry)> = m
        .history
        .iter()
        .take(limit)
        .map(|e| (age(m.now, e.at), e))
        .collect();
    let w = shown.iter().map(|(a, _)| a.width()).max().unwrap_or(0);
    for (a, e) in shown {
        out.push(Line::text(format!(" {a:>w$}  "), Style::Dim).push(&e.text, Style::Plain));
    }
    out
}

fn task_section(m: &Model, width: usize, limit: usize) -> Vec<Line> {
    let mut out = vec![rule("Task", width)];
    if m.task.is_empty() {
        out.push(Line::text(" (no description)", Style::Dim));
        return out;
    }
    let mut shown: Vec<&String> = m.task.iter().take(limit).collect();
    let cut = shown.len() < m.task.len();
    if cut {
        // Never end on a blank line: the `…` goes after the last line with text.
        while shown.len() > 1 && shown.last().is_some_and(|l| l.is_empty()) {
            shown.pop();
        }
    }
    let n = shown.len();
    for (i, l) in shown.into_iter().enumerate() {
        let text = if cut && i + 1 == n {
            format!(" {l} …")
        } else {
            format!(" {l}")
        };
        out.push(Line::text(text, Style::Plain));
    }
    out
}

/// The frame's lines, each fitted to `width`; with a height, exactly that many lines (the
/// footer on the last one), lower sections shortened or dropped first to make room.
fn layout(m: &Model, width: usize, height: Option<usize>) -> Vec<Line> {
    let header = header_lines(m, width);
    // Body-line limits of Files, History, Task; 0 = the section is dropped.
    let mut limits = [MAX_FILES + 1, MAX_HISTORY, MAX_TASK_LINES];
    let mut footer = true;
    let build = |limits: &[usize; 3], footer: bool| -> Vec<Line> {
        let mut lines = header.clone();
        let sections: [&dyn Fn(usize) -> Vec<Line>; 3] = [
            &|l| files_lines(m, width, l),
            &|l| history_lines(m, width, l),
            &|l| task_section(m, width, l),
        ];
        for (i, section) in sections.iter().enumerate() {
            if limits[i] > 0 {
                lines.push(Line::new());
                lines.extend(section(limits[i]));
            }
        }
        if footer {
            if height.is_none() {
                lines.push(Line::new());
            }
            lines.push(footer_line(m, width));
        }
        lines
    };
    let mut lines = build(&limits, footer);
    if let Some(h) = height {
        while lines.len() > h {
            // Shorten the lowest section down to one line, then drop it; the footer goes
            // before the Files section, the header last.
            if let Some(i) = (1..3).rev().find(|&i| limits[i] > 0) {
                limits[i] -= 1;
            } else if footer {
                footer = false;
            } else if limits[0] > 0 {
                limits[0] -= 1;
            } else {
                lines.truncate(h);
                break;
            }
            lines = build(&limits, footer);
        }
        if !footer && lines.len() < h {
            // The Files section went for want of room: the footer may still fit.
            let with = build(&limits, true);
            if with.len() <= h {
                footer = true;
                lines = with;
            }
        }
        if footer && lines.len() < h {
            let foot = lines.pop().expect("the footer line");
            lines.resize(h - 1, Line::new());
            lines.push(foot);
        }
        lines.resize(h, Line::new());
    }
    lines.into_iter().map(|l| fit(l, width)).collect()
}

fn join(lines: &[String]) -> String {
    let mut out = String::new();
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// One frame as plain text: lines at most `width` columns, no trailing spaces, each ended
/// by `\n`. With `height`, exactly `height` lines.
pub fn render(model: &Model, width: usize, height: Option<usize>) -> String {
    let lines: Vec<String> = layout(model, width, height)
        .iter()
        .map(Line::plain)
        .collect();
    join(&lines)
}

/// [`render`] with ANSI colours (for a terminal).
pub fn render_ansi(model: &Model, width: usize, height: Option<usize>) -> String {
    let lines: Vec<String> = layout(model, width, height)
        .iter()
        .map(Line::ansi)
        .collect();
    join(&lines)
}

/// The frame shown when the task the sidebar follows no longer exists.
pub fn render_gone(id: &str, width: usize, height: Option<usize>) -> String {
    let mut lines = vec![
        Line::text(format!("task {id}"), Style::Bold),
        Line::new(),
        Line::text("This task was deleted.", Style::Yellow),
    ];
    if let Some(h) = height {
        lines.resize(h, Line::new());
    }
    let lines: Vec<String> = lines.into_iter().map(|l| fit(l, width).plain()).collect();
    join(&lines)
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_footer_names_the_keys_really_bound() {
        assert_eq!(footer_for_keys(None, None, None, None), FOOTER);
        assert_eq!(
            footer_for_keys(Some("C-\\"), Some("C-]"), None, None),
            FOOTER
        );
        assert_eq!(
            footer_for_keys(Some("off"), Some("M-z"), None, None),
            "M-z:fullscreen"
        );
        assert_eq!(
            footer_for_keys(Some("C-s"), Some(""), None, None),
            "Ctrl+s:sidebar"
        );
        assert_eq!(
            footer_for_keys(Some("off"), Some("off"), Some("T"), None),
            "prefix T ?: keys"
        );
        // What the plugin left alone (the person had bound it) is not named.
        let bound = Some("prefix:O root:C-]");
        assert_eq!(
            footer_for_keys(None, None, None, bound),
            "Ctrl+]:fullscreen"
        );
        assert_eq!(
            footer_for_keys(Some("off"), Some("off"), Some("off"), Some("")),
            ""
        );
    }

    use super::*;

    #[test]
    fn ages_use_the_largest_unit() {
        assert_eq!(age(100, Some(70)), "30s ago");
        assert_eq!(age(1000, Some(700)), "5m ago");
        assert_eq!(age(10_000, Some(10_000 - 2 * 3600 - 5)), "2h ago");
        assert_eq!(age(1_000_000, Some(1_000_000 - 2 * 86400)), "2d ago");
        assert_eq!(age(5, Some(10)), "0s ago");
        assert_eq!(age(5, None), "?");
    }

    #[test]
    fn truncation_respects_display_width() {
        let l = fit(Line::text("日本語のブランチ名", Style::Plain), 7);
        let p = l.plain();
        assert!(p.width() <= 7, "{p:?}");
        assert!(p.ends_with('…'));
        assert_eq!(p, "日本語…");
        let l = fit(
            Line::text(" M ", Style::Plain).push_tail("src/auth/callback.ts", Style::Plain),
            16,
        );
        assert_eq!(l.plain(), " M …/callback.ts");
        assert_eq!(fit(Line::text("abc   ", Style::Plain), 10).plain(), "abc");
        assert_eq!(fit(Line::text("abcdef", Style::Plain), 0).plain(), "");
        assert_eq!(fit(Line::text("abcdef", Style::Plain), 1).plain(), "…");
    }

    #[test]
    fn control_characters_never_reach_the_terminal() {
        let l = fit(Line::text("a\x1b[2Jb\tc\r\u{202e}d", Style::Plain), 40);
        assert_eq!(l.plain(), "a␛[2Jb  c␍\u{fffd}d");
    }

    #[test]
    fn notices_wrap_at_spaces_within_the_width() {
        let w = wrap(
            "Needs you: agent exited with status 1: Error: the model refused the API key",
            20,
            4,
        );
        assert!(
            w.iter().all(|l| l.width() <= 20 || !l.contains(' ')),
            "{w:?}"
        );
        assert_eq!(
            w.join(" "),
            "Needs you: agent exited with status 1: Error: the model refused the API key"
        );
        assert_eq!(wrap("a b c d e f g h", 8, 2).len(), 2);
    }

    #[test]
    fn task_lines_keep_the_title_and_drop_empty_sections() {
        let md =
            crate::orchestration::task::task_md("Fix the login\n\nmore words", Some("ctx line"));
        let lines = task_lines(&md);
        assert_eq!(lines[0], "Fix the login");
        assert!(lines.contains(&"## Context".to_string()));
        assert!(!lines.iter().any(|l| l == "## Notes"), "{lines:?}");
        assert!(task_lines(&crate::orchestration::task::task_md("", None)).is_empty());
        assert_eq!(
            task_lines("---\na: b\n---\n# T\n\nbody\n"),
            vec!["T", "", "body"]
        );
    }
}
