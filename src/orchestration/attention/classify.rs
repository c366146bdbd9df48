//! THE definition of the buckets and of what needs you ([`classify`], [`need`],
//! [`needs_you`]): see the [module documentation](super) for the table.

use serde::{Deserialize, Serialize};

use crate::orchestration::agent::{self, AgentInfo};
use crate::orchestration::task::Status;

use super::session::{SessionState, SessionView};

/// Which count an open task (or lane) adds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bucket {
    Working,
    Waiting,
    Dead,
    Review,
    Queued,
    /// Its agent stopped on the account's usage limit until a reset (`limited until 15:00`).
    Limited,
}

/// The buckets in display order.
pub const BUCKETS: [Bucket; 6] = [
    Bucket::Working,
    Bucket::Waiting,
    Bucket::Dead,
    Bucket::Review,
    Bucket::Queued,
    Bucket::Limited,
];

impl Bucket {
    pub fn as_str(self) -> &'static str {
        match self {
            Bucket::Working => "working",
            Bucket::Waiting => "waiting",
            Bucket::Dead => "dead",
            Bucket::Review => "review",
            Bucket::Queued => "queued",
            Bucket::Limited => "limited",
        }
    }

    /// One column wide in every terminal (no emoji presentation): status lines stay aligned.
    pub fn icon(self) -> &'static str {
        match self {
            Bucket::Working => "⚙",
            Bucket::Waiting => "⚑",
            Bucket::Dead => "✗",
            Bucket::Review => "✓",
            Bucket::Queued => "⏸",
            Bucket::Limited => "⏸",
        }
    }

    /// tmux style of the bucket's text.
    pub fn style(self) -> &'static str {
        match self {
            Bucket::Working => "fg=yellow",
            Bucket::Waiting => "fg=magenta,bold",
            Bucket::Dead => "fg=red,bold",
            Bucket::Review => "fg=green",
            Bucket::Queued => "dim",
            Bucket::Limited => "fg=cyan",
        }
    }
}

/// How many open tasks (or lanes) are in each bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub working: u32,
    pub waiting: u32,
    pub dead: u32,
    pub review: u32,
    pub queued: u32,
    /// Agents at a usage limit, waiting for its reset.
    #[serde(default)]
    pub limited: u32,
}

impl Counts {
    pub fn get(&self, b: Bucket) -> u32 {
        match b {
            Bucket::Working => self.working,
            Bucket::Waiting => self.waiting,
            Bucket::Dead => self.dead,
            Bucket::Review => self.review,
            Bucket::Queued => self.queued,
            Bucket::Limited => self.limited,
        }
    }

    pub fn add(&mut self, b: Bucket) {
        match b {
            Bucket::Working => self.working += 1,
            Bucket::Waiting => self.waiting += 1,
            Bucket::Dead => self.dead += 1,
            Bucket::Review => self.review += 1,
            Bucket::Queued => self.queued += 1,
            Bucket::Limited => self.limited += 1,
        }
    }

    /// Open tasks (and lanes) in all buckets.
    pub fn open(&self) -> u32 {
        BUCKETS.iter().map(|b| self.get(*b)).sum()
    }
}

/// What an [`Item`] stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemKind {
    Task,
    Lane,
}

impl ItemKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Task => "task",
            ItemKind::Lane => "lane",
        }
    }
}

impl std::fmt::Display for ItemKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One open task (or lane) as the widgets see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub kind: ItemKind,
    pub id: String,
    pub project: String,
    pub branch: String,
    /// The task's status (a lane's state).
    pub status: String,
    pub bucket: Bucket,
    /// Why it is in its bucket, in a few words: `working`, `clarification`, `stuck`,
    /// `waiting for input`, `error: rate_limited`, `exited 3`, `killed (signal 9)`,
    /// `no session`, `review`, `queued`.
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_signal: Option<i32>,
    /// When the task (lane) was created: the picker cycles in this order.
    #[serde(default)]
    pub created_at: String,
    /// The remote host it runs on; absent for this machine's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The task's harness (what a remote task's sidebar shows); empty for a lane.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub harness: String,
    /// What moves it on when it needs you ([`super::next::action`](super::next::action)); `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<super::step::Action>,
}

