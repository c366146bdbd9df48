//! What the task's policies do with a verdict ([`super::judge`]): a waiting agent first
//! gets what `task send` held for it; on_idle (nudge once per idle period, through the
//! one path that types into agents; escalate when nudges bring no progress or the agent
//! asks), on_exit
//! (recover, escalate, done; [`CRASH_LIMIT`] crashes make the task stuck), on_error (per
//! kind), a dialog (escalate). Every action is checked against the task as it is now:
//! keystrokes and respawns only for a task in `working` status.

use std::time::Duration;

use serde_json::json;

use crate::adapters::store;
use crate::adapters::tmux::PaneExit;
use crate::error::Result;
use crate::execution::config::{Action, Config, Policy};
use crate::orchestration::agent::{self, AgentInfo, Escalation, State};
use crate::orchestration::screen;
use crate::orchestration::task::send;
use crate::orchestration::task::service::Recovery;
use crate::orchestration::task::{Status, Task};

use super::judge::Seen;
use super::verdict;
use super::{
    age, now_s, Monitor, PassReport, CRASH_LIMIT, DEFAULT_IDLE_GRACE, DEFAULT_MAX_NUDGES,
    DEFAULT_NUDGE,
};

/// What a headless agent that exited 0 did (its detail, its history, the pass's reason).
pub const FINISHED: &str = "finished: its one-shot turn ended (exit 0); review its work";

/// How long a claude that has sent no hook since it started counts as starting up.
const STARTUP_GRACE: Duration = Duration::from_secs(60);

/// The resolved policy of one task, with defaults applied.
pub struct Resolved {
    pub idle_grace: Duration,
    pub on_idle: Action,
    pub on_exit: Action,
    pub max_nudges: u32,
    /// At a usage limit's reset (default: resume, typing "continue").
    pub on_limit: Action,
    /// How long a limit whose words name no reset time holds.
    pub limit_wait: Duration,
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
            on_limit: policy.on_limit.clone().unwrap_or(Action::Full {
                action: "resume".into(),
                message: Some("continue".into()),
                mode: None,
            }),
            limit_wait: policy
                .limit_wait
                .as_deref()
                .and_then(|g| humantime::parse_duration(g).ok())
                .unwrap_or(crate::orchestration::limits::DEFAULT_LIMIT_WAIT),
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

/// One agent as the pass judged it, before the policies act.
pub(super) struct Judged {
    pub(super) task: Task,
    /// Its record as the pass read it.
    pub(super) info: AgentInfo,
    /// When the pass looked (taken before looking: a hook that comes meanwhile is newer).
    pub(super) stamp: String,
    pub(super) policy: Resolved,
    pub(super) seen: Seen,
}

/// What is left to do with a verdict (`info`: the record after it), in the order `check`
/// does it: what `task send` held for an agent whose turn ended, a nudge due (idle for the
/// grace, no progress, not nudged in this idle period), a death or a dialog or error not
/// handled yet.
fn due(
    task: &Task,
    state: State,
    info: &AgentInfo,
    seen: &Seen,
    policy: &Resolved,
    log_grew: bool,
    now: chrono::DateTime<chrono::Utc>,
) -> bool {
    let handled = info.handled_error.as_deref() == Some(info.since.as_str());
    match state {
        State::Waiting if !task.held.is_empty() => true,
        State::Error if !task.held.is_empty() && handled => true,
        State::Waiting => {
            age(&info.since, now) >= policy.idle_grace
                && !log_grew
                && info.nudged_for.as_deref() != Some(info.since.as_str())
        }
        State::Dead => {
            info.handled_death.as_deref() != Some(seen.death.as_deref().unwrap_or_default())
        }
        State::Error | State::Blocked => !handled,
        // A new limit (no hold yet), or its moment to resume (or to verify a resume) came.
        State::Limited => info.limit.as_ref().is_none_or(|h| {
            crate::orchestration::limits::parse(&h.resume_at).is_some_and(|t| now >= t)
        }),
        State::Working | State::Retrying | State::Unknown => false,
    }
}

/// Whether the observation (`info`, the record `before` it) must be written: something
/// new in it (not only the time of this look), the task changed since it was made
/// (readers trust only an observation made after the task's last change) or a hook came
/// since (its state was weighed against the log in this pass).
fn must_write(task: &Task, info: &AgentInfo, before: &AgentInfo) -> bool {
    !info.same_but_at(before)
        || !agent::at_or_after(&before.at, &task.updated_at)
        || before
            .hook_at
            .as_deref()
            .is_some_and(|h| agent::at_or_after(h, &before.at))
}

impl<'a> Monitor<'a> {
    /// Whether the task is still as this pass read it: the same status and session. A
    /// command may have changed it meanwhile (a respawn kills the dead session, starts a
    /// new one and resets what orange knows of its agent): a pass that judged the old
    /// session's absence with the new agent's record counted the respawn as a second
    /// crash and made the task stuck (seen under load in real_claude's kill test). Read
    /// under the project's lock; while a command holds it, the task waits for the next
    /// pass (the command's save pokes the monitor). Every save of a task pokes, under that
    /// lock, after writing: while the count of pokes is the one from before the pass read
    /// the tasks, no task changed and none is read again.
    fn still_as_observed(&self, task: &Task) -> bool {
        let Ok(Some(_lock)) = self.tasks.store.try_lock(&task.project) else {
            return false;
        };
        if store::pokes(self.home) == self.tasks_read_at {
            return true;
        }
        self.tasks
            .store
            .load(&task.project, &task.id)
            .is_ok_and(|now| {
                now.status == task.status && now.tmux_session_id == task.tmux_session_id
            })
    }

