//! THE next step of a task that needs its person: for every state that needs you (dead,
//! failed to start, error, blocked, stuck, escalated, limited, a question), the one
//! command — and the key, where orange has bound one that works there — that moves it on.
//! [`action`] decides it (pure, from what [`classify`](super::classify::classify) saw);
//! [`NextStep::of`] words it. The sidebar, `task show`, `task explain`, the notifications
//! and `--json` (`next_step`) all print [`NextStep::text`]: the same words everywhere.
//!
//! | the task | step | command | key (in its session) |
//! |---|---|---|---|
//! | agent exited, killed, session gone; failed to start | `respawn` | `orange task respawn ID` | `prefix O m r` |
//! | stuck or escalated while its agent still works (it hangs) | `restart` | `orange task respawn ID --force` | |
//! | blocked on a dialog or an approval prompt | `answer` | `orange task attach ID` | |
//! | error `unauthorized` | `log in` | `orange task attach ID` | |
//! | another API error it does not retry by itself | `retry` | `orange task nudge ID` | |
//! | limited (a usage limit, with its reset time) | `resume after the reset` | `orange task nudge ID` | |
//! | stuck, escalated, a question, clarification, waiting for input | `answer` | `orange task attach ID` | |
//!
//! The key is the actions menu's (`prefix O m`, then `r`): it acts on the task of the
//! session it is pressed in, so it is named only where that session is the task's (its
//! sidebar; `task show` run there), never in a notification (the person looks elsewhere).
//! Nothing for a lane, a task at work, queued or ready for review, or one that waits for
//! the first prompt its person is about to type.

use serde::{Deserialize, Serialize};

use crate::execution::harness::state::ErrorKind;
use crate::orchestration::agent::{self, AgentInfo};
use crate::orchestration::task::Status;

use super::classify::{Bucket, Item, ItemKind, FIRST_PROMPT};
use super::session::{SessionState, SessionView};
pub use super::step::Action;

/// The reason [`classify`](super::classify::classify) gives a limited agent starts so
/// (`limited until 15:00`).
pub const LIMITED: &str = "limited";

/// THE decision (see the module documentation): the step for a task in `status` whose
/// session is `session`, whose agent's state is `agent` (as `classify` was given it) and
/// that `classify` put in `bucket` for `reason`; `None` when it does not need you.
pub fn action(
    status: Status,
    session: &SessionView,
    agent: Option<&AgentInfo>,
    bucket: Bucket,
    reason: &str,
) -> Option<Action> {
    if reason == FIRST_PROMPT {
        return None;
    }
    match bucket {
        Bucket::Dead => Some(Action::Respawn),
        Bucket::Waiting if status == Status::Failed || session.state != SessionState::Live => {
            Some(Action::Respawn)
        }
        Bucket::Waiting => {
            let info = agent.map(|a| a.current());
            let state = info.as_ref().and_then(|i| i.state);
            Some(if reason.starts_with(LIMITED) {
                Action::Resume
            } else if state == Some(agent::State::Dead) {
                Action::Respawn
            } else if state == Some(agent::State::Error) {
                match info.as_ref().and_then(|i| i.error_kind) {
                    Some(ErrorKind::Unauthorized) => Action::LogIn,
                    _ => Action::Retry,
                }
            } else if state == Some(agent::State::Blocked) {
                Action::Answer
            } else if state == Some(agent::State::Working)
                && (status == Status::Stuck || reason.starts_with("escalated"))
            {
                Action::Restart
            } else {
                Action::Answer
            })
        }
        Bucket::Limited => Some(Action::Resume),
        Bucket::Working | Bucket::Review | Bucket::Queued => None,
    }
}

/// The keys orange bound that a step may name: how its key table is entered (`prefix O`),
/// when the plugin bound it. Only given where the step's session is the one the key acts
/// in (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Keys {
    pub table: Option<String>,
}

impl Keys {
    /// From the plugin's options: `@orange-key` (`key`: unset means `O`; `off` or empty:
    /// not bound) and `@orange_bound_keys` (`bound`: the `table:key` words the plugin did
    /// bind; `None`: the plugin bound nothing, or is not loaded: no key).
    pub fn from_options(key: Option<&str>, bound: Option<&str>) -> Keys {
        let key = match key.map(str::trim) {
            None => Some("O"),
            Some("") | Some("off") | Some("none") => None,
            Some(k) => Some(k),
        };
        let bound = |k: &str| {
            bound.is_some_and(|b| b.split_whitespace().any(|w| w == format!("prefix:{k}")))
        };
        Keys {
            table: key.filter(|k| bound(k)).map(|k| format!("prefix {k}")),
        }
    }
}

