//! A task's pull request: opened (or linked, when one exists for its branch) by `task
//! pr`, merged by `task merge` when its checks pass. What gh said is kept with the task
//! (task.json's `pr`: [`gh::PrStatus`]); its changes are history events.

use serde_json::json;

use crate::adapters::store;
use crate::adapters::{gh, git};
use crate::error::{OrangeError, Result};
use crate::orchestration::project::{self, Project};
use crate::orchestration::task::model::Task;
use crate::orchestration::task::service::TaskService;

/// What `task pr` opens the pull request with (defaults: the task's summary, the
/// project's default branch, ready for review).
#[derive(Debug, Clone, Default)]
pub struct PrRequest {
    pub draft: bool,
    pub title: Option<String>,
    pub base: Option<String>,
}

/// The pull request `task pr` left the task with.
#[derive(Debug, Clone)]
pub struct Opened {
    pub task: Task,
    pub pr: gh::PrStatus,
    /// Made now (false: one already open for the branch was linked).
    pub created: bool,
}

/// The pull request kept with a task, when it has one.
pub fn recorded(task: &Task) -> Option<gh::PrStatus> {
    gh::PrStatus::of_record(task.pr.as_ref())
}

impl TaskService<'_> {
    /// Push the task's branch to origin and open its pull request with gh, or link the
    /// one already open for the branch; keep its number and URL with the task. gh is
    /// asked first: without it (or logged out) nothing is pushed.
    pub fn open_pr(&mut self, id: &str, project: Option<&str>, req: &PrRequest) -> Result<Opened> {
        let task = self.get(id, project)?;
        let project = project::get(self.home, &task.project)?;
        if !git::local_branch_exists(&project.path, &task.branch) {
            return Err(OrangeError::invalid(format!(
                "task {}'s branch {} does not exist yet (its agent never started): nothing to open a pull request from",
                task.id, task.branch
            )));
        }
        let existing = gh::pr_view(&project.path, &task.branch)?.filter(|p| p.state != "CLOSED");
        git::push(&project.path, &task.branch)?;
        let (pr, created) = match existing {
            Some(p) => (p, false),
            None => (create(&project, &task, req)?, true),
        };
        let _lock = self.store.lock(&task.project)?;
        let mut task = self.store.load(&task.project, &task.id)?;
        task.pr = serde_json::to_value(&pr).ok();
        task.updated_at = store::now_rfc3339();
        self.store.save(&task)?;
        let event = if created { "pr.created" } else { "pr.linked" };
        self.store.append_history(
            &task,
            event,
            json!({"number": pr.number, "url": pr.url, "draft": pr.draft}),
        )?;
        Ok(Opened { task, pr, created })
    }

    /// Before `task merge` merges a task locally: its open pull request merged with
    /// `gh pr merge` (the method of `[pr] merge`) when its checks pass and no change is
    /// requested, else refused unless `force`. What is known of the PR after (for
    /// `merge_branch`: a merged PR merges nothing locally).
    pub fn land_pr(&mut self, project: &Project, task: &mut Task, force: bool) -> Result<gh::Pr> {
        let had = recorded(task);
        let found = match gh::pr_view(&project.path, &task.branch) {
            Ok(found) => found,
            // A task whose PR orange opened is not merged behind its back: say why.
            Err(e) if had.is_some() => return Err(e),
            Err(OrangeError::GhNotInstalled) => {
                return Ok(gh::Pr::Unknown {
                    reason: "gh is not installed: PR status unknown".into(),
                })
            }
            Err(e) => {
                return Ok(gh::Pr::Unknown {
                    reason: e.to_string(),
                })
            }
        };
        let Some(mut pr) = found else {
            return Ok(gh::Pr::None);
        };
        if pr.state == "OPEN" {
            if let Some(why) = not_ready(&pr).filter(|_| !force) {
                return Err(OrangeError::PrNotReady(format!(
                    "task {}'s pull request #{} is not ready to merge: {why}; `orange task merge {} --force` merges it anyway",
                    task.id, pr.number, task.id
                )));
            }
            let method = self
                .config()?
                .pr
                .merge
                .clone()
                .unwrap_or_else(|| "merge".into());
            gh::pr_merge(&project.path, pr.number, &method)?;
            pr.state = "MERGED".into();
            self.store.append_history(
                task,
                "pr.merged",
                json!({"number": pr.number, "method": method, "forced": force && not_ready(&pr).is_some()}),
            )?;
        }
        task.pr = serde_json::to_value(&pr).ok();
        Ok(gh::Pr::Found {
            number: pr.number,
            pr_state: pr.state,
            url: pr.url,
        })
    }
}

/// Why an open pull request should not be merged now, or None.
pub fn not_ready(pr: &gh::PrStatus) -> Option<String> {
    let c = pr.checks;
    let mut why = vec![];
    if c.failed > 0 {
        why.push(format!("{} of {} checks failed", c.failed, c.total));
    }
    if c.pending > 0 {
        why.push(format!("{} of {} checks still running", c.pending, c.total));
    }
    if pr.review == "CHANGES_REQUESTED" {
        why.push("changes are requested".into());
    }
    if pr.mergeable == "CONFLICTING" {
        why.push("it conflicts with its base".into());
    }
    if pr.draft {
        why.push("it is a draft".into());
    }
    (!why.is_empty()).then(|| why.join(", "))
}

/// `gh pr create` for the task's branch: its title the summary's first line (or the
/// request's), its body the summary and the task's id.
fn create(project: &Project, task: &Task, req: &PrRequest) -> Result<gh::PrStatus> {
    let title = req.title.clone().unwrap_or_else(|| {
        task.summary
            .lines()
            .next()
            .unwrap_or(&task.branch)
            .to_string()
    });
    if title.trim().is_empty() {
        return Err(OrangeError::invalid(
            "a pull request needs a title (--title)",
        ));
    }
    let base = req
        .base
        .clone()
        .unwrap_or_else(|| project.default_branch.clone());
    let body = format!("{}\n\n(orange task {})", task.summary, task.id);
    let (number, url) = gh::pr_create(
        &project.path,
        &gh::NewPr {
            head: &task.branch,
            base: &base,
            title: &title,
            body: &body,
            draft: req.draft,
        },
    )?;
    Ok(gh::PrStatus {
        number,
        url,
        state: "OPEN".into(),
        branch: task.branch.clone(),
        draft: req.draft,
        ..Default::default()
    })
}
