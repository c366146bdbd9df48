//! An agent at the account's usage limit: seen ([`Monitor::see_limit`]: an error in its
//! program's limit words, or a declared `limit` screen line), held until the reset
//! ([`Monitor::hold_limit`]: the reset time, the harness held for new starts, history and
//! one notification through the `limited` state), then resumed ([`Monitor::on_limit`]:
//! at the reset plus the task's stagger, `[policy] on_limit` — `resume` types its message
//! through `task send`'s path and checks within 60 s that a turn started, tries once more,
//! then escalates; `wait` leaves it to the person; `escalate` escalates).

use std::time::Duration;

use serde_json::json;

use crate::error::Result;
use crate::orchestration::agent::{AgentInfo, State};
use crate::orchestration::limits;
use crate::orchestration::task::send;
use crate::orchestration::task::{Status, Task};

use super::act::Resolved;
use super::judge::Seen;
use super::{Monitor, PassReport};

/// Resumes typed in for one limit before the monitor escalates.
const RESUMES: u32 = 2;

impl Monitor<'_> {
    /// An error whose words are its program's usage limit is `limited` (a hook that said
    /// so already carries its words in the record).
    pub(super) fn see_limit(&self, task: &Task, info: &AgentInfo, seen: &mut Seen) {
        let kind = crate::execution::harness::kind_of(&task.harness);
        if seen.state == Some(State::Error) {
            let words = seen.error.as_ref().map(|(_, m)| m.clone());
            if limits::state_of(kind, State::Error, words.as_deref()) == State::Limited {
                seen.state = Some(State::Limited);
                seen.limit = words.map(|w| (w, None));
                seen.error = None;
            }
        }
        if seen.state == Some(State::Limited) && seen.limit.is_none() {
            seen.limit = Some((info.hook_detail.clone().unwrap_or_default(), None));
        }
    }

    /// After the verdict is recorded: a new limit gets its hold (its reset, the task's
    /// moment to resume) and holds its harness; an agent that left the limit after a
    /// resume started its turn (the resume is verified) and frees its harness.
    pub(super) fn hold_limit(
        &mut self,
        task: &Task,
        seen: &Seen,
        info: &mut AgentInfo,
        before: &AgentInfo,
        policy: &Resolved,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<()> {
        // The state just recorded.
        let state = info.state.unwrap_or(State::Unknown);
        // Told again after a resume (a hook newer than it): a turn started and met the
        // limit again: a new hold.
        let told_again = info.limit.as_ref().is_some_and(|h| {
            h.resumed_at.as_deref().is_some_and(|r| {
                info.hook_at
                    .as_deref()
                    .is_some_and(|at| crate::orchestration::agent::after(at, r))
            })
        });
        if state == State::Limited && (info.limit.is_none() || told_again) {
            let (words, captured) = seen.limit.clone().unwrap_or_default();
            let words_with_time = match &captured {
                Some(c) => format!("resets {c}"),
                None => words.clone(),
            };
            let hold = limits::hold_of(&words_with_time, policy.limit_wait, now);
            if told_again {
                self.tasks.store.append_history(
                    task,
                    "agent.limit_resumed",
                    json!({"verified": true, "reason": "a turn started, and met the limit again"}),
                )?;
            }
            let waits = if hold.read {
                String::new()
            } else {
                format!(
                    " (its words name no reset time: orange waits limit_wait, {})",
                    humantime::format_duration(policy.limit_wait)
                )
            };
            info.detail = Some(format!(
                "{words} — {}{waits}",
                limits::label(Some(&hold), now)
            ));
            self.tasks.store.append_history(
                task,
                "agent.limited",
                json!({"until": hold.until, "read": hold.read, "resume_at": hold.resume_at, "message": words}),
            )?;
            limits::record(self.home, &task.harness, &task.id, &hold.until)?;
            info.limit = Some(hold);
        } else if state == State::Limited {
            info.limit.clone_from(&before.limit);
            let words = seen.limit.as_ref().map(|(w, _)| w.as_str()).unwrap_or("");
            let label = limits::label(info.limit.as_ref(), now);
            info.detail = Some(format!("{words} — {label}"));
        } else if let Some(hold) = info.limit.take() {
            // Out of the limit: a turn started (or it died, or a person took over).
            if hold.resumed > 0 {
                self.tasks.store.append_history(
                    task,
                    "agent.limit_resumed",
                    json!({"verified": true, "state": state}),
                )?;
            }
            if matches!(state, State::Working | State::Waiting | State::Retrying) {
                limits::clear(self.home, &task.harness)?;
            }
        }
        Ok(())
    }

    /// A limited agent at its moment (the reset plus its stagger): `[policy] on_limit`.
    /// A resume that started no turn within [`limits::VERIFY`] is typed once more, then
    /// escalated.
    pub(super) fn on_limit(
        &mut self,
        task: &Task,
        policy: &Resolved,
        info: &mut AgentInfo,
        now: chrono::DateTime<chrono::Utc>,
        report: &mut PassReport,
    ) -> Result<()> {
        let Some(hold) = info.limit.clone() else {
            return Ok(());
        };
        let due = limits::parse(&hold.resume_at).is_some_and(|t| now >= t);
        if !due || info.escalated.is_some() {
            return Ok(());
        }
        let verify_over = hold
            .resumed_at
            .as_deref()
            .and_then(limits::parse)
            .is_some_and(|t| {
                now.signed_duration_since(t).to_std().unwrap_or_default() >= limits::VERIFY
            });
        if hold.resumed_at.is_some() && !verify_over {
            return Ok(());
        }
        let action = policy.on_limit.clone();
        match action.name() {
            "wait" | "none" | "ignore" => {
                if info.handled_error.as_deref() != Some(hold.until.as_str()) {
                    info.handled_error = Some(hold.until.clone());
                    report.actions.push(json!({"task": task.id, "action": "none", "reason": "the usage limit reset; on_limit = wait: the person resumes it"}));
                }
                Ok(())
            }
            "resume" if hold.resumed < RESUMES => {
                let status = self.tasks.store.load(&task.project, &task.id)?.status;
                if status != Status::Working {
                    return Ok(());
                }
                let msg = action.message().unwrap_or("continue").to_string();
                let typed = self
                    .tasks
                    .type_into(task, &msg, false, Duration::from_millis(200));
                let why = if hold.resumed == 0 {
                    "the usage limit reset".to_string()
                } else {
                    format!(
                        "no turn started within {}s of the resume: typed again",
                        limits::VERIFY.as_secs()
                    )
                };
                match typed {
                    Ok(send::Typed::Done) => {}
                    Ok(send::Typed::Dialog(b, line)) => {
                        report.actions.push(json!({"task": task.id, "action": "none", "reason": format!("{why}; not resumed: {} on screen ({line})", b.as_str())}));
                        return Ok(());
                    }
                    Err(crate::error::OrangeError::LockTimeout { .. }) => return Ok(()),
                    Err(e) => return Err(e),
                }
                if let Some(h) = info.limit.as_mut() {
                    h.resumed += 1;
                    h.resumed_at = Some(now.to_rfc3339_opts(chrono::SecondsFormat::Micros, true));
                }
                self.tasks.store.append_history(
                    task,
                    "agent.resumed",
                    json!({"reason": why, "message": msg, "attempt": hold.resumed + 1}),
                )?;
                report
                    .actions
                    .push(json!({"task": task.id, "action": "resume", "reason": why}));
                // Its project's queue held back by the limit may start now.
                let next = self.tasks.spawn_next(&task.project);
                if let Some(id) = next.spawned {
                    report.actions.push(
                        json!({"task": id, "action": "spawned", "reason": "the usage limit reset"}),
                    );
                }
                Ok(())
            }
            "resume" => self.escalate(
                task,
                &format!(
                    "resumed {RESUMES} times after the usage limit reset, and no turn started"
                ),
                info,
                report,
            ),
            _ => self.escalate(
                task,
                "the usage limit reset (on_limit = escalate)",
                info,
                report,
            ),
        }
    }
}