/// The next step of a task, worded: what `--json` prints as `next_step`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextStep {
    pub action: Action,
    /// The key that does it, in the task's session (`prefix O m r`); `None` where none is
    /// bound or none works.
    pub key: Option<String>,
    /// The command that does it from anywhere.
    pub command: String,
    /// `respawn: prefix O m r · orange task respawn 3fa2`: what every surface prints.
    pub text: String,
}

impl NextStep {
    /// `action` for task `id`, with its key when `keys` are given and bind one.
    pub fn of(action: Action, id: &str, keys: Option<&Keys>) -> NextStep {
        let key = match (keys.and_then(|k| k.table.as_deref()), action.menu_key()) {
            (Some(table), Some(k)) => Some(format!("{table} m {k}")),
            _ => None,
        };
        let command = action.command(id);
        let text = match &key {
            Some(k) => format!("{}: {k} · {command}", action.word()),
            None => format!("{}: {command}", action.word()),
        };
        NextStep {
            action,
            key,
            command,
            text,
        }
    }

    /// The step of an item the snapshot holds (what a notification or a remote task's
    /// sidebar has): `None` for a lane, or when it needs nothing.
    pub fn of_item(item: &Item, keys: Option<&Keys>) -> Option<NextStep> {
        if item.kind != ItemKind::Task {
            return None;
        }
        item.next.map(|a| NextStep::of(a, &item.id, keys))
    }

