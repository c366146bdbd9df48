//! Several tasks created and started together (a group's members, `task create --n`):
//! each checked and recorded as `create` does one, then under the same hold of the
//! project's lock their workspaces bound at once (one hold of the pool's lock) and their
//! agents started in parallel, one thread each (the branch checked out, TASK.md linked,
//! the agent made ready through the launcher), their sessions all made at once by the
//! last thread to have its agent ready (`batch.rs`: one launcher call, one tmux call, in
//! the tasks' order), and each outcome recorded. A task that
//! cannot start is `failed` alone, its workspace given back; one the pool or a cap has no
//! room for waits in the queue; the others go on.
//!
//! The starts run while the project's lock is held, as one task's start does: that lock
//! is what tells every other command that a start is under way (the crash repair skips
//! a locked project, the queue and `task spawn` wait for it, `task cancel` cannot cancel
//! a task half-started). It is held about as long as one task's start, since the starts
//! run side by side. A command killed anywhere in here leaves what one task's start
//! killed leaves — pending tasks, maybe holding a workspace (released by the next
//! command, and the tasks started again from the queue) or with a session (adopted) —
//! at its fault points `group.members` (recorded), `group.bound` (workspaces bound) and
//! `group.started` (sessions started, not yet recorded).

use crate::adapters::fault;
use crate::adapters::git;
use crate::error::{OrangeError, Result};
use crate::execution::harness::{Harness, Start};
use crate::execution::launch;
use crate::execution::pool;
use crate::execution::session::Mux;
use crate::orchestration::project::Project;
use crate::orchestration::task::batch::{Batch, Seat};
use crate::orchestration::task::model::{self, Task};
use crate::orchestration::task::service::branch_free_among;
use crate::orchestration::task::service::TaskService;
use crate::orchestration::task::start::{new_task, CreateRequest, Created, Shared};

/// A task being started: where its result goes, its workspace, its record.
type Starting = (usize, pool::Workspace, Task);

