//! One pass of the monitor over every active task: ONE tmux call to look
//! ([`snapshot::look`]), the crash repair on what it saw, the requests sandboxed agents
//! queued, then each agent judged ([`super::judge`]; the screens that must be read, in one
//! more tmux call for them all) and its policies applied ([`super::act`]); last, every open
//! task and lane classified for the snapshot the caller writes, publishes and notifies.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::json;

use crate::adapters::store::{self, LockGuard};
use crate::adapters::tmux::PaneInfo;
use crate::error::Result;
use crate::execution::sandbox;
use crate::orchestration::attention::session::Panes;
use crate::orchestration::attention::summary::Agents;
use crate::orchestration::footprint;
use crate::orchestration::observe::snapshot::{self, Snapshot};
use crate::orchestration::prompt;
use crate::orchestration::reconcile;
use crate::orchestration::repair::Repair;
use crate::orchestration::task::{Status, Task};

use super::act::{Judged, Resolved};
use super::{Monitor, PassReport};

impl<'a> Monitor<'a> {
    /// One pass over every active task. Passes are serialized (a short lock), so a pass
    /// started by hand never races the background monitor into a double nudge.
    pub fn pass(&mut self) -> Result<PassReport> {
        self.pass_within(Duration::from_secs(30))
    }

    /// [`Self::pass`], waiting at most `wait` for another pass to end (`lock_timeout`
    /// after that). It asks tmux ONCE ([`snapshot::look`]): the sessions and their marks
    /// for the crash repair, the panes for every agent; screens are read (one more call)
    /// only for agents whose state the screen can tell. The report carries the snapshot,
    /// classified after the policies acted, for the caller to write, publish and notify
    /// while the report (which holds the pass lock) lives.
    pub fn pass_within(&mut self, wait: Duration) -> Result<PassReport> {
        let pass = LockGuard::acquire_within(&self.home.root.join("run/monitor-pass.lock"), wait)?;
        let mut report = PassReport {
            lock: Some(pass),
            ..PassReport::default()
        };
        let mut snap = snapshot::look_keeping(self.home, &self.tmux, &mut self.kept.marks)?;
        crate::adapters::fault::pause("monitor.looked");
        // Crash leftovers first: an orphaned agent stopped, an interrupted spawn adopted.
        // The open tasks, read once for the whole pass (again only if a repair changed
        // some). A damaged task file must not blind the monitor to every other task: it
        // is counted (the widgets show it) and skipped here.
        self.begin_pass();
        let (mut open, mut unreadable) = self.read_open();
        self.read_pool()?;
        let repairs = self.repair(&snap, &open);
        if !repairs.is_empty() {
            // Sessions were stopped or adopted: look again.
            snap = snapshot::look_keeping(self.home, &self.tmux, &mut self.kept.marks)?;
            (open, unreadable) = self.read_open();
            self.read_pool()?;
        }
        self.after_repairs(&repairs, &mut report);
        // A place under a cap freed by a death an earlier pass recorded.
        if self.start_queued(&open, &mut report) {
            (open, unreadable) = self.read_open();
            self.read_pool()?;
        }
        if self.server.is_none() {
            self.server = snap.server_id.clone();
        }
        // What sandboxed agents asked of their tasks (they cannot write orange's state).
        if self.apply_requests(&open, &mut report) {
            (open, unreadable) = self.read_open();
        }
        // Their pull requests, when a project is due (one gh call for it).
        if self.refresh_prs(&open, &mut report) {
            (open, unreadable) = self.read_open();
        }
        // A task saved after the look began (one just started) may have a session that
        // look could not see yet: judged on it, it would read as gone (a false death,
        // told to the person). Look once more; a session gone for good costs this only
        // until its task is saved no more.
        if self.started_after_look(&snap, &open) {
            snap = snapshot::look_keeping(self.home, &self.tmux, &mut self.kept.marks)?;
        }
        let watched: Vec<&Task> = open.iter().filter(|t| self.watches(t)).collect();
        self.prepare_rules(watched.into_iter());
        let mut agents = self.judge_all(&open, &snap.panes, &mut report);
        let acted = self.as_acted_on(&open, &report, &mut agents);
        let open = acted.as_deref().unwrap_or(&open);
        self.reviewers(open, &snap.panes, &mut report);
        snapshot::summarize_tasks(self.home, &mut snap, open, unreadable, &agents);
        self.keep_agents(agents);
        report.snapshot = Some(snap);
        Ok(report)
    }

