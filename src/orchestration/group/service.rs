//! What happens to a group: create (its record first, then each member as an ordinary
//! task — a member that cannot start never blocks the others), cancel, and pick (the winner
//! merged as `task merge` does or its pull request opened as `task pr` does, the others
//! cancelled as `task cancel` does).
//!
//! Every step is recorded before it is acted on, so a command killed half-way leaves a
//! record the next one finishes: a member created but not yet written into the record is
//! found by its group and branch (the record gets its members' ids beside their starts); `cancel` and `pick` run again finish what is left.

use serde::Serialize;
use serde_json::json;

use crate::adapters::{fault, git, store};
use crate::error::{OrangeError, Result};
use crate::execution::config::Config;
use crate::execution::harness::Harness;
use crate::orchestration::group::judge;
use crate::orchestration::group::members::check_readable;
use crate::orchestration::group::members::{member, members, MemberNow};
use crate::orchestration::group::model::{self, Group, JudgeMode, Member, MAX_MEMBERS};
use crate::orchestration::group::store::GroupStore;
use crate::orchestration::project::Project;
use crate::orchestration::task::model::{new_id, validate_branch, Status, Task};
use crate::orchestration::task::pr::PrRequest;
use crate::orchestration::task::service::TaskService;
use crate::orchestration::task::start::CreateRequest;

/// `task create BRANCH PROMPT --n N | --harness H[:N] …`.
pub struct GroupRequest {
    pub base: String,
    pub prompt: String,
    pub n: Option<u32>,
    /// `--harness` as typed (`claude`, `claude:2`).
    pub harnesses: Vec<String>,
    /// More than [`MAX_MEMBERS`].
    pub force: bool,
    pub context: Option<String>,
    pub spawn: bool,
    pub sandbox: Option<String>,
    pub headless: bool,
    pub judge: JudgeMode,
    /// `--memory/--cpu/--pids`: each member's.
    pub limits: crate::execution::resources::LimitConfig,
}

/// One member as `task create` made it.
#[derive(Debug, Serialize)]
pub struct MemberCreated {
    pub member: String,
    pub branch: String,
    pub harness: String,
    /// `spawned`, `queued`, `pending`, or `failed` (the reason in `error`).
    pub outcome: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<Task>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why a queued member waits (a full pool, a cap, a usage limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct GroupCreated {
    pub group: Group,
    pub members: Vec<MemberCreated>,
}

/// What `group cancel` and `group pick` did to each member.
#[derive(Debug, Default, Serialize)]
pub struct Outcome {
    pub group: Group,
    /// `(label, what happened)`.
    pub members: Vec<(String, String)>,
    /// Workspaces kept for their uncommitted work.
    pub notes: Vec<String>,
    /// The winner's merge (`task merge`'s info), when `--merge`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge: Option<serde_json::Value>,
    /// The winner's pull request (`task pr`'s), when `--pr`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pr: Option<serde_json::Value>,
}

/// How the picked member goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Onward {
    /// Left as it is (the person merges or opens a PR later).
    Keep,
    /// Merged as `task merge` does.
    Merge,
    /// Its branch pushed and a pull request opened as `task pr` does.
    Pr,
}

impl Onward {
    /// What the winner's row says.
    fn said(self) -> &'static str {
        match self {
            Onward::Keep => "picked",
            Onward::Merge => "picked, merged",
            Onward::Pr => "picked, pull request opened",
        }
    }
}