    /// Record what was seen of one agent and apply its task's policies. The agent's record
    /// after it, for the pass's summary (`None` when the task changed meanwhile, or a
    /// respawn replaced its agent).
    pub(super) fn check(
        &mut self,
        judged: Judged,
        now: chrono::DateTime<chrono::Utc>,
        report: &mut PassReport,
    ) -> Result<Option<AgentInfo>> {
        let Judged {
            task,
            mut info,
            stamp,
            policy,
            seen,
        } = judged;
        let mut seen = seen;
        self.see_limit(&task, &info, &mut seen);
        crate::adapters::fault::pause("monitor.observed");
        let before = info.clone();
        let log_grew = seen.log_grew(&info);
        let state = verdict::record(&mut info, &seen, &stamp, &task.id);
        // The lock is for a check that acts or writes: one that finds nothing new and
        // nothing due (most of them, most passes) takes none.
        let quiet = !due(&task, state, &info, &seen, &policy, log_grew, now)
            && !must_write(&task, &info, &before);
        if !quiet && !self.still_as_observed(&task) {
            return Ok(None);
        }
        self.respawned = false;
        if state == State::Limited || info.limit.is_some() {
            self.hold_limit(&task, &seen, &mut info, &before, &policy, now)?;
        }
        report.states.push(
            json!({"task": task.id, "state": state, "signal": seen.signal, "detail": info.detail}),
        );
        match state {
            // Its turn ended: what `task send` held for it goes in first (and no idle
            // policy in this pass: it has work). A turn that ended on an API error too,
            // once its policy has acted on the error (a pass before).
            State::Waiting if !task.held.is_empty() && !seen.settling => {
                self.deliver_held(&task, &mut info, report);
            }
            State::Error
                if !task.held.is_empty()
                    && info.handled_error.as_deref() == Some(info.since.as_str()) =>
            {
                self.deliver_held(&task, &mut info, report);
            }
            State::Waiting => {
                if due(&task, state, &info, &seen, &policy, log_grew, now) {
                    info.nudged_for = Some(info.since.clone());
                    self.on_idle(&task, &policy, &mut info, report)?;
                }
            }
            State::Dead => self.on_death(&task, &policy, &seen, &mut info, &before, report)?,
            State::Error | State::Blocked => {
                if due(&task, state, &info, &seen, &policy, log_grew, now) {
                    info.handled_error = Some(info.since.clone());
                    self.on_trouble(&task, state, &policy, &mut info, report)?;
                }
            }
            State::Limited => self.on_limit(&task, &policy, &mut info, now, report)?,
            State::Working | State::Retrying | State::Unknown => {}
        }
        self.save(&task, &mut info, &before)?;
        // What the summary of this pass uses (none after a respawn: its file is new).
        Ok((!self.respawned).then_some(info))
    }