    /// Is there a watched task without its agent's pane in `snap` whose record was saved
    /// after `snap` was taken (or in the same second)?
    fn started_after_look(&self, snap: &Snapshot, open: &[Task]) -> bool {
        open.iter().any(|t| {
            self.watches(t)
                && crate::orchestration::attention::session::agent_pane(t, &snap.panes).is_none()
                && chrono::DateTime::parse_from_rfc3339(&t.updated_at)
                    // Saved in seconds: the look's own second counts as after it.
                    .is_ok_and(|at| at.timestamp() >= (snap.taken_at_ms / 1000) as i64)
        })
    }

    /// The crash repair on the sessions this pass saw (errors logged: the next pass tries
    /// again). `open`: the open tasks as the pass read them.
    fn repair(&mut self, snap: &Snapshot, open: &[Task]) -> Vec<Repair> {
        let known = reconcile::Known::new(open, self.tasks_read_at, self.pool());
        match reconcile::reconcile_seen(self.home, &self.tmux, snap.marked(), true, &known) {
            Ok(repairs) => repairs,
            Err(e) => {
                store::log(
                    self.home,
                    "warn",
                    "reconcile failed",
                    json!({"error": e.to_string(), "code": e.code()}),
                );
                Vec::new()
            }
        }
    }

    /// The repairs in the report, and what waited in a queue for a workspace they freed.
    fn after_repairs(&mut self, repairs: &[Repair], report: &mut PassReport) {
        report.actions.extend(
            repairs
                .iter()
                .map(|r| json!({"action": "reconciled", "repair": r})),
        );
        for next in self.tasks.after_repairs(repairs) {
            if let Some(id) = next.spawned {
                report.actions.push(
                    json!({"task": id, "action": "spawned", "reason": "a repair freed a workspace"}),
                );
            }
        }
    }

    /// Judge every agent this monitor watches and apply its task's policies; the screens
    /// that must be read are read together, in one tmux process for the whole pass.
    fn judge_all(&mut self, open: &[Task], panes: &[PaneInfo], report: &mut PassReport) -> Agents {
        let now = super::grace_clock();
        // When the pass looked, recorded with what it saw: taken before any agent's record
        // is read, so a hook that comes while this pass looks is newer.
        let stamp = now.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        let panes = Panes::new(panes);
        let mut judged = Vec::new();
        for task in open.iter() {
            if !self.watches(task) {
                continue;
            }
            report.checked += 1;
            let mut j = self.judge_task(task.clone(), &panes, now, &stamp, report);
            j.seen.oom = self.killed_at_limit(&j.task, j.seen.state);
            judged.push(j);
        }
        let read = std::time::Instant::now();
        self.read_footprints(open, &panes, now);
        report.footprint_ms = read.elapsed().as_secs_f64() * 1000.0;
        self.read_screens(&mut judged);
        let mut agents = Agents::new();
        for j in judged {
            let key = (j.task.project.clone(), j.task.id.clone());
            let id = j.task.id.clone();
            match self.check(j, now, report) {
                Ok(Some(info)) => {
                    agents.insert(key, info);
                }
                Ok(None) => {}
                Err(e) => report.actions.push(
                    json!({"task": id, "action": "error", "error": e.to_string(), "code": e.code()}),
                ),
            }
        }
        agents
    }

    /// What each watched agent's tree uses (`footprint`: every few seconds, from its
    /// cgroup, else one read of /proc for them all), and the cgroups of ended tasks
    /// removed.
    fn read_footprints(
        &mut self,
        open: &[Task],
        panes: &Panes<'_>,
        now: chrono::DateTime<chrono::Utc>,
    ) {
        use crate::execution::resources;
        let agents: Vec<footprint::Agent> = open
            .iter()
            .filter(|t| self.watches(t))
            .map(|t| footprint::Agent {
                id: &t.id,
                dir: self.tasks.store.dir(&t.project, &t.id),
                cgroup: (!t.limits.is_empty())
                    .then(|| resources::cgroup_name(&self.home.root, &t.id)),
                pane_pid: panes
                    .agent_pane(t)
                    .filter(|p| !p.pane_dead)
                    .map(|p| p.pane_pid),
            })
            .collect();
        if self
            .footprint
            .read(&agents, now.timestamp_millis().max(0) as u64)
        {
            // The agent cgroups of tasks no longer open: gone with their tasks. One whose
            // task this pass did not read may be a task recorded since (its agent about to
            // join it): the store is asked again before any is removed.
            let live: HashSet<&str> = open.iter().map(|t| t.id.as_str()).collect();
            let open_now = || {
                let now = self.tasks.store.list_open(None).ok()?;
                Some(now.into_iter().map(|t| t.id).collect())
            };
            crate::adapters::fault::pause("monitor.sweeping");
            for name in resources::sweep(&self.home.root, &live, &open_now) {
                store::log(
                    self.home,
                    "info",
                    "agent cgroup removed",
                    json!({"cgroup": name}),
                );
            }
        }
    }