/// Create a group: everything checked first, then its record, then each member.
pub fn create(
    tasks: &mut TaskService,
    project: &Project,
    req: GroupRequest,
) -> Result<GroupCreated> {
    let (members, checked_out) = check(tasks, project, &req)?;
    let groups = GroupStore::new(tasks.home);
    let group = {
        let _lock = tasks.store.lock(&project.name)?;
        let id = new_id(|id| groups.exists(&project.name, id));
        let g = Group {
            id,
            project: project.name.clone(),
            base: req.base.clone(),
            prompt: req.prompt.clone(),
            members,
            judge: req.judge,
            created_at: store::now_precise(),
            ..Group::default()
        };
        groups.save(&g)?;
        g
    };
    fault::point("group.recorded");
    let reqs: Vec<CreateRequest> = group
        .members
        .iter()
        .map(|m| CreateRequest {
            branch: Some(m.branch.clone()),
            summary: Some(req.prompt.clone()),
            harness: Some(m.harness.clone()),
            context: req.context.clone(),
            spawn: req.spawn,
            sandbox: req.sandbox.clone(),
            headless: req.headless,
            group: Some(group.id.clone()),
            limits: req.limits.clone(),
        })
        .collect();
    // Every member's task written into the record under the lock they are recorded
    // under, beside their starts.
    let results = tasks.create_together(project, &reqs, Some(checked_out), &|made| {
        let mut g = groups.load(&project.name, &group.id)?;
        for (m, t) in g.members.iter_mut().zip(made) {
            if let Some(t) = t {
                m.task = Some(t.id.clone());
            }
        }
        groups.save(&g)
    })?;
    let mut created = vec![];
    for (m, r) in group.members.iter().zip(results) {
        let (task, outcome, error, note) = match r {
            Ok(c) => (Some(c.task), c.outcome.to_string(), None, c.note),
            // Recorded failed: the others go on.
            Err(OrangeError::TaskFailed { id, source }) => (
                tasks.store.load(&project.name, &id).ok(),
                "failed".to_string(),
                Some(source.to_string()),
                None,
            ),
            Err(e) => (None, "failed".to_string(), Some(e.to_string()), None),
        };
        created.push(MemberCreated {
            member: m.label.clone(),
            branch: m.branch.clone(),
            harness: m.harness.clone(),
            outcome,
            task,
            error,
            note,
        });
    }
    let group = groups.load(&project.name, &group.id)?;
    Ok(GroupCreated {
        group,
        members: created,
    })
}

/// The members a request makes, each checked as `task create` checks one (branch,
/// harness, resource limits) before anything is recorded: a group is made whole or not at
/// all. With them, the project's worktrees and their branches (read once, for every
/// member's checks).
fn check(
    tasks: &mut TaskService,
    project: &Project,
    req: &GroupRequest,
) -> Result<(Vec<Member>, git::CheckedOut)> {
    validate_branch(&req.base)?;
    if req.prompt.trim().is_empty() {
        return Err(OrangeError::invalid(
            "a group needs a prompt: every member is given the same one",
        ));
    }
    let harnesses: Vec<(String, u32)> = req
        .harnesses
        .iter()
        .map(|h| model::parse_harness(h))
        .collect::<Result<_>>()?;
    let config = Config::load(tasks.home)?;
    let default = Harness::resolve(None, &config).map(|h| h.name);
    let default = match (&harnesses[..], default) {
        ([], Err(e)) => return Err(e),
        (_, d) => d.unwrap_or_default(),
    };
    let members = model::plan(&req.base, req.n, &harnesses, &default);
    let n = members.len() as u32;
    if n < 2 {
        return Err(OrangeError::invalid(
            "a group has at least two members (--n 1 is an ordinary task)",
        ));
    }
    if n > MAX_MEMBERS && !req.force {
        return Err(OrangeError::invalid(format!(
            "{n} members: more than {MAX_MEMBERS} needs --force (each is an agent, a workspace and a session)"
        )));
    }
    if git::local_branch_exists(&project.path, &req.base) {
        return Err(OrangeError::invalid(format!(
            "branch {:?} exists: the members' branches ({}/…) cannot be made beside it; name the group after another branch",
            req.base, req.base
        )));
    }
    let open = tasks.store.list_open(Some(&project.name))?;
    let checked_out = git::checked_out_branches(&project.path)?;
    for m in &members {
        validate_branch(&m.branch)?;
        let h = Harness::resolve(Some(&m.harness), &config)?;
        if req.spawn {
            h.preflight()?;
        }
        let limits = config.limits_for(&req.limits, &project.name, &h.name)?;
        tasks.check_limits(&limits)?;
        if let Some(t) = open.iter().find(|t| t.branch == m.branch) {
            return Err(OrangeError::invalid(format!(
                "branch {:?} already belongs to task {} ({})",
                m.branch, t.id, t.status
            )));
        }
        if let Some((at, _)) = checked_out.iter().find(|(_, b)| *b == m.branch) {
            return Err(OrangeError::invalid(format!(
                "branch {:?} is checked out in {}",
                m.branch,
                at.display()
            )));
        }
    }
    Ok((members, checked_out))
}

/// Cancel every member still open (a workspace holding uncommitted work stays bound, as
/// `task cancel` keeps it). The group is marked cancelled first.
pub fn cancel(tasks: &mut TaskService, g: &Group) -> Result<Outcome> {
    check_readable(tasks, g, &members(tasks, g))?;
    let groups = GroupStore::new(tasks.home);
    let g = {
        let _lock = tasks.store.lock(&g.project)?;
        let mut g = groups.load(&g.project, &g.id)?;
        g.cancelled = true;
        groups.save(&g)?;
        g
    };
    fault::point("group.cancel.recorded");
    let g = judge::stop_judging(tasks, &g, "the group was cancelled")?;
    let mut out = Outcome {
        group: g.clone(),
        ..Outcome::default()
    };
    for m in members(tasks, &g) {
        let what = cancel_member(tasks, &m, &mut out.notes)?;
        out.members.push((m.member.label.clone(), what));
    }
    Ok(out)
}

