//! A group's members as they are now: each member's plan and its task — `not-created`
//! (the creating command never got to it), `gone` (deleted behind orange's back) or
//! `unreadable` (its record cannot be read) when there is none — and finding the member
//! a person names. What every group command reads first (`service`, `judge`, `auto`).

use serde::Serialize;

use crate::error::{OrangeError, Result};
use crate::orchestration::group::model::{Group, Member};
use crate::orchestration::task::model::{Status, Task};
use crate::orchestration::task::service::TaskService;

/// A member as it is now: its plan and its task (`None`: never created — `not-created`
/// —, deleted behind orange's back — `gone` — or its record unreadable — `unreadable`).
#[derive(Debug, Clone, Serialize)]
pub struct MemberNow {
    #[serde(flatten)]
    pub member: Member,
    /// The task's status, `gone`, `not-created` or `unreadable` (its record cannot be
    /// read: `error` says why).
    pub state: String,
    #[serde(skip)]
    pub task: Option<Task>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl MemberNow {
    /// Ready to be judged: its agent said it is done (`reviewing`), or it is merged.
    pub fn is_ready(&self) -> bool {
        self.task
            .as_ref()
            .is_some_and(|t| matches!(t.status, Status::Reviewing | Status::Done))
    }

    /// Its agent may still be at work.
    pub fn is_working(&self) -> bool {
        self.task.as_ref().is_some_and(|t| {
            matches!(
                t.status,
                Status::Pending
                    | Status::Planning
                    | Status::Clarification
                    | Status::Working
                    | Status::AgentReview
            )
        })
    }
}

/// Every member as it is now. A member whose task is not in the record (a create killed
/// before it wrote them: its members may have started, failed or been cancelled since) is
/// found by its group and branch among all the project's tasks; one whose task is gone is
/// `gone`.
pub fn members(tasks: &TaskService, g: &Group) -> Vec<MemberNow> {
    let mut all: Option<Vec<Task>> = None;
    g.members
        .iter()
        .map(|m| {
            let task = match &m.task {
                Some(id) => tasks.store.load(&g.project, id).map(Some),
                // (Another task's unreadable record is not this member's business.)
                None => Ok(all
                    .get_or_insert_with(|| tasks.store.list_readable(Some(&g.project)))
                    .iter()
                    .find(|t| t.group.as_deref() == Some(&g.id) && t.branch == m.branch)
                    .cloned()),
            };
            let mut member = m.clone();
            let (task, state, error) = match task {
                Ok(Some(t)) => {
                    let state = t.status.to_string();
                    (Some(t), state, None)
                }
                Ok(None) => (None, "not-created".to_string(), None),
                Err(OrangeError::TaskNotFound(_)) => (None, "gone".to_string(), None),
                // A record that cannot be read is not a member gone: its agent may run.
                Err(e) => (None, UNREADABLE.to_string(), Some(e.to_string())),
            };
            if task.is_some() || error.is_none() {
                member.task = task.as_ref().map(|t| t.id.clone());
            }
            MemberNow {
                member,
                state,
                task,
                error,
            }
        })
        .collect()
}

/// The state of a member whose task's record cannot be read (corrupt, unreadable).
pub const UNREADABLE: &str = "unreadable";

/// Refuse to act on a group's members while one's record cannot be read: acting would
/// pass it over and leave its agent running. The error is the record's own
/// (`state_corrupt` naming its file).
pub(super) fn check_readable(tasks: &TaskService, g: &Group, ms: &[MemberNow]) -> Result<()> {
    for m in ms.iter().filter(|m| m.state == UNREADABLE) {
        if let Some(id) = &m.member.task {
            tasks.store.load(&g.project, id)?;
            // Read fine now: it changed meanwhile, and what was read of it is stale.
            return Err(OrangeError::invalid(format!(
                "member /{}'s record changed while it was read; run the command again",
                m.member.label
            )));
        }
    }
    Ok(())
}

/// The member `typed` names: its label (`2`, `/2`, `claude`), its task id or its branch.
pub fn member<'a>(ms: &'a [MemberNow], typed: &str) -> Result<&'a MemberNow> {
    let t = typed.trim_start_matches('/');
    ms.iter()
        .find(|m| m.member.label == t || m.member.branch == typed)
        .or_else(|| ms.iter().find(|m| m.member.task.as_deref() == Some(t)))
        .ok_or_else(|| {
            OrangeError::invalid(format!(
                "no member {typed:?}; one of {}",
                ms.iter()
                    .map(|m| format!("/{}", m.member.label))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}
