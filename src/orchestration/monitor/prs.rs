//! The monitor's look at pull requests: the open PRs of open tasks refreshed with ONE
//! `gh pr list` per project, at most once a [`EVERY`] (when each project was last asked
//! is kept on disk, `run/pr-refresh.json`, so that `monitor --once` runs keep to it too),
//! never once per task per pass. What changed is saved with the task and told in its
//! history: `pr.checks_failed`, `pr.checks_passed`, `pr.changes_requested`,
//! `pr.approved`, `pr.merged`, `pr.closed`. Without gh on PATH nothing is asked: the
//! PR's state stays what it was (the sidebar says gh is not installed).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

use crate::adapters::{gh, shell, store};
use crate::orchestration::project;
use crate::orchestration::task::pr::recorded;
use crate::orchestration::task::Task;

use super::{age, grace_clock, Monitor, PassReport};

/// How often a project's pull requests are asked for, at most.
pub const EVERY: Duration = Duration::from_secs(60);

/// The most PRs one `gh pr list` returns (newest first): a task's PR is a recent one.
const LIMIT: u32 = 100;

impl Monitor<'_> {
    /// Refresh the open PRs of `open` tasks whose project is due: whether any task changed
    /// (the pass reads the open tasks again).
    pub(super) fn refresh_prs(&mut self, open: &[Task], report: &mut PassReport) -> bool {
        let mut by_project: BTreeMap<&str, Vec<&Task>> = BTreeMap::new();
        for t in open {
            if !t.status.is_final() && recorded(t).is_some_and(|p| p.state == "OPEN") {
                by_project.entry(t.project.as_str()).or_default().push(t);
            }
        }
        if by_project.is_empty() || !shell::on_path("gh") {
            return false;
        }
        let path = self.home.root.join("run/pr-refresh.json");
        let mut last: BTreeMap<String, String> = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let now = grace_clock();
        let mut changed = false;
        for (name, tasks) in by_project {
            if last.get(name).is_some_and(|at| age(at, now) < EVERY) {
                continue;
            }
            last.insert(name.to_string(), now.to_rfc3339());
            let Ok(project) = project::get(self.home, name) else {
                continue;
            };
            let prs = match gh::pr_list(&project.path, LIMIT) {
                Ok(prs) => prs,
                Err(e) => {
                    report
                        .actions
                        .push(json!({"project": name, "action": "pr.refresh_failed", "error": e.to_string()}));
                    continue;
                }
            };
            for t in tasks {
                changed |= self.update_pr(t, &prs, report);
            }
        }
        let _ = store::write_json_atomic(&path, &last);
        changed
    }

    /// Save what gh says now of task `t`'s PR, with an event for each change.
    fn update_pr(&mut self, t: &Task, prs: &[gh::PrStatus], report: &mut PassReport) -> bool {
        let Some(old) = recorded(t) else {
            return false;
        };
        let Some(new) = prs.iter().find(|p| p.number == old.number) else {
            return false;
        };
        if *new == old {
            return false;
        }
        let store = &self.tasks.store;
        let Ok(_lock) = store.lock(&t.project) else {
            return false;
        };
        let Ok(mut task) = store.load(&t.project, &t.id) else {
            return false;
        };
        task.pr = serde_json::to_value(new).ok();
        if store.save(&task).is_err() {
            return false;
        }
        for (event, data) in changes(&old, new) {
            let _ = store.append_history(&task, event, data.clone());
            report
                .actions
                .push(json!({"task": task.id, "action": event, "pr": new.number}));
        }
        true
    }
}

/// The events between two looks at one PR.
pub fn changes(old: &gh::PrStatus, new: &gh::PrStatus) -> Vec<(&'static str, Value)> {
    let mut v = vec![];
    let n = json!({"number": new.number});
    if new.state != old.state {
        match new.state.as_str() {
            "MERGED" => v.push(("pr.merged", n.clone())),
            "CLOSED" => v.push(("pr.closed", n.clone())),
            _ => {}
        }
    }
    let (o, c) = (old.checks, new.checks);
    if c.failed > 0 && o.failed == 0 {
        v.push((
            "pr.checks_failed",
            json!({"number": new.number, "failed": c.failed, "total": c.total}),
        ));
    } else if c.total > 0 && c.failed == 0 && c.pending == 0 && (o.failed > 0 || o.pending > 0) {
        v.push((
            "pr.checks_passed",
            json!({"number": new.number, "total": c.total}),
        ));
    }
    if new.review != old.review {
        match new.review.as_str() {
            "CHANGES_REQUESTED" => v.push(("pr.changes_requested", n.clone())),
            "APPROVED" => v.push(("pr.approved", n)),
            _ => {}
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pr(failed: u32, pending: u32, review: &str, state: &str) -> gh::PrStatus {
        gh::PrStatus {
            number: 7,
            state: state.into(),
            review: review.into(),
            checks: gh::Checks {
                total: 3,
                passed: 3 - failed - pending,
                failed,
                pending,
            },
            ..Default::default()
        }
    }

    fn names(old: &gh::PrStatus, new: &gh::PrStatus) -> Vec<&'static str> {
        changes(old, new).into_iter().map(|(e, _)| e).collect()
    }

    #[test]
    fn each_change_is_one_event_and_no_change_none() {
        let running = pr(0, 2, "", "OPEN");
        assert!(names(&running, &running).is_empty());
        assert_eq!(names(&running, &pr(1, 1, "", "OPEN")), ["pr.checks_failed"]);
        assert!(names(&pr(1, 1, "", "OPEN"), &pr(2, 0, "", "OPEN")).is_empty());
        assert_eq!(
            names(&pr(1, 0, "", "OPEN"), &pr(0, 0, "", "OPEN")),
            ["pr.checks_passed"]
        );
        assert_eq!(
            names(&running, &pr(0, 2, "CHANGES_REQUESTED", "OPEN")),
            ["pr.changes_requested"]
        );
        assert_eq!(
            names(
                &pr(0, 0, "CHANGES_REQUESTED", "OPEN"),
                &pr(0, 0, "APPROVED", "MERGED")
            ),
            ["pr.merged", "pr.approved"]
        );
    }
}
