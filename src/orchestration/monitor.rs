//! The agent monitor (seed 003): one pass looks at every active task with ONE tmux query,
//! decides each agent's state from the best signal (hook > Claude log > pane > screen),
//! and applies the task's policies: on_idle (nudge once per idle period), on_exit
//! (recover, escalate, done; two crashes make the task stuck), on_error (per kind).

use std::path::Path;
use std::time::Duration;

use serde::Serialize;
use serde_json::json;

use crate::adapters::store::{self, Home, LockGuard};
use crate::adapters::tmux::{PaneExit, PaneInfo, Tmux};
use crate::error::{OrangeError, Result};
use crate::execution::config::{Action, Config, Policy};
use crate::execution::sandbox;
use crate::orchestration::agent::{self, AgentInfo, Escalation, LogState, Signal, State};
use crate::orchestration::lifecycle::{Recovery, Tasks};
use crate::orchestration::observer::{self, Snapshot};
use crate::orchestration::prompt;
use crate::orchestration::screen;
use crate::orchestration::task::{Status, Task};

pub const DEFAULT_IDLE_GRACE: Duration = Duration::from_secs(60);
pub const DEFAULT_NUDGE: &str = "Please continue with the task.";
/// Crashes (exits without the required outcome) after which a task is stuck.
pub const CRASH_LIMIT: u32 = 2;
/// Idle periods nudged without progress before the monitor escalates instead.
pub const DEFAULT_MAX_NUDGES: u32 = 2;

/// What one pass saw and did, per task.
#[derive(Debug, Default, Serialize)]
pub struct PassReport {
    pub checked: usize,
    pub actions: Vec<serde_json::Value>,
    pub states: Vec<serde_json::Value>,
    /// What the pass saw, classified after its policies acted: the observer's snapshot.
    #[serde(skip)]
    pub snapshot: Option<Snapshot>,
    /// How long the pass took in the monitor (ms): looking, repairing, judging, writing the
    /// snapshot and publishing; not the start of an `orange` process.
    pub pass_ms: f64,
    /// The pass lock, held until the report is dropped: the caller writes, publishes and
    /// notifies ([`crate::orchestration::notify::after_pass`]) under it, so two passes
    /// never tell the same change.
    #[serde(skip)]
    pub lock: Option<LockGuard>,
}

/// Agent timestamps are precise: a hook and a monitor pass often fall in the same second.
fn now_s() -> String {
    store::now_precise()
}

/// How long a claude that has sent no hook since it started counts as starting up.
const STARTUP_GRACE: Duration = Duration::from_secs(60);

fn age(since: &str, now: chrono::DateTime<chrono::Utc>) -> Duration {
    chrono::DateTime::parse_from_rfc3339(since)
        .map(|t| now.signed_duration_since(t).to_std().unwrap_or_default())
        .unwrap_or_default()
}

/// The resolved policy of one task, with defaults applied.
pub struct Resolved {
    pub idle_grace: Duration,
    pub on_idle: Action,
    pub on_exit: Action,
    pub max_nudges: u32,
    policy: Policy,
}

impl Resolved {
    pub fn of(config: &Config, task: &Task) -> Resolved {
        let policy = config.policy_for(&task.id, &task.harness);
        Resolved {
            idle_grace: policy
                .idle_grace
                .as_deref()
                .and_then(|g| humantime::parse_duration(g).ok())
                .unwrap_or(DEFAULT_IDLE_GRACE),
            on_idle: policy.on_idle.clone().unwrap_or(Action::Full {
                action: "nudge".into(),
                message: Some(DEFAULT_NUDGE.into()),
                mode: None,
            }),
            max_nudges: policy.max_nudges.unwrap_or(DEFAULT_MAX_NUDGES),
            on_exit: policy
                .on_exit
                .clone()
                .unwrap_or(Action::Name("escalate".into())),
            policy,
        }
    }

    pub fn on_error(&self, kind: &str) -> Action {
        self.policy
            .on_error
            .as_ref()
            .and_then(|p| p.for_kind(kind))
            .cloned()
            .unwrap_or(Action::Name("escalate".into()))
    }
}

/// One observation of an agent.
#[derive(Default)]
struct Seen {
    state: Option<State>,
    signal: Option<Signal>,
    exit: Option<PaneExit>,
    death: Option<String>,
    error: Option<(agent::ErrorKind, String)>,
    blocker: Option<(agent::Blocker, String)>,
    /// `attempt 2/10` while retrying.
    retry: Option<String>,
    /// The question its turn ended on.
    asked: Option<String>,
    /// It called a tool since the last pass (the log grew with a tool call).
    progress: bool,
    log_len: Option<u64>,
    /// When the state began, when the signal knows (screen: the last activity).
    since: Option<String>,
    /// A dead agent's last lines (scrollback included).
    last_lines: Vec<String>,
    /// The pane whose screen this pass must read.
    look: Option<String>,
    /// A dead agent's pane: its id and the pid its program had.
    pane: Option<(String, u32)>,
}

impl Seen {
    /// What the screen shows outranks a busy or idle guess: a dialog blocks the agent
    /// whatever the last hook said; a retry shows only while it looks busy.
    fn apply(&mut self, s: screen::Screen) {
        match s {
            screen::Screen::Blocked(b, line) => {
                self.state = Some(State::Blocked);
                self.signal = Some(Signal::Screen);
                self.blocker = Some((b, line));
            }
            screen::Screen::Retrying(detail)
                if matches!(self.state, Some(State::Working | State::Unknown) | None) =>
            {
                self.state = Some(State::Retrying);
                self.signal = Some(Signal::Screen);
                self.retry = Some(detail);
            }
            screen::Screen::Retrying(_) => {}
            // A declared error line says more than the screen's activity; a hook or the
            // transcript (newer, and the agent's own word) says more than it.
            screen::Screen::Error(_)
                if !matches!(self.signal, None | Some(Signal::Screen | Signal::None)) => {}
            screen::Screen::Error(line) => {
                self.state = Some(State::Error);
                self.signal = Some(Signal::Screen);
                self.error = Some((agent::classify_error(&line), line));
            }
            // A declared prompt or spinner says more than the screen's activity, never
            // more than a hook or the transcript.
            screen::Screen::Waiting(_) | screen::Screen::Working(_)
                if !matches!(self.signal, None | Some(Signal::Screen | Signal::None)) => {}
            screen::Screen::Waiting(_) => {
                if self.state != Some(State::Waiting) {
                    self.since = None;
                }
                self.state = Some(State::Waiting);
                self.signal = Some(Signal::Screen);
            }
            screen::Screen::Working(_) => {
                self.state = Some(State::Working);
                self.signal = Some(Signal::Screen);
                self.since = None;
            }
        }
    }
}

