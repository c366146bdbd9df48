//! The monitor's part in reviews: each reviewer at work is looked at in the pass (its end
//! read into a round, see `review::reviewer::check`), and `[review] on_complete` starts one
//! for each task that became ready for review — once per readiness: the reviewer's record,
//! written before its window is made, names the readiness it runs for, so a pass killed
//! half-way never starts a second one for it.

use serde_json::json;

use crate::adapters::store;
use crate::adapters::tmux::PaneInfo;
use crate::orchestration::attention::session::agent_pane;
use crate::orchestration::review::reviewer::{self, Ask, Trigger};
use crate::orchestration::task::{Status, Task};

use super::{Monitor, PassReport};

impl Monitor<'_> {
    /// Reviewers in this pass: the ended ones read, the due ones started.
    pub(super) fn reviewers(&mut self, open: &[Task], panes: &[PaneInfo], report: &mut PassReport) {
        for t in open {
            match reviewer::check(&mut self.tasks, t, panes) {
                Ok(Some(r)) => report.actions.push(json!({
                    "task": t.id, "action": "reviewer ended", "state": r.state, "round": r.round,
                })),
                Ok(None) => {}
                Err(e) => store::log(
                    self.home,
                    "warn",
                    "reviewer not read",
                    json!({"task": t.id, "error": e.to_string(), "code": e.code()}),
                ),
            }
        }
        let Some(oc) = self.config.review.on_complete.clone() else {
            return;
        };
        for t in open.iter().filter(|t| t.status == Status::Reviewing) {
            // Its session is there to hold the reviewer's window.
            if agent_pane(t, panes).is_none() {
                continue;
            }
            let dir = self.tasks.store.dir(&t.project, &t.id);
            let known = reviewer::load(&dir);
            if known.as_ref().is_some_and(|r| {
                r.state.running() || r.ready.as_deref() == Some(t.updated_at.as_str())
            }) {
                continue;
            }
            let ask = Ask {
                harness: &oc.agent,
                prompt: oc.prompt.as_deref(),
                send: oc.send,
                trigger: Trigger::OnComplete,
                ready: Some(t.updated_at.clone()),
            };
            match reviewer::start(&mut self.tasks, t, ask) {
                Ok(r) => report.actions.push(json!({
                    "task": t.id, "action": "reviewer started", "harness": r.harness, "guard": r.guard,
                })),
                Err(e) => {
                    store::log(
                        self.home,
                        "warn",
                        "reviewer not started",
                        json!({"task": t.id, "error": e.to_string(), "code": e.code()}),
                    );
                    // Never tried again for this readiness (a harness that is not there
                    // would fail every pass).
                    if reviewer::load(&dir).and_then(|r| r.ready) != Some(t.updated_at.clone()) {
                        let _ = reviewer::record_failed_start(&dir, &oc.agent, t.updated_at.clone(), &e);
                    }
                    let _ = self.tasks.store.append_history(
                        t,
                        "reviewer.failed",
                        json!({"harness": oc.agent, "detail": format!("could not start: {e}")}),
                    );
                }
            }
        }
    }
}