    /// Type in what `task send` held for an agent whose turn ended (through the one path
    /// that types into agents); this idle period is then not nudged. Nothing typed (a
    /// dialog came up, a person's message is being typed in right now): still held.
    fn deliver_held(&mut self, task: &Task, info: &mut AgentInfo, report: &mut PassReport) {
        match self.tasks.deliver_held(task) {
            Ok(Some(n)) => {
                info.nudged_for = Some(info.since.clone());
                report.actions.push(json!({"task": task.id, "action": "sent", "reason": format!("its turn ended: {n} held message(s) typed in")}));
            }
            Ok(None) => {}
            Err(e) => report.actions.push(
                json!({"task": task.id, "action": "error", "error": e.to_string(), "code": e.code()}),
            ),
        }
    }

    /// A respawn (the recover policy) started a new agent with a fresh agent.json.
    /// Nothing new (only the time of this look): no write, no fsync. The observation
    /// is still rewritten when the task changed since it was made (readers trust only
    /// an observation made after the task's last change) or a hook came since (its
    /// state was weighed against the log in this pass).
    fn save(&self, task: &Task, info: &mut AgentInfo, before: &AgentInfo) -> Result<()> {
        if must_write(task, info, before) && !self.respawned {
            let dir = self.tasks.store.dir(&task.project, &task.id);
            *info = agent::save_observation(&dir, info, before)?;
        }
        Ok(())
    }

    /// A dead agent, once per death: recorded in its history, then its task's on_exit
    /// (not when its session went after it died: the same death, told again).
    fn on_death(
        &mut self,
        task: &Task,
        policy: &Resolved,
        seen: &Seen,
        info: &mut AgentInfo,
        before: &AgentInfo,
        report: &mut PassReport,
    ) -> Result<()> {
        let death = seen.death.clone().unwrap_or_default();
        if info.handled_death.as_deref() == Some(death.as_str()) {
            return Ok(());
        }
        // The session went after its agent died: the same death, told again.
        let sid = task.tmux_session_id.as_deref().unwrap_or("");
        let same_agent = death.starts_with("gone:")
            && info
                .handled_death
                .as_deref()
                .is_some_and(|d| d.starts_with(&format!("{sid}:")));
        self.record_death(task, seen, info)?;
        info.handled_death = Some(death);
        let dir = self.tasks.store.dir(&task.project, &task.id);
        *info = agent::save_observation(&dir, info, before)?;
        if !same_agent {
            self.on_exit(task, policy, seen.never_started.as_deref(), info, report)?;
        }
        Ok(())
    }