/// Lines of scrollback read above a dead agent's screen for its last words.
const DEATH_SCROLLBACK: usize = 200;
/// How many of a dead agent's last lines are kept.
const LAST_LINES: usize = 12;
/// How long after a death its last words are still looked for when none were read.
const LATE_WORDS: Duration = Duration::from_secs(10);

pub struct Monitor<'a> {
    home: &'a Home,
    tasks: Tasks<'a>,
    config: Config,
    tmux: Tmux,
    /// Workspace name → path, read once per pass (not once per task).
    workspaces: std::collections::HashMap<String, std::path::PathBuf>,
    /// The task being checked was respawned by its policy (its agent.json is new).
    respawned: bool,
    /// The tmux server instance watched: tasks started on another are not this monitor's.
    server: Option<crate::adapters::tmux::ServerId>,
    /// What started the pass (`monitor`, `hook:pane-died`…), written with what it records.
    via: String,
    /// How each harness's screen is read (config.toml's patterns and the built-in ones),
    /// compiled once.
    rules: std::collections::HashMap<String, screen::Rules>,
}

impl<'a> Monitor<'a> {
    /// Watch this server instance (the one the monitor loop checked), not whichever
    /// answers on the socket now.
    pub fn on_server(mut self, server: crate::adapters::tmux::ServerId) -> Self {
        self.server = Some(server);
        self
    }

    /// Name what started the passes (recorded as `via` in the events they write).
    pub fn via(mut self, via: &str) -> Self {
        self.via = via.to_string();
        self
    }