impl Item {
    /// The per-session text without styles: `⚙ working`, `✗ exited 3`, `✓ review`.
    pub fn label(&self) -> String {
        format!("{} {}", self.bucket.icon(), self.reason)
    }
}

/// THE definition of the buckets (see the module documentation): the bucket of a task and
/// the reason shown for it, or `None` for a done or cancelled task. `agent` is the task's
/// `agent.json` (the monitor and the agent's hooks write it) when it is newer than the task's last
/// change; `None` when unknown.
pub fn classify(
    status: Status,
    session: &SessionView,
    agent: Option<&AgentInfo>,
) -> Option<(Bucket, String)> {
    let dead_reason = |s: &SessionView| match (s.state, s.exit_status, s.exit_signal) {
        (SessionState::Dead, _, Some(sig)) => signal_reason(sig),
        (SessionState::Dead, Some(code), None) => format!("exited {code}"),
        (SessionState::Dead, None, None) => "exited".to_string(),
        _ => "no session".to_string(),
    };
    Some(match status {
        Status::Done | Status::Cancelled => return None,
        Status::Pending => (Bucket::Queued, "queued".into()),
        Status::Failed => (Bucket::Waiting, "failed to start".into()),
        Status::Reviewing => (Bucket::Review, "review".into()),
        Status::Stuck => (Bucket::Waiting, "stuck".into()),
        Status::Planning | Status::Clarification | Status::Working | Status::AgentReview => {
            if session.state != SessionState::Live {
                return Some((Bucket::Dead, dead_reason(session)));
            }
            if let Some(info) = agent {
                let info = &info.current();
                let state = info.state;
                // An escalation says more than the state only while the agent waits or
                // works (idle without progress, a question); a dialog, an error or a death
                // says it better itself. (`current()` drops one the agent moved on from.)
                if let Some(esc) = info.escalated.as_ref().filter(|_| {
                    !matches!(
                        state,
                        Some(agent::State::Blocked | agent::State::Error | agent::State::Dead)
                    )
                }) {
                    return Some((Bucket::Waiting, format!("escalated: {}", esc.reason)));
                }
                match state {
                    Some(agent::State::Dead) => {
                        let reason = match (info.killed_at_limit, info.exit_status) {
                            (Some(limit), _) => agent::killed_reason(limit),
                            (None, Some(c)) => format!("exited {c}"),
                            (None, None) => "exited".into(),
                        };
                        return Some((Bucket::Dead, reason));
                    }
                    Some(agent::State::Error) => {
                        let kind = info.error_kind.map(|k| k.as_str()).unwrap_or("other");
                        return Some((Bucket::Waiting, format!("error: {kind}")));
                    }
                    Some(agent::State::Blocked) => {
                        let what = info.blocker.map(|b| b.label()).unwrap_or("dialog");
                        return Some((Bucket::Waiting, format!("blocked: {what}")));
                    }
                    Some(agent::State::Limited) => {
                        let now = crate::orchestration::limits::clock();
                        let label = crate::orchestration::limits::label(info.limit.as_ref(), now);
                        return Some((Bucket::Limited, label));
                    }
                    Some(agent::State::Retrying) => {
                        return Some((Bucket::Working, "retrying".into()));
                    }
                    Some(agent::State::Waiting) if status != Status::Clarification => {
                        let what = if info.asked.is_some() {
                            QUESTION
                        } else {
                            WAITING_FOR_INPUT
                        };
                        return Some((Bucket::Waiting, what.into()));
                    }
                    _ => {}
                }
            }
            if status == Status::Clarification {
                (Bucket::Waiting, "clarification".into())
            } else {
                (Bucket::Working, status.as_str().into())
            }
        }
    })
}

fn signal_reason(sig: i32) -> String {
    let name = match sig {
        1 => "hangup",
        2 => "interrupted",
        9 => "killed",
        15 => "terminated",
        _ => return format!("signal {sig}"),
    };
    format!("{name} (signal {sig})")
}

