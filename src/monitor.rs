//! The agent monitor (seed 003): one pass looks at every active task with ONE tmux query,
//! decides each agent's state from the best signal (hook > Claude log > pane > screen),
//! and applies the task's policies: on_idle (nudge once per idle period), on_exit
//! (recover, escalate, done; two crashes make the task stuck), on_error (per kind).

use std::path::Path;
use std::time::Duration;

use serde::Serialize;
use serde_json::json;

use crate::agent::{self, AgentInfo, Escalation, LogState, Signal, State};
use crate::config::{Action, Config, Policy};
use crate::error::{OrangeError, Result};
use crate::lifecycle::{Recovery, Tasks};
use crate::store::{self, Home, LockGuard};
use crate::task::{Status, Task};
use crate::tmux::{PaneExit, PaneInfo, Tmux};

pub const DEFAULT_IDLE_GRACE: Duration = Duration::from_secs(60);
pub const DEFAULT_NUDGE: &str = "Please continue with the task.";
/// Crashes (exits without the required outcome) after which a task is stuck.
pub const CRASH_LIMIT: u32 = 2;

/// What one pass saw and did, per task.
#[derive(Debug, Default, Serialize)]
pub struct PassReport {
    pub checked: usize,
    pub actions: Vec<serde_json::Value>,
    pub states: Vec<serde_json::Value>,
}

fn now_s() -> String {
    store::now_rfc3339()
}

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
struct Seen {
    state: State,
    signal: Signal,
    exit: Option<PaneExit>,
    death: Option<String>,
    error: Option<(agent::ErrorKind, String)>,
    log_len: Option<u64>,
    /// When the state began, when the signal knows (screen: the last activity).
    since: Option<String>,
}

pub struct Monitor<'a> {
    home: &'a Home,
    tasks: Tasks<'a>,
    config: Config,
    tmux: Tmux,
    /// Workspace name → path, read once per pass (not once per task).
    workspaces: std::collections::HashMap<String, std::path::PathBuf>,
}