    /// A new dialog (escalated) or error (its task's on_error), written in its history.
    fn on_trouble(
        &mut self,
        task: &Task,
        state: State,
        policy: &Resolved,
        info: &mut AgentInfo,
        report: &mut PassReport,
    ) -> Result<()> {
        if state == State::Blocked && self.answer_resume(task, info)? {
            return Ok(());
        }
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
            return self.escalate(task, &why, info, report);
        }
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
            info,
            report,
        )
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
                if let Some(screen::Screen::Blocked(b, line)) = self.read_screen(task, pane) {
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

    /// A death of `task`'s agent not reported (an outcome, a status it set): closed, a
    /// one-shot turn ended, an agent that cannot start or never started, a kill at its
    /// memory limit — each told, no crash — else a crash, counted, and its on_exit.
    fn on_exit(
        &mut self,
        task: &Task,
        policy: &Resolved,
        never_started: Option<&str>,
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
        // A headless (one-shot) agent that exits 0 has ended its turn: it finished, no crash.
        // Its work waits for review (the person reads it, merges, or sends it on).
        if current.headless && info.exit_status == Some(0) {
            return self.on_finished(task, info, report);
        }
        // A built-in interactive agent (claude, pi, codex, opencode) exits 0 only when it is
        // closed (`/exit`, `/quit`, Ctrl-D): the person's doing, no crash to count and no
        // policy to apply (a recover would reopen what was closed). The task waits for the
        // person; a respawn continues the conversation.
        if info.exit_status == Some(0) && self.is_builtin(&task.harness) {
            return self.on_closed(task, info, report);
        }
        // It cannot start until the person acts (claude as root): no crash to count, no
        // respawn that would fail the same way.
        if let Some(b) = info.blocker.filter(|b| *b != agent::Blocker::Approval) {
            let why = format!("{} — {}", b.label(), b.advice(&task.id));
            return self.escalate(task, &why, info, report);
        }
        // It never started (joining its cgroup failed): no crash, and a respawn into the
        // same failure helps nobody; the person decides (the doctor, other limits).
        if let Some(why) = never_started {
            let why = format!("{why}; {}", agent::never_started_advice(&task.id));
            return self.escalate(task, &why, info, report);
        }
        // Killed by the kernel at its memory limit: a respawn with the same limit would
        // most likely end the same way, so no crash to count and no policy: the person
        // decides (more memory, or respawn it as it is).
        if let Some(limit) = info.killed_at_limit {
            return self.escalate(task, &verdict::killed_detail(limit, &task.id), info, report);
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

    /// Whether `harness` is one of orange's built-in agents (not a command of the user's).
    fn is_builtin(&self, harness: &str) -> bool {
        crate::execution::harness::Harness::named(harness, &self.config)
            .is_ok_and(|h| h.is_builtin())
    }

    /// An interactive agent was closed (exit 0): recorded, and the person told once.
    fn on_closed(
        &mut self,
        task: &Task,
        info: &mut AgentInfo,
        report: &mut PassReport,
    ) -> Result<()> {
        self.tasks.store.append_history(
            task,
            "agent.closed",
            json!({"exit_status": 0, "detail": info.detail}),
        )?;
        let why = format!(
            "the agent was closed (exit 0); `orange task respawn {}` continues its conversation",
            task.id
        );
        self.escalate(task, &why, info, report)
    }

    /// A headless agent finished its turn (exit 0): the task goes to review, with why.
    fn on_finished(
        &mut self,
        task: &Task,
        info: &mut AgentInfo,
        report: &mut PassReport,
    ) -> Result<()> {
        info.detail = Some(FINISHED.to_string());
        self.tasks
            .store
            .append_history(task, "agent.finished", json!({"detail": FINISHED}))?;
        let t = self.tasks.store.load(&task.project, &task.id)?;
        if t.status.can_become(Status::Reviewing) {
            self.tasks
                .set_status(&t, Status::Reviewing, "monitor: headless agent finished")?;
        }
        report
            .actions
            .push(json!({"task": task.id, "action": "review", "reason": FINISHED}));
        Ok(())
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
        if let Some(limit) = info.killed_at_limit {
            data["killed_at_limit"] = limit.into();
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
                let msg = send::nudge_text(Some(action), &harness).to_string();
                crate::adapters::fault::pause("monitor.nudging");
                // Through the one path that types into agents, which looks at the screen
                // last: a dialog that came up since the pass looked (an approval drawn a
                // moment after the agent went quiet) never gets the keystrokes; the next
                // pass sees it and reports it. A person's message being typed in right now
                // is no moment for a nudge either.
                let typed = self
                    .tasks
                    .type_into(task, &msg, false, Duration::from_millis(200));
                match typed {
                    Ok(send::Typed::Done) => {}
                    Ok(send::Typed::Dialog(b, line)) => {
                        report.actions.push(json!({"task": task.id, "action": "none", "reason": format!("{why}; not nudged: {} on screen ({line})", b.as_str())}));
                        return Ok(());
                    }
                    Err(crate::error::OrangeError::LockTimeout { .. }) => {
                        info.nudged_for = None;
                        report.actions.push(json!({"task": task.id, "action": "none", "reason": format!("{why}; not nudged: a message is being typed into it")}));
                        return Ok(());
                    }
                    Err(e) => return Err(e),
                }
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
    /// Claude's resume dialog, answered as `[harness.claude] resume` chose (`summary`,
    /// `full`) through `task send`'s path (only into that very dialog). Whether it was.
    fn answer_resume(&mut self, task: &Task, info: &AgentInfo) -> Result<bool> {
        if info.blocker != Some(agent::Blocker::ResumeChoice) {
            return Ok(false);
        }
        let choice = self
            .config
            .harness
            .get(&task.harness)
            .and_then(|h| h.resume.clone())
            .unwrap_or_else(|| "ask".into());
        let Some((keys, confirm)) = crate::execution::harness::claude::resume_keys(&choice) else {
            return Ok(false);
        };
        let answered =
            self.tasks
                .answer_dialog(task, agent::Blocker::ResumeChoice, keys, confirm)?;
        if answered {
            self.tasks.store.append_history(
                task,
                "agent.answered",
                json!({"blocker": "resume_choice", "choice": choice, "via": "config.toml"}),
            )?;
        }
        Ok(answered)
    }

    pub(super) fn escalate(
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
            if self.tmux.ring_bell(&target).unwrap_or(false) {
                info.rang_at = Some(chrono::Utc::now().timestamp().max(0) as u64);
            }
        }
        report
            .actions
            .push(json!({"task": task.id, "action": "escalate", "reason": why}));
        Ok(())
    }
}