/// How the reason of a task its pull request holds starts: `PR #12: checks failed`,
/// `PR #12: changes requested` (see [`pr_reason`]).
pub const PR_REASON: &str = "PR #";
const CHANGES_REQUESTED: &str = "changes requested";

/// A task that works, waits for input or for review, whose open pull request's checks
/// failed or whose reviewer asked for changes, needs you: the reason for it, or None (a
/// dead, blocked or failing agent says more by itself).
pub fn pr_reason(bucket: Bucket, reason: &str, pr: Option<&serde_json::Value>) -> Option<String> {
    let quiet = reason == WAITING_FOR_INPUT || reason == FIRST_PROMPT;
    if !(matches!(bucket, Bucket::Working | Bucket::Review) || quiet) {
        return None;
    }
    let pr = crate::adapters::gh::PrStatus::of_record(pr).filter(|p| p.state == "OPEN")?;
    if pr.review == "CHANGES_REQUESTED" {
        Some(format!("{PR_REASON}{}: {CHANGES_REQUESTED}", pr.number))
    } else if pr.checks.failed > 0 {
        Some(format!(
            "{PR_REASON}{}: checks failed ({}/{})",
            pr.number, pr.checks.failed, pr.checks.total
        ))
    } else {
        None
    }
}

/// The reasons of an agent whose turn ended and that waits for input (see [`classify`]).
pub(super) const WAITING_FOR_INPUT: &str = "waiting for input";
const QUESTION: &str = "question for you";
/// The reason of an agent started without a prompt that waits for its first one: waiting,
/// but not "needs you" (no notification, not in the picker's "next waiting"): the person
/// who started it that way is about to type it.
pub const FIRST_PROMPT: &str = "waiting for a first prompt";

/// Why an item needs you, in one word: what a notification names and keys on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Need {
    /// A dialog or an approval prompt.
    Blocked,
    /// An API error the agent does not retry by itself.
    Error,
    /// The agent exited, or its session is gone.
    Dead,
    /// The monitor escalated (idle without progress, a question, a crash).
    Escalated,
    /// Its turn ended and it waits for input ([`Need::after_a_turn`]), or the task is
    /// stuck, failed, or asks for clarification.
    Waiting,
    /// Work ready for review.
    Review,
    /// Its pull request's checks failed.
    ChecksFailed,
    /// A reviewer of its pull request asked for changes.
    ChangesRequested,
    /// Its agent stopped at the account's usage limit (told once; resumed at the reset).
    Limited,
}

impl Need {
    pub fn as_str(self) -> &'static str {
        match self {
            Need::Blocked => "blocked",
            Need::Error => "error",
            Need::Dead => "dead",
            Need::Escalated => "escalated",
            Need::Waiting => "waiting",
            Need::Review => "review",
            Need::ChecksFailed => "checks_failed",
            Need::ChangesRequested => "changes_requested",
            Need::Limited => "limited",
        }
    }
}

/// Why `item` needs you ([`needs_you`] decides whether; this only names it from the
/// reason [`classify`] gave), `None` when it does not.
pub fn need(item: &Item) -> Option<Need> {
    if !needs_you(item) {
        return None;
    }
    Some(match item.bucket {
        Bucket::Dead => Need::Dead,
        _ if item.reason.starts_with(PR_REASON) && item.reason.ends_with(CHANGES_REQUESTED) => {
            Need::ChangesRequested
        }
        _ if item.reason.starts_with(PR_REASON) => Need::ChecksFailed,
        Bucket::Review => Need::Review,
        Bucket::Limited => Need::Limited,
        _ if item.reason.starts_with("blocked") => Need::Blocked,
        _ if item.reason.starts_with("error") => Need::Error,
        _ if item.reason.starts_with("escalated") => Need::Escalated,
        _ => Need::Waiting,
    })
}

/// The item waits because its agent's turn ended (waiting for input, or a question): not
/// a stuck, failed or clarification task. Such an agent needs you only after it worked.
pub fn turn_ended(item: &Item) -> bool {
    item.bucket == Bucket::Waiting && (item.reason == WAITING_FOR_INPUT || item.reason == QUESTION)
}