/// Cancel one member if it is open: what became of it.
fn cancel_member(
    tasks: &mut TaskService,
    m: &MemberNow,
    notes: &mut Vec<String>,
) -> Result<String> {
    let Some(t) = &m.task else {
        return Ok("gone".into());
    };
    if t.status.is_final() {
        return Ok(t.status.to_string());
    }
    let (_, note, _) = tasks.cancel(&t.id, Some(&t.project))?;
    notes.extend(note);
    Ok("cancelled".into())
}

/// Pick `winner`: recorded first (a second pick of another member is refused), then each
/// member's history says what became of it, the winner goes on as `onward` says (merged,
/// or its pull request opened — before any other member is cancelled, so a refused push
/// or gh error leaves the others as they were), and every other member is cancelled.
pub fn pick(tasks: &mut TaskService, g: &Group, winner: &str, onward: Onward) -> Result<Outcome> {
    let groups = GroupStore::new(tasks.home);
    let now = members(tasks, g);
    let w = member(&now, winner)?.clone();
    check_readable(tasks, g, &now)?;
    let Some(wt) = w.task.clone() else {
        return Err(OrangeError::invalid(format!(
            "member /{} is gone: its task no longer exists",
            w.member.label
        )));
    };
    if g.cancelled {
        return Err(was_cancelled(g));
    }
    // Its work is gone with it: nothing to go on with (a winner merged already is a
    // pick run again, to finish).
    if matches!(wt.status, Status::Cancelled | Status::Failed) {
        return Err(OrangeError::InvalidTransition(format!(
            "member /{} is {}: pick a member whose work is there",
            w.member.label, wt.status
        )));
    }
    let g = {
        let _lock = tasks.store.lock(&g.project)?;
        let mut g = groups.load(&g.project, &g.id)?;
        if g.cancelled {
            return Err(was_cancelled(&g));
        }
        match &g.picked {
            Some(p) if *p != w.member.label => {
                return Err(OrangeError::InvalidTransition(format!(
                    "group {} already picked /{p}",
                    g.id
                )))
            }
            _ => g.picked = Some(w.member.label.clone()),
        }
        groups.save(&g)?;
        g
    };
    fault::point("group.pick.recorded");
    let g = judge::stop_judging(tasks, &g, &format!("/{} was picked", w.member.label))?;
    let label = format!("/{}", w.member.label);
    let mut out = Outcome {
        group: g.clone(),
        ..Outcome::default()
    };
    for m in &now {
        let Some(t) = &m.task else {
            continue;
        };
        let picked = m.member.label == w.member.label;
        let said =
            tasks.store.history(&t.project, &t.id).iter().any(|e| {
                e.event.starts_with("group.") && e.data.get("group") == Some(&json!(g.id))
            });
        if !said {
            let (event, note) = match picked {
                true => ("group.picked", "picked".to_string()),
                false => ("group.not_picked", format!("not picked: {label} won")),
            };
            tasks.store.append_history(
                t,
                event,
                json!({"group": g.id, "winner": label, "note": note}),
            )?;
        }
    }
    fault::point("group.pick.told");
    match onward {
        Onward::Merge if wt.status != Status::Done => {
            let (_, info, _) = tasks.merge(&wt.id, Some(&wt.project), true, false, false)?;
            out.merge = Some(info);
        }
        Onward::Pr => {
            // Run again after a crash, this links the pull request opened the first time.
            let o = tasks.open_pr(&wt.id, Some(&wt.project), &PrRequest::default())?;
            out.pr = Some(json!({"pr": o.pr, "created": o.created}));
        }
        _ => {}
    }
    for m in &now {
        if m.member.label == w.member.label {
            out.members
                .push((m.member.label.clone(), onward.said().into()));
            continue;
        }
        let what = cancel_member(tasks, m, &mut out.notes)?;
        out.members
            .push((m.member.label.clone(), format!("not picked ({what})")));
    }
    Ok(out)
}

/// A pick of a cancelled group.
fn was_cancelled(g: &Group) -> OrangeError {
    OrangeError::InvalidTransition(format!(
        "group {} was cancelled: there is nothing to pick",
        g.id
    ))
}