    /// The memory limit a dead agent was killed at: its cgroup counted an OOM kill (`None`:
    /// alive, no memory limit, no cgroup, or none counted).
    fn killed_at_limit(
        &self,
        task: &Task,
        state: Option<crate::orchestration::agent::State>,
    ) -> Option<u64> {
        let limit = task.limits.memory?;
        if state != Some(crate::orchestration::agent::State::Dead) {
            return None;
        }
        let name = crate::execution::resources::cgroup_name(&self.home.root, &task.id);
        crate::execution::resources::agent_cgroup(&name)
            .is_some_and(|d| d.oom_kills() > 0)
            .then_some(limit)
    }

    /// An active task with a session on the tmux server this monitor watches. A session on
    /// another server (or on one that is gone) is not ours to judge (`orange restore`
    /// restarts tasks of a server that is gone).
    fn watches(&self, task: &Task) -> bool {
        task.status.is_active()
            && task.tmux_session_id.is_some()
            && (task.tmux_server.is_none() || task.tmux_server == self.server)
    }

    /// Judge one task's agent on what the pass saw (its screen not read yet), and bring
    /// its token use up to date.
    fn judge_task(
        &mut self,
        task: Task,
        panes: &Panes<'_>,
        now: chrono::DateTime<chrono::Utc>,
        stamp: &str,
        report: &mut PassReport,
    ) -> Judged {
        let task = self.learn_first_prompt(task, report);
        let task = self.learn_session(task, report);
        let dir = self.tasks.store.dir(&task.project, &task.id);
        let info = self.agent_record(&task, &dir);
        let policy = Resolved::of(&self.config, &task);
        let seen = self.judge(&task, &info, panes, now, policy.idle_grace);
        let mut sidebars = std::mem::take(&mut self.sidebars);
        let mates = crate::orchestration::teammates::observe(
            &self.tmux,
            self.rules_of(&task.harness),
            &task,
            panes,
            &mut sidebars,
        );
        self.sidebars = sidebars;
        // Unknown yet (this monitor's first look: a file may be left from before), or
        // teammates now or at the last pass: the file follows; a lone agent costs nothing.
        let had = self
            .had_teammates
            .insert(task.id.clone(), !mates.is_empty());
        let saved = if had != Some(false) || !mates.is_empty() {
            crate::orchestration::teammates::save(&dir, &mates)
        } else {
            Ok(())
        };
        if let Err(e) = saved {
            store::log(
                self.home,
                "warn",
                "teammates not recorded",
                json!({"task": task.id, "error": e.to_string(), "code": e.code()}),
            );
        }
        // Token use: only what its transcripts gained since the last pass is read.
        let reports = crate::orchestration::usage::harness_reports(&task.harness);
        if let (Some(conv), Some(ws), true) =
            (&task.agent_session_id, self.workspace_path(&task), reports)
        {
            if let Err(e) = crate::orchestration::usage::update(&dir, &ws, conv) {
                store::log(
                    self.home,
                    "warn",
                    "token use not updated",
                    json!({"task": task.id, "error": e.to_string(), "code": e.code()}),
                );
            }
        }
        Judged {
            task,
            info,
            stamp: stamp.to_string(),
            policy,
            seen,
        }
    }

    /// The screens the verdicts asked for, read in one tmux process, each weighed in.
    fn read_screens(&self, judged: &mut [Judged]) {
        let looks: Vec<&str> = judged
            .iter()
            .filter_map(|j| j.seen.look.as_deref())
            .collect();
        let screens = self.tmux.capture_panes(&looks).unwrap_or_default();
        let mut screens = screens.into_iter();
        for j in judged.iter_mut().filter(|j| j.seen.look.is_some()) {
            if let Some(s) = screens
                .next()
                .flatten()
                .and_then(|text| self.rules_of(&j.task.harness).classify(&text))
            {
                j.seen.apply(s);
            }
        }
    }

    /// The open tasks as this pass read them, but those its policies acted on read again
    /// (their agent's record dropped from `agents`; a task that ended meanwhile dropped):
    /// `None` when it acted on none (they are `open` as read).
    fn as_acted_on(
        &self,
        open: &[Task],
        report: &PassReport,
        agents: &mut Agents,
    ) -> Option<Vec<Task>> {
        let acted: HashSet<&str> = report
            .actions
            .iter()
            .filter_map(|a| a.get("task").and_then(|t| t.as_str()))
            .collect();
        if acted.is_empty() {
            return None;
        }
        let open = open
            .iter()
            .filter_map(|t| {
                if !acted.contains(t.id.as_str()) {
                    return Some(t.clone());
                }
                agents.remove(&(t.project.clone(), t.id.clone()));
                self.tasks
                    .store
                    .load(&t.project, &t.id)
                    .ok()
                    .filter(|t| !t.status.is_final())
            })
            .collect();
        Some(open)
    }

