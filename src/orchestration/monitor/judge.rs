//! What state one agent is in, from the best signal (hook or status report, whichever is
//! newer > Claude log > pane > screen):
//! [`Monitor::judge`] weighs what the pass saw into a [`Seen`], and [`record`] writes that
//! verdict into the agent's record (`agent.json`) before the policies act ([`super::act`]).

use std::time::Duration;

use crate::adapters::tmux::{PaneExit, PaneInfo};
use crate::execution::harness::{osc, AgentKind};
use crate::execution::sandbox;
use crate::orchestration::agent::{self, AgentInfo, HookSays, LogState, Signal, State};
use crate::orchestration::attention::session::Panes;
use crate::orchestration::screen;
use crate::orchestration::task::{SendKind, Task, TaskStore};

use super::{age, Monitor};

/// How long a claude respawned without its prompt may take to say it is idle: past it,
/// what is held for it is typed anyway (a last look still keeps it out of a dialog).
const SETTLE_LIMIT: Duration = Duration::from_secs(60);
/// How long after its UserPromptSubmit hook a claude's own "idle" is not believed (it
/// says busy once it has taken the prompt in, a fraction of a second later).
const PROMPT_SETTLES: Duration = Duration::from_secs(3);

/// Lines of scrollback read above a dead agent's screen for its last words.
const DEATH_SCROLLBACK: usize = 200;
/// How many of a dead agent's last lines are kept.
const LAST_LINES: usize = 12;
/// How long after a death its last words are still looked for when none were read.
const LATE_WORDS: Duration = Duration::from_secs(10);

/// One observation of an agent.
#[derive(Default)]
pub(super) struct Seen {
    /// The memory limit (bytes) the kernel killed it at (a dead agent whose cgroup
    /// counted an OOM kill).
    pub(super) oom: Option<u64>,
    /// A dead agent that never started: why (joining its cgroup failed).
    pub(super) never_started: Option<String>,
    pub(super) state: Option<State>,
    pub(super) signal: Option<Signal>,
    pub(super) exit: Option<PaneExit>,
    pub(super) death: Option<String>,
    pub(super) error: Option<(agent::ErrorKind, String)>,
    pub(super) blocker: Option<(agent::Blocker, String)>,
    /// `attempt 2/10` while retrying.
    pub(super) retry: Option<String>,
    /// The question its turn ended on.
    pub(super) asked: Option<String>,
    /// It called a tool since the last pass (the log grew with a tool call).
    pub(super) progress: bool,
    pub(super) log_len: Option<u64>,
    /// When the state began, when the signal knows (screen: the last activity).
    pub(super) since: Option<String>,
    /// A dead agent's last lines (scrollback included).
    pub(super) last_lines: Vec<String>,
    /// The agent's own channel is silent: what `task explain` says about it.
    pub(super) silent: Option<String>,
    /// The usage limit's words (state `limited`), and the reset a screen pattern captured.
    pub(super) limit: Option<(String, Option<String>)>,
    /// It went silent (said working, then nothing): not merely no event yet.
    pub(super) went_silent: bool,
    /// The pane whose screen this pass must read.
    pub(super) look: Option<String>,
    /// A dead agent's pane: its id and the pid its program had.
    pub(super) pane: Option<(String, u32)>,
    /// A claude respawned without its prompt (held for it, [`SendKind::Resume`]) that has
    /// not said it is idle yet (`sessions/<pid>.json`), for up to [`SETTLE_LIMIT`]: still
    /// starting, it may yet open its resume dialog (2.1.330 draws it up to a second after
    /// its SessionStart hook, and says idle only after that), so nothing is typed yet.
    pub(super) settling: bool,
    /// The agent's newest status report (OSC 7501), when its pty layer kept one.
    pub(super) report: Option<agent::Reported>,
}