impl<'a> Monitor<'a> {
    pub fn new(home: &'a Home, tmux: Tmux) -> Result<Monitor<'a>> {
        Ok(Monitor {
            home,
            tasks: Tasks::new(home).with_tmux(tmux.clone()),
            config: Config::load(home)?,
            tmux,
            workspaces: Default::default(),
        })
    }

    /// One pass over every active task. Passes are serialized (a short lock), so a pass
    /// started by hand never races the background monitor into a double nudge.
    pub fn pass(&mut self) -> Result<PassReport> {
        let _pass = LockGuard::acquire_within(
            &self.home.root.join("run/monitor-pass.lock"),
            Duration::from_secs(30),
        )?;
        let panes = if self.tmux.is_available() {
            self.tmux.snapshot()?
        } else {
            vec![]
        };
        let mut report = PassReport::default();
        let now = chrono::Utc::now();
        self.workspaces = crate::pool::list(self.home, None)?
            .into_iter()
            .map(|w| (w.name, w.path))
            .collect();
        for task in self.tasks.store.list(None)? {
            if !task.status.is_active() || task.tmux_session_id.is_none() {
                continue;
            }
            report.checked += 1;
            if let Err(e) = self.check(&task, &panes, now, &mut report) {
                report.actions.push(json!({"task": task.id, "action": "error", "error": e.to_string(), "code": e.code()}));
            }
        }
        Ok(report)
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
        let pane = crate::lifecycle::agent_pane(task, panes);
        let Some(pane) = pane else {
            return Seen {
                state: State::Dead,
                signal: Signal::Pane,
                exit: None,
                death: Some(format!("gone:{sid}")),
                error: None,
                log_len: None,
                since: None,
            };
        };
        if pane.pane_dead {
            return Seen {
                state: State::Dead,
                signal: Signal::Pane,
                exit: pane.exit(),
                death: Some(format!("{sid}:{}", pane.pane_pid)),
                error: None,
                log_len: None,
                since: None,
            };
        }
        // Claude's log, when we know its name.
        let mut log_len = None;
        let mut from_log = None;
        if let (Some(conv), Some(ws)) = (&task.agent_session_id, self.workspace_path(task)) {
            if let Some((tail, len)) = agent::read_log_tail(&agent::claude_log_path(&ws, conv)) {
                log_len = Some(len);
                from_log = agent::state_of_log(&tail);
            }
        }
        // Hooks are the best signal, unless the log has news after them (an error).
        if let Some(h) = info.hook_state {
            if !matches!(from_log, Some(LogState::Error(..))) {
                return Seen {
                    state: h,
                    signal: Signal::Hook,
                    exit: None,
                    death: None,
                    error: None,
                    log_len,
                    since: None,
                };
            }
        }
        match from_log {
            Some(LogState::Working) => Seen {
                state: State::Working,
                signal: Signal::Log,
                exit: None,
                death: None,
                error: None,
                log_len,
                since: None,
            },
            Some(LogState::Waiting) => Seen {
                state: State::Waiting,
                signal: Signal::Log,
                exit: None,
                death: None,
                error: None,
                log_len,
                since: None,
            },
            Some(LogState::Error(k, m)) => Seen {
                state: State::Error,
                signal: Signal::Log,
                exit: None,
                death: None,
                error: Some((k, m)),
                log_len,
                since: None,
            },
            None => {
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
                let since = (state == State::Waiting)
                    .then(|| chrono::DateTime::from_timestamp(pane.window_activity as i64, 0))
                    .flatten()
                    .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
                Seen {
                    state,
                    signal: Signal::Screen,
                    exit: None,
                    death: None,
                    error: None,
                    log_len,
                    since,
                }
            }
        }
    }

    fn workspace_path(&self, task: &Task) -> Option<std::path::PathBuf> {
        task.workspace
            .as_ref()
            .and_then(|w| self.workspaces.get(w))
            .cloned()
    }

    fn check(
        &mut self,
        task: &Task,
        panes: &[PaneInfo],
        now: chrono::DateTime<chrono::Utc>,
        report: &mut PassReport,
    ) -> Result<()> {
        let dir = self.tasks.store.dir(&task.project, &task.id);
        let mut info = agent::load(&dir);
        let before = info.clone();
        let policy = Resolved::of(&self.config, task);
        let seen = self.observe(task, &info, panes, now, policy.idle_grace);
        let stamp = now_s();
        if info.state != Some(seen.state) {
            info.since = seen.since.clone().unwrap_or_else(|| stamp.clone());
            if seen.state == State::Working {
                info.escalated = None;
            }
        }
        let log_grew = seen.log_len.is_some() && seen.log_len != info.log_len;
        info.state = Some(seen.state);
        info.signal = Some(seen.signal);
        info.at = stamp.clone();
        info.log_len = seen.log_len;
        info.exit_status = match seen.exit {
            Some(PaneExit::Status(c)) => Some(c),
            _ => None,
        };
        info.error_kind = seen.error.as_ref().map(|(k, _)| *k);
        info.detail = seen
            .error
            .as_ref()
            .map(|(_, m)| m.clone())
            .or_else(|| match seen.exit {
                Some(PaneExit::Signal(s)) => Some(format!("killed by signal {s}")),
                Some(PaneExit::Status(c)) => Some(format!("exited with status {c}")),
                None if seen.state == State::Dead => Some("session gone".into()),
                None => None,
            });
        report
            .states
            .push(json!({"task": task.id, "state": seen.state, "signal": seen.signal}));

        match seen.state {
            State::Waiting => {
                let idle = age(&info.since, now);
                let period = info.since.clone();
                if idle >= policy.idle_grace
                    && !log_grew
                    && info.nudged_for.as_deref() != Some(period.as_str())
                {
                    info.nudged_for = Some(period);
                    self.on_idle(task, &policy, &mut info, report)?;
                }
            }
            State::Dead => {
                let death = seen.death.clone().unwrap_or_default();
                if info.handled_death.as_deref() != Some(death.as_str()) {
                    info.handled_death = Some(death);
                    agent::save(&dir, &info)?;
                    self.on_exit(task, &policy, &seen, &mut info, report)?;
                }
            }
            State::Error => {
                if info.handled_error.as_deref() != Some(info.since.as_str()) {
                    info.handled_error = Some(info.since.clone());
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
            State::Working | State::Unknown => {}
        }
        if info != before {
            agent::save(&dir, &info)?;
        }
        Ok(())
    }

    fn on_idle(
        &mut self,
        task: &Task,
        policy: &Resolved,
        info: &mut AgentInfo,
        report: &mut PassReport,
    ) -> Result<()> {
        let action = policy.on_idle.clone();
        self.act(task, &action, "idle", info, report)
    }

    fn on_exit(
        &mut self,
        task: &Task,
        policy: &Resolved,
        seen: &Seen,
        info: &mut AgentInfo,
        report: &mut PassReport,
    ) -> Result<()> {
        let current = self.tasks.store.load(&task.project, &task.id)?;
        let outcome = self
            .workspace_path(&current)
            .map(|w| w.join(".orange-outcome"))
            .and_then(|p| std::fs::read_to_string(p).ok())
            .map(|s| s.trim().to_string());
        let reported = outcome.is_some()
            || matches!(
                current.status,
                Status::Reviewing | Status::Stuck | Status::AgentReview
            );
        let how = info.detail.clone().unwrap_or_else(|| "exited".into());
        if reported {
            self.tasks.store.append_history(
                &current,
                "agent.exited",
                json!({"detail": how, "outcome": outcome, "exit_status": info.exit_status}),
            )?;
            report.actions.push(
                json!({"task": task.id, "action": "none", "reason": "exited with an outcome"}),
            );
            return Ok(());
        }
        // A crash: the agent ended without reporting complete or stuck.
        let crashes = self.tasks.record_crash(&current, &how)?;
        let _ = seen;
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

    /// Carry out a policy action.
    fn act(
        &mut self,
        task: &Task,
        action: &Action,
        why: &str,
        info: &mut AgentInfo,
        report: &mut PassReport,
    ) -> Result<()> {
        match action.name() {
            "nudge" => {
                let msg = action.message().unwrap_or(DEFAULT_NUDGE);
                let target = self.tasks.session_target(task)?;
                self.tmux.send_text(&target, msg, true)?;
                info.nudges += 1;
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
        info.escalated = Some(Escalation {
            reason: why.to_string(),
            at: now_s(),
        });
        self.tasks
            .store
            .append_history(task, "agent.escalated", json!({"reason": why}))?;
        if let Ok(target) = self.tasks.session_target(task) {
            let _ = self.tmux.ring_bell(&target);
        }
        report
            .actions
            .push(json!({"task": task.id, "action": "escalate", "reason": why}));
        Ok(())
    }
}

/// An agent hook (`orange hook agent EVENT`, Claude Code's settings hooks): route it by
/// `$ORANGE_TASK_ID` (else by the cwd's workspace), ignore sub-agents' events, record the
/// state. `payload` is the hook's JSON from standard input (may be empty).
pub fn agent_hook(
    home: &Home,
    event: &str,
    payload: &str,
    cwd: &Path,
) -> Result<serde_json::Value> {
    let tasks = Tasks::new(home);
    let task = tasks.infer(cwd)?;
    let Some(state) = agent::state_of_hook(event) else {
        return Ok(
            json!({"task": task.id, "event": event, "ignored": "event says nothing about the agent's turn"}),
        );
    };
    let payload: serde_json::Value =
        serde_json::from_str(payload).unwrap_or(serde_json::Value::Null);
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
    let _lock = LockGuard::acquire_within(&dir.join(".agent.lock"), Duration::from_secs(5))?;
    let mut info = agent::load(&dir);
    info.hook_state = Some(state);
    info.hook_at = Some(now_s());
    info.hook_event = Some(event.to_string());
    agent::save(&dir, &info)?;
    Ok(json!({"task": task.id, "event": event, "state": state}))
}

/// The lock that makes `orange monitor` one per tmux server.
pub fn singleton(home: &Home, tmux: &Tmux) -> Result<Option<LockGuard>> {
    let key: String = tmux
        .server_args()
        .join("_")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let key = if key.is_empty() {
        "default".to_string()
    } else {
        key
    };
    let path = home.root.join("run").join(format!("monitor-{key}.lock"));
    match LockGuard::acquire_within(&path, Duration::from_millis(0)) {
        Ok(g) => {
            let _ = std::fs::write(
                home.root.join("run").join(format!("monitor-{key}.pid")),
                std::process::id().to_string(),
            );
            Ok(Some(g))
        }
        Err(OrangeError::LockTimeout { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}