    /// A task started without a prompt: the first prompt typed into its agent, when the
    /// agent wrote it down itself (the hook that should have told it may have failed or not
    /// run), becomes its summary. The task as it is now.
    fn learn_first_prompt(&mut self, task: Task, report: &mut PassReport) -> Task {
        if !task.awaiting_prompt {
            return task;
        }
        let Some(text) = self
            .workspace_path(&task)
            .and_then(|ws| prompt::in_transcript(&task, &ws))
        else {
            return task;
        };
        match prompt::adopt(&self.tasks.store, &task, &text, "transcript") {
            Ok(Some(t)) => {
                report
                    .actions
                    .push(json!({"task": t.id, "action": "first_prompt", "via": "transcript"}));
                t
            }
            Ok(None) => task,
            Err(e) => {
                report.actions.push(json!({"task": task.id, "action": "error", "error": e.to_string(), "code": e.code()}));
                task
            }
        }
    }

    /// A sandboxed agent's conversation, which its own hook could not record (the task's
    /// state is read-only inside the sandbox): read from the program's own files (codex:
    /// its rollout's name), outside the sandbox, while the task knows none; recorded once.
    fn learn_session(&mut self, task: Task, report: &mut PassReport) -> Task {
        if task.sandbox == sandbox::Kind::None || task.agent_session_id.is_some() {
            return task;
        }
        let Ok(since) = chrono::DateTime::parse_from_rfc3339(&task.created_at) else {
            return task;
        };
        let kind = crate::execution::harness::kind_of(&task.harness);
        let Some(sid) = self
            .workspace_path(&task)
            .and_then(|ws| kind.session_from_files(&ws, since.into()))
        else {
            return task;
        };
        let via = "rollout";
        match super::hook::learn_session(&self.tasks.store, &task, &sid, false, via) {
            Ok(Some(_)) => {
                report
                    .actions
                    .push(json!({"task": task.id, "action": "session", "via": via}));
                self.tasks
                    .store
                    .load(&task.project, &task.id)
                    .unwrap_or(task)
            }
            Ok(None) => task,
            Err(e) => {
                report.actions.push(json!({"task": task.id, "action": "error", "error": e.to_string(), "code": e.code()}));
                task
            }
        }
    }

    /// Carry out the requests sandboxed agents queued (`task complete`, `stuck`,
    /// `update`); true when a task changed.
    fn apply_requests(&mut self, open: &[Task], report: &mut PassReport) -> bool {
        let mut changed = false;
        for task in open.iter().filter(|t| t.sandbox != sandbox::Kind::None) {
            let dir = self.tasks.store.dir(&task.project, &task.id);
            for req in sandbox::take_requests(&dir) {
                let done = self.apply_request(task, &req);
                changed |= done.is_ok();
                report.actions.push(match done {
                    Ok(t) => json!({"task": task.id, "action": "request", "op": req.op, "status": t.status}),
                    Err(e) => json!({"task": task.id, "action": "request", "op": req.op, "error": e.to_string(), "code": e.code()}),
                });
            }
            sandbox::requests_done(&dir);
        }
        changed
    }

    fn apply_request(&mut self, task: &Task, req: &sandbox::Request) -> Result<Task> {
        let via = "sandbox";
        let mut t = self.tasks.store.load(&task.project, &task.id)?;
        match req.op.as_str() {
            "complete" => t = self.tasks.set_status(&t, Status::Reviewing, via)?,
            "stuck" => t = self.tasks.set_status(&t, Status::Stuck, via)?,
            // Its hook heard the first prompt typed into an agent started without one.
            "prompt" => {
                if let Some(p) = &req.summary {
                    if let Some(adopted) = prompt::adopt(&self.tasks.store, &t, p, "hook")? {
                        t = adopted;
                    }
                }
            }
            "update" => {
                if let Some(s) = &req.summary {
                    t = self.tasks.set_summary(&t, s)?;
                }
                if let Some(s) = &req.status {
                    t = self.tasks.set_status(&t, Status::parse(s)?, via)?;
                }
            }
            other => {
                return Err(crate::error::OrangeError::invalid(format!(
                    "unknown request {other:?}"
                )))
            }
        }
        Ok(t)
    }
}