impl Seen {
    /// What the screen shows outranks a busy or idle guess: a dialog blocks the agent
    /// whatever the last hook said; a retry shows only while it looks busy.
    pub(super) fn apply(&mut self, s: screen::Screen) {
        match s {
            // The same block a hook or a status report told first (claude's
            // PermissionRequest, with the tool's name): that word stands.
            screen::Screen::Blocked(b, _)
                if matches!(self.signal, Some(Signal::Hook | Signal::Osc))
                    && self.blocker.as_ref().is_some_and(|(h, _)| *h == b) => {}
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
            // transcript (newer, and the agent's own word) says more than it — but for a
            // hook that last said "working": a program whose hooks tell no failed turn
            // (codex: no Stop after it gives up) shows it only on its screen.
            screen::Screen::Error(_) if self.outranks_screen_error() => {}
            screen::Screen::Limited(..) if self.outranks_screen_error() => {}
            screen::Screen::Limited(line, reset) => {
                self.state = Some(State::Limited);
                self.signal = Some(Signal::Screen);
                self.limit = Some((line, reset));
            }
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

    /// What was seen says more than an error line on screen: a hook, a status report or
    /// the transcript, but a hook or report that last said "working" (codex fires none
    /// when it gives up).
    fn outranks_screen_error(&self) -> bool {
        match self.signal {
            None | Some(Signal::Screen | Signal::None) => false,
            Some(Signal::Hook | Signal::Osc) => self.state != Some(State::Working),
            _ => true,
        }
    }

    /// The log grew since the last pass (what the agent's record knew of it).
    pub(super) fn log_grew(&self, info: &AgentInfo) -> bool {
        self.log_len.is_some() && self.log_len != info.log_len
    }
}

/// What Claude's log (transcript) says, when its name is known.
#[derive(Default)]
struct FromLog {
    /// Where the log's last line that says something ends (bookkeeping lines after it,
    /// such as one per retry attempt, are not progress).
    len: Option<u64>,
    /// The time of that line.
    at: Option<String>,
    state: Option<LogState>,
}

impl<'a> Monitor<'a> {
    /// Judge one agent on what the pass saw: its pane (found in `panes`), its record (`info`: the
    /// hooks it sent, the last pass's verdict), Claude's log. Screens are read later, for
    /// all agents at once ([`Seen::look`] names the panes to read).
    pub(super) fn judge(
        &self,
        task: &Task,
        info: &AgentInfo,
        panes: &Panes<'_>,
        now: chrono::DateTime<chrono::Utc>,
        grace: Duration,
    ) -> Seen {
        let sid = task.tmux_session_id.as_deref().unwrap_or("");
        let Some(pane) = panes.agent_pane(task) else {
            return Seen {
                state: Some(State::Dead),
                signal: Some(Signal::Pane),
                death: Some(format!("gone:{sid}")),
                ..Seen::default()
            };
        };
        if pane.pane_dead {
            return self.judge_dead(task, info, pane, now);
        }
        self.judge_live(task, info, pane, now, grace)
    }

    /// A dead pane: how it ended, its last words and what they say (a dialog that blocked
    /// it, a program the sandbox hides).
    fn judge_dead(
        &self,
        task: &Task,
        info: &AgentInfo,
        pane: &PaneInfo,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Seen {
        let sid = task.tmux_session_id.as_deref().unwrap_or("");
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
        if seen.blocker.is_none() && task.sandbox != sandbox::Kind::None {
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
        // Exit 125 from the step that joins its cgroup (its words left beside the agent's
        // record): the agent never ran.
        let code = match seen.exit {
            Some(PaneExit::Status(c)) => Some(c),
            _ => None,
        };
        seen.never_started = self.tasks.never_started(task, code);
        seen.death = Some(death);
        seen
    }

    /// Claude's log, when we know its name.
    fn read_log(&self, task: &Task) -> FromLog {
        let mut log = FromLog::default();
        if let (Some(conv), Some(ws)) = (&task.agent_session_id, self.workspace_path(task)) {
            if let Some((tail, start)) = agent::read_log_tail(&agent::claude_log_path(&ws, conv)) {
                log.len = Some(start + tail.len() as u64);
                if let Some((state, end)) = agent::state_of_log_at(&tail) {
                    log.len = Some(start + end as u64);
                    log.at = tail[..end].lines().last().and_then(agent::line_time);
                    log.state = Some(state);
                }
            }
        }
        log
    }

    /// A live pane: the hook, else the log, else the screen's activity; then whether its
    /// screen must be read.
    fn judge_live(
        &self,
        task: &Task,
        info: &AgentInfo,
        pane: &PaneInfo,
        now: chrono::DateTime<chrono::Utc>,
        grace: Duration,
    ) -> Seen {
        let log = self.read_log(task);
        let log_grew = log.len.is_some() && log.len != info.log_len;
        let mut seen = Seen {
            log_len: log.len,
            progress: log_grew && matches!(log.state, Some(LogState::Working { tool: true })),
            ..Seen::default()
        };
        let kind = crate::execution::harness::kind_of(&task.harness);
        // Under orange's pty layer the pane's process is the layer: the agent is its child
        // (and may have reported its status).
        let layer = osc::read(
            &agent::agent_dir(&self.tasks.store.dir(&task.project, &task.id)),
            pane.pane_pid,
        );
        let agent_pid = layer.as_ref().map_or(pane.pane_pid, |l| l.agent_pid);
        let report = layer
            .and_then(|l| l.report)
            .and_then(|(r, ms)| report_seen(kind, &r, ms));
        let log_at = log.at.clone();
        weigh(&mut seen, info, log, pane, now, grace, kind.channel());
        if let Some(r) = &report {
            weigh_report(&mut seen, info, log_at.as_deref(), r);
        }
        let stalled = seen.state == Some(State::Working) && !log_grew;
        // Just started (SessionStart): a resumed claude may open its resume dialog after
        // the hook; one started with its prompt (working by that hook, [`super::hook`])
        // calls itself idle until it submits the prompt, for a moment.
        let started = info.hook_event.as_deref() == Some("SessionStart");
        let submitting = started
            && info.hook_state == Some(State::Working)
            && info
                .hook_at
                .as_deref()
                .is_some_and(|at| age(at, now) < SETTLE_LIMIT);
        // A prompt just submitted (its UserPromptSubmit hook a moment ago): claude writes
        // it to its transcript and calls itself busy only after that hook has run, so its
        // "idle" then is the moment before, not a turn cut short (seen: the status line
        // said waiting for that moment, and `task send` then found it working).
        let prompted = info.hook_event.as_deref() == Some("UserPromptSubmit")
            && info.hook_state == Some(State::Working)
            && info
                .hook_at
                .as_deref()
                .is_some_and(|at| age(at, now) < PROMPT_SETTLES);
        // Working by the transcript but idle by claude's own account: a turn cut short
        // (Esc while the request waited) that no hook and no transcript line tells.
        if stalled
            && !submitting
            && !prompted
            && matches!(seen.signal, Some(Signal::Hook | Signal::Log))
            && task.harness == "claude"
            && claude_says(task, agent_pid, &self.tasks.store).as_deref() == Some("idle")
        {
            seen.state = Some(State::Waiting);
        }
        // A claude that works: a retry shows only on its screen (and at once); before its
        // first hook: the first-run screens; blocked or retrying: to see that end.
        let was_stuck = matches!(info.state, Some(State::Blocked | State::Retrying));
        let busy = seen.state == Some(State::Working);
        seen.settling = task.harness == "claude"
            && task
                .held
                .iter()
                .any(|h| h.kind == SendKind::Resume && age(&h.at, now) < SETTLE_LIMIT)
            && claude_says(task, agent_pid, &self.tasks.store).as_deref() != Some("idle");
        if task.harness == "claude" && (info.hook_state.is_none() || busy || was_stuck || started) {
            seen.look = Some(pane.pane_id.clone());
        }
        // Another harness whose screen config.toml (or orange) tells how to read: every
        // pass (all screens in one tmux call).
        if task.harness != "claude" && !self.rules_of(&task.harness).is_empty() {
            seen.look = Some(pane.pane_id.clone());
        }
        seen
    }
}

/// The state of a live agent from its signals: the hook, unless the log has news after it
/// or the agent's own `channel` went silent; else the log; else the screen's activity
/// (quiet for longer than `grace`: waiting).
fn weigh(
    seen: &mut Seen,
    info: &AgentInfo,
    log: FromLog,
    pane: &PaneInfo,
    now: chrono::DateTime<chrono::Utc>,
    grace: Duration,
    channel: Option<(&str, Duration)>,
) {
    // The bell orange rang in the pane when it escalated is output too (tmux counts it as
    // the window's activity): not the agent's. Read as activity it made an idle agent look
    // busy after each escalation, then idle again: a new idle period, escalated again.
    let own_bell = info
        .rang_at
        .is_some_and(|r| (r..=r + 2).contains(&pane.window_activity));
    let quiet = Duration::from_secs(
        now.timestamp()
            .saturating_sub(pane.window_activity as i64)
            .max(0) as u64,
    );
    let quiet = if own_bell { quiet.max(grace) } else { quiet };
    // A channel that said "working" and then nothing for its limit while the screen is
    // quiet: silent (its program lost it, or it broke); never a state frozen at working.
    // Once found silent, silent until the channel speaks again (an event after the pass
    // that found it): a blip on the screen (a bell, a redraw) must not bring back a
    // "working" said minutes ago; the screen decides meanwhile.
    let still_silent = info.channel_silent.is_some()
        && info
            .hook_at
            .as_deref()
            .is_some_and(|h| !agent::after(h, &info.at));
    let silent = channel.filter(|(_, after)| {
        info.hook_state == Some(State::Working)
            && (still_silent
                || (info
                    .hook_at
                    .as_deref()
                    .is_some_and(|t| super::age(t, now) >= *after)
                    && quiet >= grace))
    });
    seen.went_silent = silent.is_some();
    seen.silent = match (silent, channel) {
        (Some((name, _)), _) => Some(format!(
            "{name} has said nothing since {} (last: working) and the screen is quiet: orange reads the screen",
            info.hook_at.as_deref().unwrap_or("")
        )),
        (None, Some((name, _))) if info.hook_at.is_none() => Some(format!(
            "{name} has sent no event yet: orange reads the screen"
        )),
        _ => None,
    };
    // Hooks are the best signal, unless the log has news after them: an error (no
    // hook may tell it), or a line written after the last hook (a hook can be lost or
    // late: the turn ended in the transcript while the last hook said working).
    // An error line without a time (no such line from Claude Code 2.1) counts as news.
    let log_is_newer = match (&log.at, &info.hook_at) {
        (Some(l), Some(h)) => agent::after(l, h),
        (None, _) => matches!(log.state, Some(LogState::Error(..))),
        _ => false,
    };
    match (info.hook_state, log.state) {
        (Some(h), from_log) if !log_is_newer && silent.is_none() => {
            seen.state = Some(h);
            seen.signal = Some(Signal::Hook);
            seen.blocker = info
                .hook_blocker
                .map(|b| (b, info.hook_detail.clone().unwrap_or_default()));
            // A channel that tells its retry (pi's `attempt 1/3: …`) says which attempt.
            if h == State::Retrying {
                seen.retry = info.hook_detail.clone();
            }
            if h == State::Limited {
                seen.limit = Some((info.hook_detail.clone().unwrap_or_default(), None));
            }
            if h == State::Error {
                seen.error = Some((
                    info.hook_error.unwrap_or(agent::ErrorKind::Other),
                    info.hook_detail.clone().unwrap_or_default(),
                ));
            }
            // (A retry the agent's own event tells: opencode's session.status retry.)
            if h == State::Retrying {
                seen.retry = info.hook_detail.clone();
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
            let state = if quiet >= grace {
                State::Waiting
            } else {
                State::Working
            };
            seen.since = if own_bell && info.state == Some(State::Waiting) {
                // Still the idle period the bell was rung for.
                Some(info.since.clone())
            } else {
                (state == State::Waiting)
                    .then(|| chrono::DateTime::from_timestamp(pane.window_activity as i64, 0))
                    .flatten()
                    .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
            };
            seen.state = Some(state);
            seen.signal = Some(Signal::Screen);
        }
    }
}

/// A status report as the judge weighs it: what it says in orange's words, in short, and
/// when it came.
struct ReportSeen {
    says: HookSays,
    reported: agent::Reported,
}

/// The report `r` that came at `ms` (Unix ms, the real clock), on the monitor's clock (the
/// one hooks are stamped on); `None` when it says nothing (`clear`, an unknown word).
fn report_seen(kind: &dyn AgentKind, r: &osc::Report, ms: u64) -> Option<ReportSeen> {
    let mut says = r.says()?;
    says.state = crate::orchestration::limits::state_of(kind, says.state, says.detail.as_deref());
    let skew = crate::orchestration::limits::clock() - chrono::Utc::now();
    let at = chrono::DateTime::from_timestamp_millis(i64::try_from(ms).ok()?)? + skew;
    Some(ReportSeen {
        says,
        reported: agent::Reported {
            said: r.summary(),
            at: at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        },
    })
}

/// The status report `r` beside what the hook, the log or the screen said: the newest
/// word wins. A report no newer than the hook or the log line that decided leaves their
/// word. A newer one decides (`signal: osc`); when it says what was already said (the same
/// state, the same block), what the hook or the log said with it stands — the tool's name
/// of an approval, the kind of an error, the question a turn ended on — and the report
/// adds only its own question.
fn weigh_report(seen: &mut Seen, info: &AgentInfo, log_at: Option<&str>, r: &ReportSeen) {
    seen.report = Some(r.reported.clone());
    let at = r.reported.at.as_str();
    let decided_at = match seen.signal {
        Some(Signal::Hook) => info.hook_at.as_deref(),
        Some(Signal::Log) => log_at,
        _ => None,
    };
    if decided_at.is_some_and(|t| !agent::after(at, t)) {
        return;
    }
    let says = &r.says;
    seen.signal = Some(Signal::Osc);
    let agrees = seen.state == Some(says.state)
        && (says.state != State::Blocked || seen.blocker.as_ref().map(|(b, _)| *b) == says.blocker);
    if agrees {
        if says.state == State::Waiting && seen.asked.is_none() {
            seen.asked = says.detail.clone();
        }
        return;
    }
    let detail = || says.detail.clone().unwrap_or_default();
    seen.state = Some(says.state);
    seen.since = Some(at.to_string());
    seen.blocker = says.blocker.map(|b| (b, detail()));
    seen.retry = None;
    seen.error = (says.state == State::Error)
        .then(|| (says.error.unwrap_or(agent::ErrorKind::Other), detail()));
    seen.limit = (says.state == State::Limited).then(|| (detail(), None));
    seen.asked = (says.state == State::Waiting)
        .then(|| says.detail.clone())
        .flatten();
}

/// What a running claude says of itself (`idle`, `busy`, `waiting`): by its pid (the
/// agent's, under a pty layer), or in a sandbox from its task's own `claude-sessions/`.
fn claude_says(task: &Task, agent_pid: u32, store: &TaskStore) -> Option<String> {
    if task.sandbox == sandbox::Kind::None {
        agent::claude_session_status(agent_pid)
    } else {
        agent::claude_session_status_in(&sandbox::claude_sessions(
            &store.dir(&task.project, &task.id),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pi's channel said "working" 30 s ago and nothing since, its screen quiet for 20 s:
    /// silent, the screen decides (waiting), and the note says so. Claude (no channel of
    /// its own), a recent event or a moving screen: the hook decides.
    #[test]
    fn a_silent_channel_falls_back_to_the_screen_and_says_so() {
        let now = chrono::Utc::now();
        let at = |s: i64| (now - chrono::Duration::seconds(s)).to_rfc3339();
        let info = |hook_s: i64| AgentInfo {
            hook_state: Some(State::Working),
            hook_at: Some(at(hook_s)),
            ..AgentInfo::default()
        };
        let pane = |quiet_s: i64| PaneInfo {
            window_activity: (now.timestamp() - quiet_s) as u64,
            ..PaneInfo::default()
        };
        let grace = Duration::from_secs(3);
        let pi = Some(("pi's channel", Duration::from_secs(10)));
        let judge = |i: &AgentInfo, p: &PaneInfo, c| {
            let mut seen = Seen::default();
            weigh(&mut seen, i, FromLog::default(), p, now, grace, c);
            seen
        };
        let s = judge(&info(30), &pane(20), pi);
        assert_eq!(
            (s.state, s.signal),
            (Some(State::Waiting), Some(Signal::Screen))
        );
        assert!(s
            .silent
            .as_deref()
            .unwrap()
            .contains("has said nothing since"));
        for (i, p, c) in [
            (info(30), pane(20), None),
            (info(5), pane(20), pi),
            (info(30), pane(0), pi),
        ] {
            let s = judge(&i, &p, c);
            assert_eq!(
                (s.state, s.signal),
                (Some(State::Working), Some(Signal::Hook))
            );
            assert_eq!(s.silent, None);
        }
        // Found silent by the last pass, no event since: a screen that moves again (a bell,
        // a redraw) does not bring back the old "working" — the screen decides.
        let mut found = info(30);
        found.at = at(1);
        found.channel_silent = Some("silent".into());
        let s = judge(&found, &pane(0), pi);
        assert_eq!(
            (s.state, s.signal),
            (Some(State::Working), Some(Signal::Screen))
        );
        assert!(s.went_silent);
        let s = judge(&found, &pane(20), pi);
        assert_eq!(
            (s.state, s.signal),
            (Some(State::Waiting), Some(Signal::Screen))
        );
        // It spoke after that pass: heard again.
        found.hook_at = Some(at(0));
        let s = judge(&found, &pane(0), pi);
        assert_eq!(
            (s.state, s.signal),
            (Some(State::Working), Some(Signal::Hook))
        );
        assert!(!s.went_silent);
        // orange's own bell (rung when it escalated) moved the screen: still quiet, still
        // the same idle period; output a second after it is the agent's.
        let mut rung = AgentInfo {
            state: Some(State::Waiting),
            since: at(40),
            rang_at: Some(now.timestamp() as u64),
            ..AgentInfo::default()
        };
        let s = judge(&rung, &pane(0), None);
        assert_eq!(
            (s.state, s.signal, s.since.as_deref()),
            (
                Some(State::Waiting),
                Some(Signal::Screen),
                Some(at(40).as_str())
            )
        );
        rung.rang_at = Some(now.timestamp() as u64 - 10);
        let s = judge(&rung, &pane(0), None);
        assert_eq!(s.state, Some(State::Working));
        // No event at all yet: the screen decides, and the note says the channel is silent.
        let s = judge(&AgentInfo::default(), &pane(0), pi);
        assert_eq!(
            (s.state, s.signal),
            (Some(State::Working), Some(Signal::Screen))
        );
        assert!(s.silent.as_deref().unwrap().contains("no event yet"));
    }

    /// A status report against the hook: the newer word decides (`signal: osc` when it is
    /// the report); one no newer leaves the hook's; one telling the hook's own block keeps
    /// the hook's detail; `clear` says nothing.
    #[test]
    fn the_newest_of_hook_and_status_report_decides() {
        let now = chrono::Utc::now();
        let at = |s: i64| now - chrono::Duration::seconds(s);
        let hooked = |state, s: i64| AgentInfo {
            hook_state: Some(state),
            hook_at: Some(at(s).to_rfc3339_opts(chrono::SecondsFormat::Micros, true)),
            ..AgentInfo::default()
        };
        let pane = PaneInfo {
            window_activity: now.timestamp() as u64,
            ..PaneInfo::default()
        };
        let report = |payload: &str, s: i64| {
            let r = osc::parse(payload.as_bytes()).unwrap();
            report_seen(
                &crate::execution::harness::claude::Claude,
                &r,
                at(s).timestamp_millis() as u64,
            )
        };
        let judge = |info: &AgentInfo, r: Option<ReportSeen>| {
            let mut seen = Seen::default();
            weigh(
                &mut seen,
                info,
                FromLog::default(),
                &pane,
                now,
                Duration::from_secs(3),
                None,
            );
            if let Some(r) = &r {
                weigh_report(&mut seen, info, None, r);
            }
            seen
        };
        // The turn ended (the report, newer) after the hook said working.
        let s = judge(
            &hooked(State::Working, 10),
            report("state=done:app=claude-code", 2),
        );
        assert_eq!(
            (s.state, s.signal),
            (Some(State::Waiting), Some(Signal::Osc))
        );
        assert_eq!(s.report.as_ref().unwrap().said, "done");
        // The hook came after the report: its word stands (the report is still shown).
        let s = judge(
            &hooked(State::Working, 1),
            report("state=idle:app=claude-code", 5),
        );
        assert_eq!(
            (s.state, s.signal),
            (Some(State::Working), Some(Signal::Hook))
        );
        assert_eq!(s.report.as_ref().unwrap().said, "idle");
        // No hook at all (screen activity decided): the report decides.
        let s = judge(&AgentInfo::default(), report("state=working:app=x", 30));
        assert_eq!(
            (s.state, s.signal),
            (Some(State::Working), Some(Signal::Osc))
        );
        // The hook's approval, then the same block reported: the hook's words stay.
        let mut approval = hooked(State::Blocked, 5);
        approval.hook_blocker = Some(agent::Blocker::Approval);
        approval.hook_detail = Some("asks to use Bash".into());
        let s = judge(&approval, report("state=blocked:kind=permission", 1));
        assert_eq!(
            (s.state, s.signal),
            (Some(State::Blocked), Some(Signal::Osc))
        );
        assert_eq!(
            s.blocker,
            Some((agent::Blocker::Approval, "asks to use Bash".into()))
        );
        // The turn ended on a question (the hook's words): the report's `done` keeps it.
        let mut asked = hooked(State::Waiting, 5);
        asked.hook_detail = Some("Should I change both?".into());
        let s = judge(&asked, report("state=done:app=claude-code", 1));
        assert_eq!(
            (s.state, s.signal, s.asked.as_deref()),
            (
                Some(State::Waiting),
                Some(Signal::Osc),
                Some("Should I change both?")
            )
        );
        // The hook's error, reported again: the hook's kind stays.
        let mut failed = hooked(State::Error, 5);
        failed.hook_error = Some(agent::ErrorKind::RateLimited);
        failed.hook_detail = Some("429".into());
        let s = judge(&failed, report("state=error:msg=b29wcw==", 1));
        assert_eq!(s.error, Some((agent::ErrorKind::RateLimited, "429".into())));
        // An error reported: its kind from its words.
        let s = judge(
            &hooked(State::Working, 10),
            report("state=error:msg=NTI5IE92ZXJsb2FkZWQ=", 1),
        );
        assert_eq!(s.state, Some(State::Error));
        assert_eq!(
            s.error,
            Some((agent::ErrorKind::Overloaded, "529 Overloaded".into()))
        );
        // A question: waiting on the person, its words the question.
        let s = judge(
            &hooked(State::Working, 10),
            report("state=blocked:kind=question:msg=V2hpY2g/", 1),
        );
        assert_eq!(
            (s.state, s.asked.as_deref()),
            (Some(State::Waiting), Some("Which?"))
        );
        assert!(report("state=clear", 1).is_none());
    }
}