/// Does this item need its person: a question, a dialog, an error, a stuck or failed task
/// (`waiting`), a dead agent (`dead`), work ready for review (`review`)? What the picker's
/// "next waiting" key cycles through. An agent started without a prompt that waits for its
/// first one does not: waiting is what it was started for.
pub fn needs_you(item: &Item) -> bool {
    matches!(
        item.bucket,
        Bucket::Waiting | Bucket::Dead | Bucket::Review | Bucket::Limited
    ) && item.reason != FIRST_PROMPT
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live() -> SessionView {
        SessionView {
            state: SessionState::Live,
            exit_status: None,
            exit_signal: None,
        }
    }

    fn dead(code: Option<i32>, sig: Option<i32>) -> SessionView {
        SessionView {
            state: SessionState::Dead,
            exit_status: code,
            exit_signal: sig,
        }
    }

    fn bucket(status: Status, s: &SessionView) -> Option<(Bucket, String)> {
        classify(status, s, None)
    }

    fn b(x: Bucket, r: &str) -> Option<(Bucket, String)> {
        Some((x, r.to_string()))
    }

    #[test]
    fn item_kinds_keep_their_json_words() {
        for (kind, word) in [(ItemKind::Task, "task"), (ItemKind::Lane, "lane")] {
            assert_eq!(serde_json::to_value(kind).unwrap(), word);
            assert_eq!(kind.to_string(), word);
            assert_eq!(
                serde_json::from_value::<ItemKind>(serde_json::json!(word)).unwrap(),
                kind
            );
        }
    }

    #[test]
    fn the_definitions() {
        let none = SessionView::NONE;
        use Bucket::*;
        use Status as S;
        assert_eq!(bucket(S::Working, &live()), b(Working, "working"));
        assert_eq!(bucket(S::Planning, &live()), b(Working, "planning"));
        assert_eq!(bucket(S::AgentReview, &live()), b(Working, "agent-review"));
        assert_eq!(
            bucket(S::Clarification, &live()),
            b(Waiting, "clarification")
        );
        assert_eq!(bucket(S::Stuck, &live()), b(Waiting, "stuck"));
        assert_eq!(bucket(S::Stuck, &none), b(Waiting, "stuck"));
        assert_eq!(
            bucket(S::Reviewing, &dead(Some(0), None)),
            b(Review, "review")
        );
        assert_eq!(bucket(S::Reviewing, &none), b(Review, "review"));
        assert_eq!(
            bucket(S::Working, &dead(Some(3), None)),
            b(Dead, "exited 3")
        );
        assert_eq!(
            bucket(S::Clarification, &dead(Some(0), None)),
            b(Dead, "exited 0")
        );
        assert_eq!(
            bucket(S::Working, &dead(None, Some(9))),
            b(Dead, "killed (signal 9)")
        );
        assert_eq!(
            bucket(S::Working, &dead(None, Some(6))),
            b(Dead, "signal 6")
        );
        assert_eq!(bucket(S::Working, &none), b(Dead, "no session"));
        assert_eq!(bucket(S::Pending, &none), b(Queued, "queued"));
        assert_eq!(bucket(S::Done, &live()), None);
        assert_eq!(bucket(S::Cancelled, &none), None);
    }

    #[test]
    fn agent_state_refines_a_live_agent_but_never_revives_a_dead_pane() {
        use Bucket::*;
        let info = |state: agent::State| AgentInfo {
            state: Some(state),
            at: "2030-01-01T00:00:00Z".into(),
            ..AgentInfo::default()
        };
        let waiting = info(agent::State::Waiting);
        assert_eq!(
            classify(Status::Working, &live(), Some(&waiting)),
            b(Waiting, "waiting for input")
        );
        assert_eq!(
            classify(Status::Clarification, &live(), Some(&waiting)),
            b(Waiting, "clarification")
        );
        let mut err = info(agent::State::Error);
        err.error_kind = Some(agent::ErrorKind::RateLimited);
        assert_eq!(
            classify(Status::Working, &live(), Some(&err)),
            b(Waiting, "error: rate_limited")
        );
        assert_eq!(
            classify(Status::Working, &live(), Some(&info(agent::State::Working))),
            b(Working, "working")
        );
        let mut gone = info(agent::State::Dead);
        gone.exit_status = Some(1);
        assert_eq!(
            classify(Status::Working, &live(), Some(&gone)),
            b(Dead, "exited 1")
        );
        assert_eq!(
            classify(Status::Working, &dead(Some(2), None), Some(&waiting)),
            b(Dead, "exited 2")
        );
        // A hook heard after the monitor's observation wins.
        let mut hooked = info(agent::State::Working);
        hooked.hook_state = Some(agent::State::Waiting);
        hooked.hook_at = Some("2030-01-01T00:00:05Z".into());
        assert_eq!(
            classify(Status::Working, &live(), Some(&hooked)),
            b(Waiting, "waiting for input")
        );
        hooked.hook_at = Some("2029-12-31T23:59:00Z".into());
        assert_eq!(
            classify(Status::Working, &live(), Some(&hooked)),
            b(Working, "working")
        );
        let mut esc = info(agent::State::Working);
        esc.escalated = Some(agent::Escalation {
            reason: "on_error".into(),
            at: "2030-01-01T00:00:00Z".into(),
        });
        assert_eq!(
            classify(Status::Working, &live(), Some(&esc)),
            b(Waiting, "escalated: on_error")
        );
    }

    #[test]
    fn the_need_of_an_item_is_named_from_its_classification() {
        let item = |status: Status, agent: Option<&AgentInfo>, s: &SessionView| {
            let (bucket, reason) = classify(status, s, agent).unwrap();
            Item {
                kind: ItemKind::Task,
                id: "t".into(),
                project: "p".into(),
                branch: "b".into(),
                status: status.as_str().into(),
                bucket,
                reason,
                session: None,
                session_id: None,
                exit_status: None,
                exit_signal: None,
                created_at: String::new(),
                host: None,
                harness: String::new(),
                next: None,
            }
        };
        let info = |state: agent::State| AgentInfo {
            state: Some(state),
            at: "2030-01-01T00:00:00Z".into(),
            ..AgentInfo::default()
        };
        let waiting = item(Status::Working, Some(&info(agent::State::Waiting)), &live());
        assert_eq!(need(&waiting), Some(Need::Waiting));
        assert!(turn_ended(&waiting));
        let mut asked = info(agent::State::Waiting);
        asked.asked = Some("which one?".into());
        assert!(turn_ended(&item(Status::Working, Some(&asked), &live())));
        let stuck = item(Status::Stuck, None, &live());
        assert_eq!(need(&stuck), Some(Need::Waiting));
        assert!(!turn_ended(&stuck));
        let blocked = item(Status::Working, Some(&info(agent::State::Blocked)), &live());
        assert_eq!(need(&blocked), Some(Need::Blocked));
        let error = item(Status::Working, Some(&info(agent::State::Error)), &live());
        assert_eq!(need(&error), Some(Need::Error));
        let mut esc = info(agent::State::Waiting);
        esc.escalated = Some(agent::Escalation {
            reason: "idle".into(),
            at: "2030-01-01T00:00:00Z".into(),
        });
        assert_eq!(
            need(&item(Status::Working, Some(&esc), &live())),
            Some(Need::Escalated)
        );
        let dead = item(Status::Working, None, &dead(Some(1), None));
        assert_eq!(need(&dead), Some(Need::Dead));
        assert_eq!(
            need(&item(Status::Reviewing, None, &live())),
            Some(Need::Review)
        );
        let working = item(Status::Working, Some(&info(agent::State::Working)), &live());
        assert_eq!(need(&working), None);
        assert!(!turn_ended(&working));
        assert_eq!(need(&item(Status::Pending, None, &SessionView::NONE)), None);
        // Started without a prompt, waiting for the first one: waiting, and no need, even
        // after it was seen at work (its screen drew): nothing rings.
        let first = Item {
            reason: FIRST_PROMPT.into(),
            ..waiting.clone()
        };
        assert_eq!(first.bucket, Bucket::Waiting);
        assert_eq!(need(&first), None);
        assert!(!needs_you(&first));
    }
}