    pub fn new(home: &'a Home, tmux: Tmux) -> Result<Monitor<'a>> {
        let config = Config::load(home)?;
        let rules = crate::execution::config::BUILTIN
            .iter()
            .map(|h| h.to_string())
            .chain(config.harness.keys().cloned())
            .map(|h| {
                let r = screen::Rules::of(&h, &config);
                (h, r)
            })
            .collect();
        Ok(Monitor {
            home,
            tasks: Tasks::new(home).with_tmux(tmux.clone()),
            config,
            rules,
            tmux,
            workspaces: Default::default(),
            respawned: false,
            server: None,
            via: "monitor".into(),
        })
    }

    /// One pass over every active task. Passes are serialized (a short lock), so a pass
    /// started by hand never races the background monitor into a double nudge.
    pub fn pass(&mut self) -> Result<PassReport> {
        self.pass_within(Duration::from_secs(30))
    }

    /// [`Self::pass`], waiting at most `wait` for another pass to end (`lock_timeout`
    /// after that). It asks tmux ONCE ([`observer::look`]): the sessions and their marks
    /// for the crash repair, the panes for every agent; screens are read (one more call)
    /// only for agents whose state the screen can tell. The report carries the snapshot,
    /// classified after the policies acted, for the caller to write, publish and notify
    /// while the report (which holds the pass lock) lives.
    pub fn pass_within(&mut self, wait: Duration) -> Result<PassReport> {
        let pass = LockGuard::acquire_within(&self.home.root.join("run/monitor-pass.lock"), wait)?;
        let mut report = PassReport {
            lock: Some(pass),
            ..PassReport::default()
        };
        let mut snap = observer::look(self.home, &self.tmux)?;
        // Crash leftovers first: an orphaned agent stopped, an interrupted spawn adopted.
        // The open tasks, read once for the whole pass (again only if a repair changed
        // some). A damaged task file must not blind the monitor to every other task: it
        // is counted (the widgets show it) and skipped here.
        let (mut open, mut unreadable) = self.tasks.store.list_open_lenient();
        let active: std::collections::HashSet<(String, String)> = open
            .iter()
            .filter(|t| t.status.is_active())
            .map(|t| (t.project.clone(), t.id.clone()))
            .collect();
        match crate::orchestration::reconcile::reconcile_seen(
            self.home,
            &self.tmux,
            snap.marked(),
            true,
            &active,
        ) {
            Ok(repairs) => {
                if !repairs.is_empty() {
                    // Sessions were stopped or adopted: look again.
                    snap = observer::look(self.home, &self.tmux)?;
                    (open, unreadable) = self.tasks.store.list_open_lenient();
                }
                report.actions.extend(
                    repairs
                        .iter()
                        .map(|r| json!({"action": "reconciled", "repair": r})),
                );
                for next in self.tasks.after_repairs(&repairs) {
                    if let Some(id) = next.spawned {
                        report.actions.push(json!({"task": id, "action": "spawned", "reason": "a repair freed a workspace"}));
                    }
                }
            }
            Err(e) => store::log(
                self.home,
                "warn",
                "reconcile failed",
                json!({"error": e.to_string(), "code": e.code()}),
            ),
        }
        if self.server.is_none() {
            self.server = snap.server_id.clone();
        }
        // What sandboxed agents asked of their tasks (they cannot write orange's state).
        if self.apply_requests(&open, &mut report) {
            (open, unreadable) = self.tasks.store.list_open_lenient();
        }
        let panes = std::mem::take(&mut snap.panes);
        let now = chrono::Utc::now();
        self.workspaces = crate::execution::pool::list(self.home, None)?
            .into_iter()
            .map(|w| (w.name, w.path))
            .collect();
        // Observe every agent; the screens that must be read are read together, in one
        // tmux process for the whole pass.
        let mut observed = Vec::new();
        for task in open.iter().cloned() {
            if !task.status.is_active() || task.tmux_session_id.is_none() {
                continue;
            }
            // Its session lives on another tmux server (or on one that is gone): not ours
            // to judge. (`orange restore` restarts tasks of a server that is gone.)
            if task.tmux_server.is_some() && task.tmux_server != self.server {
                continue;
            }
            report.checked += 1;
            let task = self.learn_first_prompt(task, &mut report);
            let dir = self.tasks.store.dir(&task.project, &task.id);
            // Taken before looking: a hook that comes while this pass looks is newer.
            let stamp = now_s();
            let info = agent::load(&dir);
            let policy = Resolved::of(&self.config, &task);
            let seen = self.observe(&task, &info, &panes, now, policy.idle_grace);
            // Token use: only what its transcripts gained since the last pass is read.
            if let (Some(conv), Some(ws)) = (&task.agent_session_id, self.workspace_path(&task)) {
                if let Err(e) = crate::orchestration::usage::update(&dir, &ws, conv) {
                    store::log(
                        self.home,
                        "warn",
                        "token use not updated",
                        json!({"task": task.id, "error": e.to_string(), "code": e.code()}),
                    );
                }
            }
            observed.push((task, info, stamp, policy, seen));
        }
        let looks: Vec<&str> = observed
            .iter()
            .filter_map(|o| o.4.look.as_deref())
            .collect();
        let mut screens = self
            .tmux
            .capture_panes(&looks)
            .unwrap_or_default()
            .into_iter();
        let mut observed_with_screens = Vec::new();
        for (task, info, stamp, policy, mut seen) in observed {
            if seen.look.is_some() {
                if let Some(s) = screens
                    .next()
                    .flatten()
                    .and_then(|text| self.rules_of(&task.harness).classify(&text))
                {
                    seen.apply(s);
                }
            }
            observed_with_screens.push((task, info, stamp, policy, seen));
        }
        let mut agents = std::collections::HashMap::new();
        for (task, info, stamp, policy, seen) in observed_with_screens {
            match self.check(&task, info, stamp, &policy, seen, now, &mut report) {
                Ok(Some(info)) => {
                    agents.insert((task.project.clone(), task.id.clone()), info);
                }
                Ok(None) => {}
                Err(e) => report.actions.push(json!({"task": task.id, "action": "error", "error": e.to_string(), "code": e.code()})),
            }
        }
        snap.panes = panes;
        // The tasks as this pass read them, but those its policies acted on read again.
        let acted: std::collections::HashSet<&str> = report
            .actions
            .iter()
            .filter_map(|a| a.get("task").and_then(|t| t.as_str()))
            .collect();
        let open: Vec<Task> = open
            .into_iter()
            .filter_map(|t| {
                if !acted.contains(t.id.as_str()) {
                    return Some(t);
                }
                agents.remove(&(t.project.clone(), t.id.clone()));
                self.tasks
                    .store
                    .load(&t.project, &t.id)
                    .ok()
                    .filter(|t| !t.status.is_final())
            })
            .collect();
        observer::summarize_tasks(self.home, &mut snap, &open, unreadable, &agents);
        report.snapshot = Some(snap);
        Ok(report)
    }

    /// A task started without a prompt: the first prompt typed into its agent, when the
    /// agent wrote it down itself (the hook that should have told it may have failed or not
    /// run), becomes its summary. The task as it is now.
    fn learn_first_prompt(&mut self, task: Task, report: &mut PassReport) -> Task {
        if !task.awaiting_prompt {
            return task;
        }
        let Some(text) = self
            .workspace_path(&task)
            .and_then(|ws| prompt::in_transcript(&task, &ws))
        else {
            return task;
        };
        match prompt::adopt(&self.tasks.store, &task, &text, "transcript") {
            Ok(Some(t)) => {
                report
                    .actions
                    .push(json!({"task": t.id, "action": "first_prompt", "via": "transcript"}));
                t
            }
            Ok(None) => task,
            Err(e) => {
                report.actions.push(json!({"task": task.id, "action": "error", "error": e.to_string(), "code": e.code()}));
                task
            }
        }
    }

    /// Carry out the requests sandboxed agents queued (`task complete`, `stuck`,
    /// `update`); true when a task changed.
    fn apply_requests(&mut self, open: &[Task], report: &mut PassReport) -> bool {
        let mut changed = false;
        for task in open.iter().filter(|t| t.sandbox != sandbox::Kind::None) {
            let dir = self.tasks.store.dir(&task.project, &task.id);
            for req in sandbox::take_requests(&dir) {
                let done = self.apply_request(task, &req);
                changed |= done.is_ok();
                report.actions.push(match done {
                    Ok(t) => json!({"task": task.id, "action": "request", "op": req.op, "status": t.status}),
                    Err(e) => json!({"task": task.id, "action": "request", "op": req.op, "error": e.to_string(), "code": e.code()}),
                });
            }
            sandbox::requests_done(&dir);
        }
        changed
    }

    fn apply_request(&mut self, task: &Task, req: &sandbox::Request) -> Result<Task> {
        let via = "sandbox";
        let mut t = self.tasks.store.load(&task.project, &task.id)?;
        match req.op.as_str() {
            "complete" => t = self.tasks.set_status(&t, Status::Reviewing, via)?,
            "stuck" => t = self.tasks.set_status(&t, Status::Stuck, via)?,
            // Its hook heard the first prompt typed into an agent started without one.
            "prompt" => {
                if let Some(p) = &req.summary {
                    if let Some(adopted) = prompt::adopt(&self.tasks.store, &t, p, "hook")? {
                        t = adopted;
                    }
                }
            }
            "update" => {
                if let Some(s) = &req.summary {
                    t = self.tasks.set_summary(&t, s)?;
                }
                if let Some(s) = &req.status {
                    t = self.tasks.set_status(&t, Status::parse(s)?, via)?;
                }
            }
            other => {
                return Err(crate::error::OrangeError::invalid(format!(
                    "unknown request {other:?}"
                )))
            }
        }
        Ok(t)
    }

    fn observe(
        &self,
        task: &Task,
        info: &AgentInfo,
        panes: &[PaneInfo],
        now: chrono::DateTime<chrono::Utc>,
        grace: Duration,
    ) -> Seen {
        let sid = task.tmux_session_id.as_deref().unwrap_or("");
        let Some(pane) = crate::orchestration::lifecycle::agent_pane(task, panes) else {
            return Seen {
                state: Some(State::Dead),
                signal: Some(Signal::Pane),
                death: Some(format!("gone:{sid}")),
                ..Seen::default()
            };
        };
        if pane.pane_dead {
            let death = format!("{sid}:{}", pane.pane_pid);
            let mut seen = Seen {
                state: Some(State::Dead),
                signal: Some(Signal::Pane),
                exit: pane.exit(),
                pane: Some((pane.pane_id.clone(), pane.pane_pid)),
                ..Seen::default()
            };
            // Its last words, once per death: the reason is usually a line that scrolled
            // off the visible screen. tmux may mark a pane dead before it has drained what
            // the program wrote last: an empty read is tried again (briefly, and on the
            // next pass too while none was kept).
            let new_death = info.handled_death.as_deref() != Some(death.as_str());
            let words_late = info.last_lines.is_empty() && age(&info.since, now) < LATE_WORDS;
            if new_death || words_late {
                let attempts = if new_death { 4 } else { 1 };
                for attempt in 0..attempts {
                    if attempt > 0 {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    if let Ok(text) = self.tmux.capture_pane(&pane.pane_id, DEATH_SCROLLBACK) {
                        seen.last_lines = screen::last_lines(&text, LAST_LINES);
                    }
                    if !seen.last_lines.is_empty() {
                        break;
                    }
                }
                if let Some(screen::Screen::Blocked(b, line)) = self
                    .rules_of(&task.harness)
                    .classify(&seen.last_lines.join("\n"))
                {
                    seen.blocker = Some((b, line));
                }
            }
            // Under a sandbox, "not found" (sh's 127, bwrap's execvp) is almost always what
            // the sandbox hides (/tmp, /run): no crash, what to do instead.
            if seen.blocker.is_none() && task.sandbox != crate::execution::sandbox::Kind::None {
                let execvp = seen
                    .last_lines
                    .iter()
                    .find(|l| l.contains("bwrap: execvp"))
                    .cloned();
                if execvp.is_some() || seen.exit == Some(PaneExit::Status(127)) {
                    let line = execvp
                        .or_else(|| seen.last_lines.last().cloned())
                        .unwrap_or_default();
                    seen.blocker = Some((agent::Blocker::NotInSandbox, line));
                }
            }
            seen.death = Some(death);
            return seen;
        }
        // Claude's log, when we know its name.
        // `log_len`: where the log's last line that says something ends (bookkeeping
        // lines after it, such as one per retry attempt, are not progress).
        let mut log_len = None;
        let mut log_at = None;
        let mut from_log = None;
        if let (Some(conv), Some(ws)) = (&task.agent_session_id, self.workspace_path(task)) {
            if let Some((tail, start)) = agent::read_log_tail(&agent::claude_log_path(&ws, conv)) {
                log_len = Some(start + tail.len() as u64);
                if let Some((state, end)) = agent::state_of_log_at(&tail) {
                    log_len = Some(start + end as u64);
                    log_at = tail[..end].lines().last().and_then(agent::line_time);
                    from_log = Some(state);
                }
            }
        }
        let log_grew = log_len.is_some() && log_len != info.log_len;
        let mut seen = Seen {
            log_len,
            progress: log_grew && matches!(from_log, Some(LogState::Working { tool: true })),
            ..Seen::default()
        };
        // Hooks are the best signal, unless the log has news after them (an error).
        // Hooks are the best signal, unless the log has news after them: an error (no
        // hook may tell it), or a line written after the last hook (a hook can be lost or
        // late: the turn ended in the transcript while the last hook said working).
        // An error line without a time (no such line from Claude Code 2.1) counts as news.
        let log_is_newer = match (&log_at, &info.hook_at) {
            (Some(l), Some(h)) => agent::after(l, h),
            (None, _) => matches!(from_log, Some(LogState::Error(..))),
            _ => false,
        };
        match (info.hook_state, from_log) {
            (Some(h), from_log) if !log_is_newer => {
                seen.state = Some(h);
                seen.signal = Some(Signal::Hook);
                seen.blocker = info
                    .hook_blocker
                    .map(|b| (b, info.hook_detail.clone().unwrap_or_default()));
                if h == State::Error {
                    seen.error = Some((
                        info.hook_error.unwrap_or(agent::ErrorKind::Other),
                        info.hook_detail.clone().unwrap_or_default(),
                    ));
                }
                if h == State::Waiting {
                    seen.asked = match from_log {
                        Some(LogState::Waiting { question }) => question,
                        _ => None,
                    }
                    .or_else(|| info.hook_detail.clone());
                }
            }
            (_, Some(LogState::Working { .. })) => {
                seen.state = Some(State::Working);
                seen.signal = Some(Signal::Log);
            }
            (_, Some(LogState::Waiting { question })) => {
                seen.state = Some(State::Waiting);
                seen.signal = Some(Signal::Log);
                seen.asked = question;
            }
            (_, Some(LogState::Error(k, m))) => {
                seen.state = Some(State::Error);
                seen.signal = Some(Signal::Log);
                seen.error = Some((k, m));
            }
            (_, None) => {
                // Screen activity: quiet for longer than the grace → waiting (debounced).
                let quiet = now
                    .timestamp()
                    .saturating_sub(pane.window_activity as i64)
                    .max(0) as u64;
                let state = if Duration::from_secs(quiet) >= grace {
                    State::Waiting
                } else {
                    State::Working
                };
                seen.since = (state == State::Waiting)
                    .then(|| chrono::DateTime::from_timestamp(pane.window_activity as i64, 0))
                    .flatten()
                    .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
                seen.state = Some(state);
                seen.signal = Some(Signal::Screen);
            }
        }
        let stalled = seen.state == Some(State::Working) && !log_grew;
        // Working by the transcript but idle by claude's own account: a turn cut short
        // (Esc while the request waited) that no hook and no transcript line tells.
        if stalled
            && seen.signal != Some(Signal::Screen)
            && task.harness == "claude"
            && claude_says(task, pane.pane_pid, &self.tasks.store).as_deref() == Some("idle")
        {
            seen.state = Some(State::Waiting);
        }
        // A claude that works: a retry shows only on its screen (and at once); before its
        // first hook: the first-run screens; blocked or retrying: to see that end.
        let was_stuck = matches!(info.state, Some(State::Blocked | State::Retrying));
        let busy = seen.state == Some(State::Working);
        if task.harness == "claude" && (info.hook_state.is_none() || busy || was_stuck) {
            seen.look = Some(pane.pane_id.clone());
        }
        // Another harness whose screen config.toml (or orange) tells how to read: every
        // pass (all screens in one tmux call).
        if task.harness != "claude" && !self.rules_of(&task.harness).is_empty() {
            seen.look = Some(pane.pane_id.clone());
        }
        seen
    }

    /// What the agent's screen shows (one `capture-pane` of its visible screen).
    fn look(&self, task: &Task, pane: &str) -> Option<screen::Screen> {
        let text = self.tmux.capture_pane(pane, 0).ok()?;
        self.rules_of(&task.harness).classify(&text)
    }

    /// The screen rules of a harness (none for one config.toml no longer names).
    fn rules_of(&self, harness: &str) -> &screen::Rules {
        self.rules
            .get(harness)
            .unwrap_or_else(|| screen::Rules::builtin(harness))
    }

    fn workspace_path(&self, task: &Task) -> Option<std::path::PathBuf> {
        task.workspace
            .as_ref()
            .and_then(|w| self.workspaces.get(w))
            .cloned()
    }

    /// Whether the task is still as this pass read it: the same status and session. A
    /// command may have changed it meanwhile (a respawn kills the dead session, starts a
    /// new one and resets what orange knows of its agent): a pass that judged the old
    /// session's absence with the new agent's record counted the respawn as a second
    /// crash and made the task stuck (seen under load in real_claude's kill test). Read
    /// under the project's lock; while a command holds it, the task waits for the next
    /// pass (the command's save pokes the monitor).
    fn still_as_observed(&self, task: &Task) -> bool {
        let Ok(Some(_lock)) = self.tasks.store.try_lock(&task.project) else {
            return false;
        };
        self.tasks
            .store
            .load(&task.project, &task.id)
            .is_ok_and(|now| {
                now.status == task.status && now.tmux_session_id == task.tmux_session_id
            })
    }

    /// Record what was seen of one agent and apply its task's policies.
    #[allow(clippy::too_many_arguments)]
    fn check(
        &mut self,
        task: &Task,
        mut info: AgentInfo,
        stamp: String,
        policy: &Resolved,
        seen: Seen,
        now: chrono::DateTime<chrono::Utc>,
        report: &mut PassReport,
    ) -> Result<Option<AgentInfo>> {
        crate::adapters::fault::pause("monitor.observed");
        if !self.still_as_observed(task) {
            return Ok(None);
        }
        let dir = self.tasks.store.dir(&task.project, &task.id);
        let before = info.clone();
        let state = seen.state.unwrap_or(State::Unknown);
        self.respawned = false;
        let blocker = seen.blocker.as_ref().map(|(b, _)| *b);
        let log_grew = seen.log_len.is_some() && seen.log_len != info.log_len;
        if info.state != Some(state) || (state == State::Blocked && info.blocker != blocker) {
            info.since = seen.since.clone().unwrap_or_else(|| stamp.clone());
            // An escalation belongs to the state it was raised in (a dialog, an error, an
            // idle period): the agent moved on. A death's stays until a respawn.
            if state != State::Dead {
                info.escalated = None;
            }
        } else if state == State::Waiting {
            // Still waiting, but it did something in between that no pass saw (answered a
            // nudge, printed): a new idle period begins.
            let newer = |t: &str| agent::after(t, &info.since);
            let began = match seen.signal {
                Some(Signal::Hook) => info.hook_at.clone().filter(|t| newer(t)),
                Some(Signal::Screen) => seen.since.clone().filter(|t| newer(t)),
                _ if log_grew => Some(stamp.clone()),
                _ => None,
            };
            if let Some(t) = began {
                info.since = t;
            }
        }
        if seen.progress {
            info.progress_at = Some(stamp.clone());
            info.idle_nudges = 0;
        }
        info.state = Some(state);
        info.signal = seen.signal;
        info.at = stamp.clone();
        info.log_len = seen.log_len;
        info.exit_status = match seen.exit {
            Some(PaneExit::Status(c)) => Some(c),
            _ => None,
        };
        info.error_kind = seen.error.as_ref().map(|(k, _)| *k);
        info.asked = seen.asked.clone().filter(|_| state == State::Waiting);
        if state != State::Dead {
            info.blocker = blocker;
            info.last_lines.clear();
        } else if seen.death.as_deref() != info.handled_death.as_deref()
            || (info.last_lines.is_empty() && !seen.last_lines.is_empty())
        {
            // A new death (or its words read late): its own last words and reason, kept
            // while it stays dead.
            info.blocker = blocker;
            info.last_lines = seen.last_lines.clone();
        }
        info.detail = match state {
            State::Error => seen.error.as_ref().map(|(_, m)| m.clone()),
            State::Blocked => seen.blocker.as_ref().map(|(b, line)| {
                let advice = b.advice(&task.id);
                if line.is_empty() {
                    advice
                } else {
                    format!("{line} — {advice}")
                }
            }),
            State::Retrying => seen
                .retry
                .as_ref()
                .map(|r| format!("retrying an API error by itself ({r})")),
            State::Waiting => info.asked.as_ref().map(|q| format!("asked: {q}")),
            State::Dead => Some(death_detail(seen.exit, &info, &task.id)),
            _ => None,
        };
        report.states.push(
            json!({"task": task.id, "state": state, "signal": seen.signal, "detail": info.detail}),
        );

        match state {
            State::Waiting => {
                let idle = age(&info.since, now);
                let period = info.since.clone();
                if idle >= policy.idle_grace
                    && !log_grew
                    && info.nudged_for.as_deref() != Some(period.as_str())
                {
                    info.nudged_for = Some(period);
                    self.on_idle(task, policy, &mut info, report)?;
                }
            }
            State::Dead => {
                let death = seen.death.clone().unwrap_or_default();
                if info.handled_death.as_deref() != Some(death.as_str()) {
                    // The session went after its agent died: the same death, told again.
                    let sid = task.tmux_session_id.as_deref().unwrap_or("");
                    let same_agent = death.starts_with("gone:")
                        && info
                            .handled_death
                            .as_deref()
                            .is_some_and(|d| d.starts_with(&format!("{sid}:")));
                    self.record_death(task, &seen, &info)?;
                    info.handled_death = Some(death);
                    agent::save_observation(&dir, &info, &before)?;
                    if !same_agent {
                        self.on_exit(task, policy, &mut info, report)?;
                    }
                }
            }
            State::Error | State::Blocked => {
                if info.handled_error.as_deref() != Some(info.since.as_str()) {
                    info.handled_error = Some(info.since.clone());
                    if state == State::Blocked {
                        let b = info.blocker.map(|b| b.as_str()).unwrap_or("dialog");
                        self.tasks.store.append_history(
                            task,
                            "agent.blocked",
                            json!({"blocker": b, "detail": info.detail}),
                        )?;
                        let why = format!(
                            "blocked ({})",
                            info.blocker.map(|b| b.label()).unwrap_or("dialog")
                        );
                        self.escalate(task, &why, &mut info, report)?;
                    } else {
                        let kind = info.error_kind.map(|k| k.as_str()).unwrap_or("other");
                        let action = policy.on_error(kind);
                        self.tasks.store.append_history(
                            task,
                            "agent.error",
                            json!({"kind": kind, "detail": info.detail}),
                        )?;
                        self.act(
                            task,
                            &action,
                            &format!("agent error ({kind})"),
                            &mut info,
                            report,
                        )?;
                    }
                }
            }
            State::Working | State::Retrying | State::Unknown => {}
        }
        // A respawn (the recover policy) started a new agent with a fresh agent.json.
        // Nothing new (only the time of this look): no write, no fsync. The observation
        // is still rewritten when the task changed since it was made (readers trust only
        // an observation made after the task's last change) or a hook came since (its
        // state was weighed against the log in this pass).
        let mut unchanged = info.clone();
        unchanged.at = before.at.clone();
        let older_than_task = !agent::at_or_after(&before.at, &task.updated_at);
        let hook_since = before
            .hook_at
            .as_deref()
            .is_some_and(|h| agent::at_or_after(h, &before.at));
        if (unchanged != before || older_than_task || hook_since) && !self.respawned {
            agent::save_observation(&dir, &info, &before)?;
        }
        // What the summary of this pass uses (none after a respawn: its file is new).
        Ok((!self.respawned).then_some(info))
    }

    /// An idle agent: nudge it only when that cannot harm it — its task is in `working`
    /// status, no dialog or approval prompt is on its screen, it did not end its turn on a
    /// question, and it made progress since the last nudges (else escalate).
    fn on_idle(
        &mut self,
        task: &Task,
        policy: &Resolved,
        info: &mut AgentInfo,
        report: &mut PassReport,
    ) -> Result<()> {
        let current = self.tasks.store.load(&task.project, &task.id)?;
        if current.status != Status::Working {
            report.actions.push(json!({"task": task.id, "action": "none", "reason": format!("idle; task is {} (only working tasks are nudged)", current.status)}));
            return Ok(());
        }
        // Started without a prompt, and none typed yet: it waits for its person, who knows
        // (they started it so). No nudge (it would be the agent's first task), no escalation.
        if current.awaiting_prompt {
            report.actions.push(json!({"task": task.id, "action": "none", "reason": "waiting for its first prompt (started without one)"}));
            return Ok(());
        }
        // Idle since it started, before its first turn: a claude still starting up (its
        // prompt not submitted yet), or one started without a prompt. Nothing to continue.
        if info.hook_state == Some(State::Waiting)
            && info.hook_event.as_deref() == Some("SessionStart")
        {
            report.actions.push(json!({"task": task.id, "action": "none", "reason": "idle since it started (no turn yet)"}));
            return Ok(());
        }
        // A claude that has not said a word yet (no hook since it started): still starting
        // up, under load for seconds; its quiet screen is no idleness. Seen in CI: the
        // nudge went in a second after the spawn, just before the first turn's approval
        // prompt. Past STARTUP_GRACE without a hook, its screen decides again.
        if task.harness == "claude"
            && info.hook_state.is_none()
            && age(&info.since, chrono::Utc::now()) < STARTUP_GRACE
        {
            report.actions.push(json!({"task": task.id, "action": "none", "reason": "idle since it started (no hook yet)"}));
            // Not this idle period's one decision: looked at again by the next pass.
            info.nudged_for = None;
            return Ok(());
        }
        let action = policy.on_idle.clone();
        if action.name() == "nudge" {
            if let Some(pane) = task.tmux_pane_id.as_deref() {
                if let Some(screen::Screen::Blocked(b, line)) = self.look(task, pane) {
                    info.state = Some(State::Blocked);
                    info.blocker = Some(b);
                    info.since = now_s();
                    info.handled_error = Some(info.since.clone());
                    info.detail = Some(format!("{line} — {}", b.advice(&task.id)));
                    let why = format!("blocked ({})", b.label());
                    return self.escalate(task, &why, info, report);
                }
            }
            if let Some(q) = info.asked.clone() {
                return self.escalate(task, &format!("the agent asks: {q}"), info, report);
            }
            if info.idle_nudges >= policy.max_nudges {
                let why = format!(
                    "idle again after {} nudge(s) without progress",
                    info.idle_nudges
                );
                return self.escalate(task, &why, info, report);
            }
        }
        self.act(task, &action, "idle", info, report)
    }

    fn on_exit(
        &mut self,
        task: &Task,
        policy: &Resolved,
        info: &mut AgentInfo,
        report: &mut PassReport,
    ) -> Result<()> {
        let current = self.tasks.store.load(&task.project, &task.id)?;
        if !current.status.is_active() {
            report.actions.push(json!({"task": task.id, "action": "none", "reason": format!("exited; the task is {} now", current.status)}));
            return Ok(());
        }
        let reported = self.outcome(&current).is_some()
            || matches!(
                current.status,
                Status::Reviewing | Status::Stuck | Status::AgentReview
            );
        let how = info.detail.clone().unwrap_or_else(|| "exited".into());
        if reported {
            report.actions.push(
                json!({"task": task.id, "action": "none", "reason": "exited with an outcome"}),
            );
            return Ok(());
        }
        // It cannot start until the person acts (claude as root): no crash to count, no
        // respawn that would fail the same way.
        if let Some(b) = info.blocker.filter(|b| *b != agent::Blocker::Approval) {
            let why = format!("{} — {}", b.label(), b.advice(&task.id));
            return self.escalate(task, &why, info, report);
        }
        // A crash: the agent ended without reporting complete or stuck.
        let crashes = self.tasks.record_crash(&current, &how)?;
        if crashes >= CRASH_LIMIT {
            let t = self.tasks.store.load(&task.project, &task.id)?;
            if t.status.can_become(Status::Stuck) {
                self.tasks
                    .set_status(&t, Status::Stuck, "monitor: crashed twice")?;
            }
            self.escalate(
                task,
                &format!("crashed {crashes} times; task is stuck"),
                info,
                report,
            )?;
            return Ok(());
        }
        let action = policy.on_exit.clone();
        self.act(
            task,
            &action,
            &format!("agent {how} without an outcome (crash {crashes})"),
            info,
            report,
        )
    }

    /// What the agent reported in `.orange-outcome`, if it did.
    fn outcome(&self, task: &Task) -> Option<String> {
        self.workspace_path(task)
            .map(|w| w.join(".orange-outcome"))
            .and_then(|p| store::read_regular(&p, 4096).ok())
            .map(|b| String::from_utf8_lossy(&b).trim().to_string())
    }

    /// THE record of a death in the task's history (nothing else writes these): an
    /// `agent.exited` when its pane is dead (with `exit_status` or `exit_signal`, the pane
    /// and its pid), a `session.closed` when its session is gone; with the session's name
    /// and id, what the agent said last (`detail`), its outcome or what blocked it, and
    /// `via` (what noticed it). Written once per death, even if a pass is cut short between
    /// writing it and saving the agent's state.
    fn record_death(&self, task: &Task, seen: &Seen, info: &AgentInfo) -> Result<()> {
        let event = if seen.pane.is_some() {
            "agent.exited"
        } else {
            "session.closed"
        };
        let mut data = json!({
            "tmux_session": task.tmux_session,
            "tmux_session_id": task.tmux_session_id,
        });
        if let Some((pane_id, pid)) = &seen.pane {
            data["pane_id"] = pane_id.clone().into();
            data["pane_pid"] = (*pid).into();
        }
        match seen.exit {
            Some(PaneExit::Status(c)) => data["exit_status"] = c.into(),
            Some(PaneExit::Signal(sig)) => data["exit_signal"] = sig.into(),
            None => {}
        }
        let same = |e: &crate::orchestration::task::Event| {
            e.event == event
                && e.data.get("tmux_session_id") == data.get("tmux_session_id")
                && e.data.get("pane_pid") == data.get("pane_pid")
        };
        if self
            .tasks
            .store
            .history(&task.project, &task.id)
            .iter()
            .any(same)
        {
            return Ok(());
        }
        if let Some(d) = &info.detail {
            data["detail"] = d.clone().into();
        }
        if let Some(o) = self.outcome(task) {
            data["outcome"] = o.into();
        }
        if let Some(b) = info.blocker {
            data["blocker"] = b.as_str().into();
        }
        data["via"] = self.via.clone().into();
        self.tasks.store.append_history(task, event, data)
    }

    /// Carry out a policy action.
    fn act(
        &mut self,
        task: &Task,
        action: &Action,
        why: &str,
        info: &mut AgentInfo,
        report: &mut PassReport,
    ) -> Result<()> {
        // Keystrokes and respawns only for a task in `working` status.
        if matches!(action.name(), "nudge" | "recover") {
            let status = self.tasks.store.load(&task.project, &task.id)?.status;
            if status != Status::Working {
                report.actions.push(json!({"task": task.id, "action": "none", "reason": format!("{why}; task is {status} (the monitor acts only on working tasks)")}));
                return Ok(());
            }
        }
        match action.name() {
            "nudge" => {
                let harness =
                    crate::execution::harness::Harness::named(&task.harness, &self.config)?;
                let msg = action
                    .message()
                    .or(harness.nudge_message.as_deref())
                    .unwrap_or(DEFAULT_NUDGE);
                // The agent's own pane (a sidebar may be the active one), else the session.
                let target = match &task.tmux_pane_id {
                    Some(p) => p.clone(),
                    None => self.tasks.session_target(task)?,
                };
                // A last look just before typing: a dialog that came up since the pass
                // looked (an approval drawn a moment after the agent went quiet) must never
                // get the keystrokes. The next pass sees it and reports it.
                crate::adapters::fault::pause("monitor.nudging");
                if let Some(screen::Screen::Blocked(b, line)) = self.look(task, &target) {
                    report.actions.push(json!({"task": task.id, "action": "none", "reason": format!("{why}; not nudged: {} on screen ({line})", b.as_str())}));
                    return Ok(());
                }
                let keys: Vec<&str> = harness.nudge_keys.iter().map(String::as_str).collect();
                self.tmux
                    .send_text_then(&target, msg, &keys, &harness.nudge_submit)?;
                info.nudges += 1;
                info.idle_nudges += 1;
                self.tasks.store.append_history(
                    task,
                    "agent.nudged",
                    json!({"reason": why, "message": msg}),
                )?;
                report
                    .actions
                    .push(json!({"task": task.id, "action": "nudge", "reason": why}));
            }
            "recover" => {
                let msg = action
                    .message()
                    .unwrap_or("Your previous session ended. Continue the task.")
                    .to_string();
                let rec = if action.mode() == Some("prompt") {
                    Recovery::Prompt(msg)
                } else {
                    Recovery::Append(msg)
                };
                self.tasks
                    .respawn_with(&task.id, Some(&task.project), Some(rec))?;
                self.respawned = true;
                report
                    .actions
                    .push(json!({"task": task.id, "action": "recover", "reason": why}));
            }
            "done" => {
                let t = self.tasks.store.load(&task.project, &task.id)?;
                if t.status.can_become(Status::Reviewing) {
                    self.tasks
                        .set_status(&t, Status::Reviewing, "monitor: policy done")?;
                }
                report
                    .actions
                    .push(json!({"task": task.id, "action": "done", "reason": why}));
            }
            "ignore" | "none" => {
                report
                    .actions
                    .push(json!({"task": task.id, "action": "none", "reason": why}));
            }
            _ => self.escalate(task, why, info, report)?,
        }
        Ok(())
    }

    /// Visible in the status line and sidebar, a history event, the bell in the task's
    /// window; no further automatic action.
    fn escalate(
        &mut self,
        task: &Task,
        why: &str,
        info: &mut AgentInfo,
        report: &mut PassReport,
    ) -> Result<()> {
        // Under the task's lock, as it is now: a task cancelled or merged since this pass
        // began is never escalated.
        {
            let _lock = self.tasks.store.lock(&task.project)?;
            let now = self.tasks.store.load(&task.project, &task.id)?;
            if !now.status.is_active() {
                report.actions.push(json!({"task": task.id, "action": "none", "reason": format!("{why}; the task is {} now", now.status)}));
                return Ok(());
            }
            info.escalated = Some(Escalation {
                reason: why.to_string(),
                at: now_s(),
            });
            self.tasks
                .store
                .append_history(task, "agent.escalated", json!({"reason": why}))?;
        }
        if let Ok(target) = self.tasks.session_target(task) {
            let _ = self.tmux.ring_bell(&target);
        }
        report
            .actions
            .push(json!({"task": task.id, "action": "escalate", "reason": why}));
        Ok(())
    }
}

/// A dead agent's detail: how it ended, and its last line (the reason is usually there).
/// What a running claude says of itself (`idle`, `busy`, `waiting`): by its pid, or in a
/// sandbox from its task's own `claude-sessions/`.
fn claude_says(
    task: &Task,
    pane_pid: u32,
    store: &crate::orchestration::task::TaskStore,
) -> Option<String> {
    if task.sandbox == sandbox::Kind::None {
        agent::claude_session_status(pane_pid)
    } else {
        agent::claude_session_status_in(&sandbox::claude_sessions(
            &store.dir(&task.project, &task.id),
        ))
    }
}

fn death_detail(exit: Option<PaneExit>, info: &AgentInfo, task: &str) -> String {
    let how = match exit {
        Some(PaneExit::Signal(s)) => format!("killed by signal {s}"),
        Some(PaneExit::Status(c)) => format!("exited with status {c}"),
        None => "session gone".into(),
    };
    match (info.blocker, info.last_lines.last()) {
        // What was not found, in the program's words (a pane line: printers make it safe).
        (Some(b @ agent::Blocker::NotInSandbox), Some(line)) => {
            format!("{how} ({}): {}", line.trim(), b.advice(task))
        }
        (Some(b), _) => format!("{how}: {}", b.advice(task)),
        (None, Some(line)) => format!("{how}: {}", line.trim()),
        (None, None) => how,
    }
}

/// An agent hook (`orange hook agent EVENT`, Claude Code's settings hooks): route it by
/// `$ORANGE_TASK_ID` (else by the cwd's workspace), ignore sub-agents' events, record the
/// state; a UserPromptSubmit's `prompt` is the first prompt of a task waiting for one
/// ([`prompt::from_hook`]). `payload` is the hook's JSON from standard input (may be empty).
pub fn agent_hook(
    home: &Home,
    event: &str,
    payload: &str,
    cwd: &Path,
) -> Result<serde_json::Value> {
    let tasks = Tasks::new(home);
    let task = tasks.infer(cwd)?;
    let payload: serde_json::Value =
        serde_json::from_str(payload).unwrap_or(serde_json::Value::Null);
    let Some(says) = agent::state_of_hook(event, &payload) else {
        return Ok(
            json!({"task": task.id, "event": event, "ignored": "event says nothing about the agent's turn"}),
        );
    };
    // A nested agent runs its hooks with its own session id: it must not flip its parent.
    if let (Some(mine), Some(theirs)) = (
        task.agent_session_id.as_deref(),
        payload.get("session_id").and_then(|s| s.as_str()),
    ) {
        if mine != theirs {
            return Ok(
                json!({"task": task.id, "event": event, "ignored": "a different (nested) agent session"}),
            );
        }
    }
    let dir = tasks.store.dir(&task.project, &task.id);
    // The first prompt typed into an agent started without one becomes the summary: before
    // the state is written (a summary change makes older observations stale).
    let mut first_prompt = serde_json::Value::Null;
    if event == "UserPromptSubmit" && task.awaiting_prompt {
        if let Some(typed) = payload.get("prompt").and_then(|p| p.as_str()) {
            first_prompt = match prompt::from_hook(home, &task, typed) {
                Ok(v) => v,
                Err(e) => {
                    store::log(
                        home,
                        "warn",
                        "first prompt not recorded",
                        json!({"task": task.id, "error": e.to_string(), "code": e.code()}),
                    );
                    json!({"error": e.to_string()})
                }
            };
        }
    }
    let _lock = agent::lock(&dir)?;
    let mut info = agent::load(&dir);
    // Claude's reminder a minute after a turn ended (`idle_prompt`) is no new idle period.
    if event == "Notification"
        && says.state == State::Waiting
        && info.hook_state == Some(State::Waiting)
    {
        return Ok(json!({"task": task.id, "event": event, "ignored": "already waiting"}));
    }
    let at = now_s();
    info.hook_state = Some(says.state);
    info.hook_at = Some(at.clone());
    info.hook_event = Some(event.to_string());
    info.hook_blocker = says.blocker;
    info.hook_error = says.error;
    info.hook_detail = says.detail.clone();
    if says.progress {
        info.progress_at = Some(at);
        info.idle_nudges = 0;
    }
    agent::save(&dir, &info)?;
    Ok(
        json!({"task": task.id, "event": event, "state": says.state, "blocker": says.blocker, "error": says.error, "detail": says.detail, "first_prompt": first_prompt}),
    )
}

/// The lock that makes `orange monitor` one per tmux server instance and ORANGE_HOME
/// (`run/monitor-<socket>-<pid>-<start>.lock`, its identity beside it in `.json`): a new
/// server on the same socket gets its own monitor while the old one notices its server is
/// gone and exits.
pub fn singleton(
    home: &Home,
    server: &crate::adapters::tmux::ServerId,
) -> Result<Option<LockGuard>> {
    let socket = observer::file_key(&server.socket);
    let key = format!("{socket}-{}-{}", server.pid, server.start_time);
    let path = home.root.join("run").join(format!("monitor-{key}.lock"));
    match LockGuard::acquire_within(&path, Duration::from_millis(0)) {
        Ok(g) => {
            let _ = store::write_json_atomic(
                &path.with_extension("json"),
                &json!({"pid": std::process::id(), "server": server}),
            );
            Ok(Some(g))
        }
        Err(OrangeError::LockTimeout { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}