    /// The same step with the keys of where it is shown.
    pub fn keyed(&self, id: &str, keys: Option<&Keys>) -> NextStep {
        NextStep::of(self.action, id, keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execution::harness::state::Blocker;
    use crate::orchestration::attention::classify::classify;

    fn live() -> SessionView {
        SessionView {
            state: SessionState::Live,
            exit_status: None,
            exit_signal: None,
        }
    }

    fn dead(sig: Option<i32>) -> SessionView {
        SessionView {
            state: SessionState::Dead,
            exit_status: sig.is_none().then_some(1),
            exit_signal: sig,
        }
    }

    fn info(state: agent::State) -> AgentInfo {
        AgentInfo {
            state: Some(state),
            at: "2030-01-01T00:00:00Z".into(),
            ..AgentInfo::default()
        }
    }

    /// The step `classify` and `action` give together, worded for task `3fa2` with keys.
    fn step(status: Status, s: &SessionView, agent: Option<&AgentInfo>) -> Option<String> {
        let (bucket, reason) = classify(status, s, agent)?;
        let keys = Keys::from_options(None, Some("prefix:O root:C-\\ root:C-]"));
        action(status, s, agent, bucket, &reason).map(|a| NextStep::of(a, "3fa2", Some(&keys)).text)
    }

    fn some(s: &str) -> Option<String> {
        Some(s.to_string())
    }

    #[test]
    fn a_dead_agent_is_respawned_with_the_menu_key_or_the_command() {
        let want = some("respawn: prefix O m r · orange task respawn 3fa2");
        assert_eq!(step(Status::Working, &dead(Some(9)), None), want);
        assert_eq!(step(Status::Working, &dead(None), None), want);
        assert_eq!(step(Status::Working, &SessionView::NONE, None), want);
        // The monitor saw it exit before the pane said so.
        assert_eq!(
            step(Status::Working, &live(), Some(&info(agent::State::Dead))),
            want
        );
        // Failed to start; stuck after crashing twice (its session dead).
        assert_eq!(step(Status::Failed, &SessionView::NONE, None), want);
        assert_eq!(step(Status::Stuck, &dead(None), None), want);
        assert_eq!(
            step(Status::Stuck, &live(), Some(&info(agent::State::Dead))),
            want
        );
    }

    #[test]
    fn an_error_is_retried_or_logged_into() {
        let mut err = info(agent::State::Error);
        err.error_kind = Some(ErrorKind::RateLimited);
        assert_eq!(
            step(Status::Working, &live(), Some(&err)),
            some("retry: orange task nudge 3fa2")
        );
        err.error_kind = Some(ErrorKind::Unauthorized);
        assert_eq!(
            step(Status::Working, &live(), Some(&err)),
            some("log in: orange task attach 3fa2")
        );
    }

    #[test]
    fn a_blocked_agent_is_answered_in_its_pane() {
        let mut b = info(agent::State::Blocked);
        b.blocker = Some(Blocker::Approval);
        assert_eq!(
            step(Status::Working, &live(), Some(&b)),
            some("answer: orange task attach 3fa2")
        );
    }

    #[test]
    fn a_stuck_agent_is_answered_or_restarted_when_it_hangs() {
        assert_eq!(
            step(Status::Stuck, &live(), Some(&info(agent::State::Waiting))),
            some("answer: orange task attach 3fa2")
        );
        assert_eq!(
            step(Status::Stuck, &live(), None),
            some("answer: orange task attach 3fa2")
        );
        assert_eq!(
            step(Status::Stuck, &live(), Some(&info(agent::State::Working))),
            some("restart: orange task respawn 3fa2 --force")
        );
        let mut esc = info(agent::State::Working);
        esc.escalated = Some(agent::Escalation {
            reason: "idle again after 3 nudge(s) without progress".into(),
            at: "2030-01-01T00:00:00Z".into(),
        });
        assert_eq!(
            step(Status::Working, &live(), Some(&esc)),
            some("restart: orange task respawn 3fa2 --force")
        );
        esc.state = Some(agent::State::Waiting);
        assert_eq!(
            step(Status::Working, &live(), Some(&esc)),
            some("answer: orange task attach 3fa2")
        );
    }

    #[test]
    fn a_limited_agent_resumes_after_the_reset() {
        let live = live();
        let a = action(
            Status::Working,
            &live,
            None,
            Bucket::Waiting,
            "limited until 15:00",
        );
        assert_eq!(a, Some(Action::Resume));
        assert_eq!(
            NextStep::of(a.unwrap(), "3fa2", None).text,
            "resume after the reset: orange task nudge 3fa2"
        );
    }

    #[test]
    fn a_question_or_a_turn_ended_is_answered() {
        let mut asked = info(agent::State::Waiting);
        asked.asked = Some("which one?".into());
        assert_eq!(
            step(Status::Working, &live(), Some(&asked)),
            some("answer: orange task attach 3fa2")
        );
        assert_eq!(
            step(Status::Clarification, &live(), None),
            some("answer: orange task attach 3fa2")
        );
    }

    #[test]
    fn nothing_for_what_does_not_need_you() {
        assert_eq!(step(Status::Working, &live(), None), None);
        assert_eq!(
            step(
                Status::Working,
                &live(),
                Some(&info(agent::State::Retrying))
            ),
            None
        );
        assert_eq!(step(Status::Reviewing, &live(), None), None);
        assert_eq!(step(Status::Pending, &SessionView::NONE, None), None);
        let live = live();
        assert_eq!(
            action(Status::Working, &live, None, Bucket::Waiting, FIRST_PROMPT),
            None
        );
    }

    #[test]
    fn the_key_follows_the_plugins_binding() {
        let k = |key: Option<&str>, bound: Option<&str>| {
            NextStep::of(Action::Respawn, "x", Some(&Keys::from_options(key, bound))).key
        };
        assert_eq!(k(None, Some("prefix:O")).as_deref(), Some("prefix O m r"));
        assert_eq!(
            k(Some("T"), Some("prefix:T root:C-]")).as_deref(),
            Some("prefix T m r")
        );
        // Left alone by the plugin (the person's own binding), turned off, or no plugin
        // loaded: no key.
        assert_eq!(k(None, Some("root:C-\\")), None);
        assert_eq!(k(Some("off"), Some("prefix:O")), None);
        assert_eq!(k(None, None), None);
        assert_eq!(NextStep::of(Action::Respawn, "x", None).key, None);
        assert_eq!(
            NextStep::of(
                Action::Answer,
                "x",
                Some(&Keys::from_options(None, Some("prefix:O")))
            )
            .key,
            None
        );
    }

    #[test]
    fn json_words_are_stable() {
        let s = NextStep::of(Action::LogIn, "ab12", None);
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            serde_json::json!({"action": "log_in", "key": null, "command": "orange task attach ab12", "text": "log in: orange task attach ab12"})
        );
    }
}