impl TaskService<'_> {
    /// Create the tasks `reqs` asks for and start those with `spawn` together (see the
    /// module documentation). `recorded` is called once every task is recorded (`None`:
    /// one that could not be), on a thread of its own beside their starts, under the
    /// project's lock: a group writes its members' ids there (a command killed before it
    /// has leaves a group that finds its members by group and branch). `checked_out`: the
    /// project's worktrees and their branches, when the caller has just read them
    /// (`None`: read here, once for every task). One result per request, in order:
    /// `task_failed` for a task recorded failed, another error for one never recorded.
    pub fn create_together(
        &mut self,
        project: &Project,
        reqs: &[CreateRequest],
        checked_out: Option<git::CheckedOut>,
        recorded: &(dyn Fn(&[Option<Task>]) -> Result<()> + Sync),
    ) -> Result<Vec<Result<Created>>> {
        let shared = Shared::read(project, checked_out, reqs.iter().any(|r| r.spawn))?;
        let mut checked = vec![];
        for req in reqs {
            let c = self.check_create(project, req, Some(&shared));
            checked.push(c.and_then(|(h, s, l)| Ok((h, s, l, self.check_limits(&l)?))));
        }
        fault::point("create.checked");
        let _lock = self.store.lock(&project.name)?;
        // Their ids and branches settled at once (one read of the open tasks), then their
        // files written side by side.
        let open = self.store.list_open(Some(&project.name))?;
        let mut ids: Vec<String> = vec![];
        let planned: Vec<Result<Created>> = reqs
            .iter()
            .zip(checked)
            .map(|(req, c)| {
                let (h, s, l, warning) = c?;
                let id = model::new_id(|id| {
                    self.store.dir(&project.name, id).exists() || ids.iter().any(|i| i == id)
                });
                ids.push(id.clone());
                let task = new_task(project, req, &h, (s, l), id);
                branch_free_among(&open, &project.name, &task.branch, None)?;
                Ok(Created {
                    task,
                    outcome: "pending",
                    note: None,
                    warning,
                })
            })
            .collect();
        let this = &*self;
        let written: Vec<Result<()>> = std::thread::scope(|s| {
            let runs: Vec<_> = planned
                .iter()
                .zip(reqs)
                .map(|(p, req)| {
                    let task = p.as_ref().ok().map(|c| &c.task);
                    s.spawn(move || task.map_or(Ok(()), |t| this.write_new(t, req)))
                })
                .collect();
            runs.into_iter()
                .map(|r| {
                    r.join().unwrap_or_else(|_| {
                        Err(OrangeError::invalid(
                            "recording the task failed unexpectedly",
                        ))
                    })
                })
                .collect()
        });
        let mut out = vec![];
        let mut tasks = vec![];
        for (made, w) in planned.into_iter().zip(written) {
            let made = made.and_then(|c| w.map(|()| c));
            tasks.push(made.as_ref().ok().map(|c| c.task.clone()));
            out.push(made);
        }
        fault::point("group.members");
        let wanted: Vec<usize> = (0..reqs.len())
            .filter(|&i| reqs[i].spawn && out[i].is_ok())
            .collect();
        let (wrote, started) = std::thread::scope(|s| {
            let wrote = s.spawn(|| recorded(&tasks));
            let started = match wanted.is_empty() {
                true => Ok(()),
                false => self.start_together(project, &mut out, &wanted),
            };
            (wrote.join(), started)
        });
        started?;
        wrote.unwrap_or_else(|_| {
            Err(OrangeError::invalid(
                "recording the tasks together failed unexpectedly",
            ))
        })?;
        Ok(out)
    }

    /// Start the pending tasks `out[i]` for each `i` of `wanted` (the project's lock held).
    fn start_together(
        &mut self,
        project: &Project,
        out: &mut [Result<Created>],
        wanted: &[usize],
    ) -> Result<()> {
        let now = crate::orchestration::limits::clock();
        let mut go = vec![];
        for &i in wanted {
            let Ok(c) = &mut out[i] else { continue };
            // Its harness is at the account's usage limit: it starts after the reset.
            match crate::orchestration::limits::held(self.home, &c.task.harness, now) {
                Some(until) => queue(
                    c,
                    format!(
                        "held: {} is at its usage limit until {}; the task starts after the reset",
                        c.task.harness,
                        crate::execution::harness::limit::short(until, now)
                    ),
                ),
                None => go.push(i),
            }
        }
        // The caps counted once for all of them, held while they start.
        let (room, full, _fleet) = self.room_for_many(&project.name, go.len())?;
        for &i in &go[room..] {
            if let (Ok(c), Some(e)) = (&mut out[i], &full) {
                queue(c, e.to_string());
            }
        }
        let go = &go[..room];
        let ids: Vec<String> = go.iter().map(|&i| id_of(&out[i])).collect();
        let labels: Vec<&str> = ids.iter().map(String::as_str).collect();
        let bound = pool::acquire_many(self.home, project, &labels, &self.store)?;
        fault::point("group.bound");
        let mut starting: Vec<Starting> = vec![];
        for (&i, b) in go.iter().zip(bound) {
            match (b, &mut out[i]) {
                (Ok(ws), Ok(c)) => starting.push((i, ws, c.task.clone())),
                (Err(OrangeError::PoolExhausted { bound, size, .. }), Ok(c)) => queue(c, format!(
                    "the pool is full ({bound}/{size}); the task starts when a workspace is released"
                )),
                (Err(e), _) => {
                    let id = id_of(&out[i]);
                    out[i] = Err(self.not_started(&project.name, &id, e)?);
                }
                (Ok(_), Err(_)) => unreachable!("only recorded tasks are started"),
            }
        }
        for (i, ws, task, started) in self.start_in_parallel(project, starting)? {
            match started {
                Ok(task) => {
                    if let Ok(c) = &mut out[i] {
                        c.task = task;
                        c.outcome = "spawned";
                    }
                }
                Err(e) => {
                    let mut task = task;
                    self.undo_start(project, &mut task, &ws.name);
                    out[i] = Err(self.not_started(&project.name, &task.id, e)?);
                }
            }
        }
        Ok(())
    }

    /// Each task's agent started in its workspace and recorded `working`, one thread
    /// each, their sessions made at once when every thread has its agent ready (a
    /// [`Batch`]: one launcher call, one tmux call); how each start went (the task as it
    /// is then, and as recorded on success).
    #[allow(clippy::type_complexity)]
    fn start_in_parallel(
        &mut self,
        project: &Project,
        starting: Vec<Starting>,
    ) -> Result<Vec<(usize, pool::Workspace, Task, Result<Task>)>> {
        self.config()?;
        let config = self.config.as_ref().expect("loaded above");
        let this = &*self;
        let mux = Mux::Tmux(self.tmux.clone());
        let batch = Batch::new(starting.len(), |ready| launch::start_many(&mux, ready));
        let batch = &batch;
        let started = std::thread::scope(|s| {
            let runs: Vec<_> = starting
                .into_iter()
                .enumerate()
                .map(|(k, (i, ws, task))| {
                    let (w, mut t) = (ws.clone(), task.clone());
                    let run = s.spawn(move || {
                        // Its seat is given up if its start ends before it hands its
                        // session over (failed or panicked): the others do not wait.
                        let _seat = Seat(batch, k);
                        let hand = |ready| {
                            batch.hand(k, ready).unwrap_or_else(|| {
                                Err(OrangeError::invalid(
                                    "making the agents' sessions failed unexpectedly",
                                ))
                            })
                        };
                        let r = Harness::named(&t.harness, config).and_then(|h| {
                            this.start_in_workspace(
                                config,
                                project,
                                &mut t,
                                &h,
                                &w.name,
                                &w.path,
                                Start::First,
                                Some(&hand),
                            )
                        });
                        // Its session started, not yet recorded (the repair adopts it).
                        if r.is_ok() {
                            fault::point("group.started");
                        }
                        let r = r.and_then(|()| this.record_started(t.clone(), &w.name));
                        (t, r)
                    });
                    (i, ws, task, run)
                })
                .collect();
            runs.into_iter()
                .map(|(i, ws, task, run)| match run.join() {
                    Ok((t, r)) => (i, ws, t, r),
                    // Its record as it was: a session it may have started is the crash
                    // repair's to adopt or stop.
                    Err(_) => (
                        i,
                        ws,
                        task,
                        Err(OrangeError::invalid(
                            "starting its agent failed unexpectedly",
                        )),
                    ),
                })
                .collect()
        });
        Ok(started)
    }
}

/// A recorded task that waits in the queue, and why.
fn queue(c: &mut Created, why: String) {
    c.outcome = "queued";
    c.note = Some(why);
}

/// The id of a recorded task's result.
fn id_of(c: &Result<Created>) -> String {
    c.as_ref().map(|c| c.task.id.clone()).unwrap_or_default()
}
