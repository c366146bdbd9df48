//! Judging a group: the project's check command in every judged member's workspace (in
//! parallel, as many at once as there are cores, each killed at its timeout), the size of
//! each member's committed diff, and optionally a judge agent — started by the one
//! launcher in a scratch worktree of the project, given the prompt and every member's diff
//! and check result, answering with a ranking in RANKING.md (the format: docs/groups.md,
//! [`model::parse_ranking`]). The rank: [`model::rank`].
//!
//! A judge agent may take minutes: `group judge --agent` records the judgement of the
//! checks and diffs, starts the agent and returns (`--wait` waits for its answer). Its
//! ranking is read into the judgement by the next `group judge G` once it has answered,
//! or by the monitor ([`answered`]: `group judge G --collect --notify`), which tells the
//! people attached. The run is recorded before its session starts, so a command killed
//! in between leaves a session the next one finds by name and stops.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::adapters::{check, fault, git, store};
use crate::error::{OrangeError, Result};
use crate::execution::config::Config;
use crate::execution::harness::{Harness, Start};
use crate::execution::launch::{Launch, Owner, Workspace};
use crate::execution::session::Mux;
use crate::execution::{pool, sandbox};
use crate::orchestration::group::members::{members, MemberNow};
use crate::orchestration::group::model::{
    self, AgentRun, CheckResult, DiffSize, Group, Judgement, MemberResult,
};
use crate::orchestration::group::store::GroupStore;
use crate::orchestration::project::{self, Project};
use crate::orchestration::task::service::TaskService;

/// A check's timeout when the project sets none.
pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a judge agent has to write its ranking when the caller sets no limit.
pub const DEFAULT_JUDGE_TIMEOUT: Duration = Duration::from_secs(900);
/// Lines of a check's output kept.
const TAIL: usize = 8;
/// The most diff text a judge agent is given per member (bytes).
const MAX_PATCH: usize = 60_000;

/// `group judge G [--agent H] [--now]`.
#[derive(Debug, Clone, Default)]
pub struct JudgeRequest {
    /// Judge every member as it is, ready or not.
    pub now: bool,
    /// The judge agent's harness.
    pub agent: Option<String>,
    /// How long the judge agent may take (default [`DEFAULT_JUDGE_TIMEOUT`]).
    pub agent_timeout: Option<Duration>,
    /// Wait for the judge agent's answer (else return once it is started).
    pub wait: bool,
    /// Only read the answer of a judge agent at work (the monitor's call): nothing is
    /// judged again.
    pub collect: bool,
}

/// Judge `g`: its judgement, recorded in the group. With a judge agent at work and no new
/// one asked for, its answer is read instead (when it has one).
pub fn judge(tasks: &mut TaskService, g: &Group, req: &JudgeRequest) -> Result<Group> {
    let project = project::get(tasks.home, &g.project)?;
    if g.judging().is_some() {
        if req.agent.is_none() {
            return collect(tasks, &project, g, req.wait);
        }
        // A new judge replaces the one at work.
        stop_agent(tasks, &project, g);
    }
    if req.collect {
        return Ok(g.clone());
    }
    let now = members(tasks, g);
    let judged: Vec<&MemberNow> = now
        .iter()
        .filter(|m| m.task.is_some() && (req.now || m.is_ready()))
        .collect();
    if judged.is_empty() {
        let working = now.iter().filter(|m| m.is_working()).count();
        return Err(OrangeError::invalid(format!(
            "no member of group {} is ready for review ({working} still working); `--now` judges them as they are",
            g.id
        )));
    }
    let checks = run_checks(tasks, &project, &judged)?;
    let base = git::base_ref(&project.path, &project.default_branch)?;
    let diffs: Vec<Option<DiffSize>> = judged
        .iter()
        .map(|m| {
            git::compare::size(&project.path, &base, &m.member.branch)
                .ok()
                .map(|(files, added, removed)| DiffSize {
                    files,
                    added,
                    removed,
                })
        })
        .collect();
    let results: Vec<MemberResult> = judged
        .iter()
        .zip(&checks)
        .zip(&diffs)
        .map(|((m, c), d)| MemberResult {
            member: m.member.label.clone(),
            task: m.member.task.clone(),
            status: m.state.clone(),
            check: c.clone(),
            diff: *d,
            ..MemberResult::default()
        })
        .collect();
    let mut judgement = Judgement {
        at: store::now_rfc3339(),
        check_cmd: project.check_cmd.clone(),
        agent: req.agent.clone(),
        results,
        ..Judgement::default()
    };
    let Some(agent) = &req.agent else {
        finish(&mut judgement, None);
        return save_judgement(tasks, g, judgement);
    };
    // The judgement of the checks and diffs, and the run recorded before it starts.
    let timeout = req.agent_timeout.unwrap_or(DEFAULT_JUDGE_TIMEOUT);
    let run = AgentRun {
        session: crate::execution::launch::session_name(
            &Mux::Tmux(tasks.tmux.clone()),
            &g.project,
            &judge_branch(g),
        ),
        session_id: None,
        started_at: store::now_rfc3339(),
        until: (chrono::Utc::now() + timeout).to_rfc3339(),
    };
    judgement.agent_run = Some(run.clone());
    finish(&mut judgement, None);
    let mut g = save_judgement(tasks, g, judgement)?;
    fault::point("group.judge.recorded");
    match start_agent(tasks, &project, &g, &base, agent) {
        Ok(id) => {
            let mut started = run.clone();
            started.session_id = id.clone();
            let saved;
            (g, saved) = settle_run(tasks, &g, &run, Some(started), None)?;
            // Another judging replaced this one meanwhile: no one would read its answer.
            if !saved {
                if let Some(id) = &id {
                    let _ = tasks.tmux.kill_session(id);
                }
                return Ok(g);
            }
        }
        Err(e) => {
            // Nothing to wait for: the ranking without the judge's order, and why.
            remove_worktree(&project.path, &judge_dir(tasks, &g));
            return settle_run(tasks, &g, &run, None, Some(Err(e))).map(|(g, _)| g);
        }
    }
    fault::point("group.judge.started");
    match req.wait {
        true => collect(tasks, &project, &g, true),
        false => Ok(g),
    }
}

/// The judge's branch name (its session's name is made of it).
fn judge_branch(g: &Group) -> String {
    format!("{}/judge", g.base)
}

/// The judge agent's scratch worktree.
fn judge_dir(tasks: &TaskService, g: &Group) -> PathBuf {
    GroupStore::new(tasks.home)
        .scratch(&g.project, &g.id)
        .join("judge")
}

/// Rank the results with the judge's answer (`None`: none asked, or none yet) and say
/// what the ranking rests on.
fn finish(j: &mut Judgement, answer: Option<Result<Vec<(String, String)>>>) {
    match answer {
        Some(Ok(ranking)) if ranking.is_empty() => {
            j.agent_error = Some("the judge's answer named no member".into())
        }
        Some(Ok(ranking)) => {
            for (place, (label, reason)) in ranking.into_iter().enumerate() {
                if let Some(r) = j.results.iter_mut().find(|r| r.member == label) {
                    r.judge_place = Some(place + 1);
                    r.judge_reason = Some(reason);
                }
            }
        }
        Some(Err(e)) => j.agent_error = Some(e.to_string()),
        None => {}
    }
    model::rank(&mut j.results);
    j.notes = model::notes(&j.results, j.check_cmd.is_some());
}

/// Record `j`, a new judging, as `g`'s judgement (under the project's lock). When another
/// command started a judge agent meanwhile (`g` is the group as this one read it): a
/// judging with its own agent replaces it (stopped once the lock is let go), one without
/// keeps it at work, answering into `j`.
fn save_judgement(tasks: &TaskService, g: &Group, mut j: Judgement) -> Result<Group> {
    let groups = GroupStore::new(tasks.home);
    let own_agent = j.agent_run.is_some();
    let (saved, replaced) = {
        let _lock = tasks.store.lock(&g.project)?;
        let mut now = groups.load(&g.project, &g.id)?;
        let theirs = now.judging().filter(|r| g.judging() != Some(*r)).cloned();
        let replaced = match (theirs, &j.agent_run) {
            (Some(_), Some(_)) => {
                kill_agent(tasks, &now);
                true
            }
            (Some(theirs), None) => {
                j.agent = now.judgement.as_ref().and_then(|o| o.agent.clone());
                j.agent_run = Some(theirs);
                false
            }
            (None, _) => false,
        };
        // A judge agent of its own (asked after a verdict was told): its answer is told.
        if own_agent {
            now.notified = false;
        }
        now.judgement = Some(j);
        groups.save(&now)?;
        (now, replaced)
    };
    fault::point("group.judged");
    if replaced {
        let path = project::get(tasks.home, &g.project)?.path;
        remove_worktree(&path, &judge_dir(tasks, g));
    }
    Ok(saved)
}

/// The judge agent's run `was` of `g` settled, if the judgement on record still waits for
/// it (false, nothing saved, when another command recorded another meanwhile): it becomes
/// `then`, and its `answer` (when it has one) ranks the judgement as it is on record now —
/// what another judging wrote meanwhile included.
fn settle_run(
    tasks: &TaskService,
    g: &Group,
    was: &AgentRun,
    then: Option<AgentRun>,
    answer: Option<Result<Vec<(String, String)>>>,
) -> Result<(Group, bool)> {
    let groups = GroupStore::new(tasks.home);
    let _lock = tasks.store.lock(&g.project)?;
    let mut now = groups.load(&g.project, &g.id)?;
    if now.judging() != Some(was) {
        return Ok((now, false));
    }
    let mut j = now.judgement.clone().unwrap_or_default();
    if let Some(answer) = answer {
        finish(&mut j, Some(answer));
        j.at = store::now_rfc3339();
    }
    j.agent_run = then;
    now.judgement = Some(j);
    groups.save(&now)?;
    fault::point("group.judged");
    Ok((now, true))
}

/// Read the answer of `g`'s judge agent at work into its judgement, once it has one (its
/// RANKING.md written and settled, its session ended, or its time up); `wait`: wait for
/// it. Its session and worktree are removed then. As it is while it has none.
fn collect(tasks: &TaskService, project: &Project, g: &Group, wait: bool) -> Result<Group> {
    let Some(run) = g.judging().cloned() else {
        return Ok(g.clone());
    };
    let dir = judge_dir(tasks, g);
    let target = run.session_id.clone().unwrap_or(run.session.clone());
    let alive = || tasks.tmux.has_session(&target).unwrap_or(false);
    let left = until(&run);
    let answer = match wait {
        true => Some(wait_for_ranking(&dir.join("RANKING.md"), left, alive)),
        false => answered_now(&dir.join("RANKING.md"), &run, alive),
    };
    let Some(answer) = answer else {
        return Ok(g.clone());
    };
    let _ = tasks.tmux.kill_session(&target);
    last_member_row(tasks, g, false);
    remove_worktree(&project.path, &dir);
    let labels: Vec<String> = g.members.iter().map(|m| m.label.clone()).collect();
    let answer = answer.map(|a| model::parse_ranking(&a, &labels));
    settle_run(tasks, g, &run, None, Some(answer)).map(|(g, _)| g)
}

/// How long a run has left (zero once its time is up).
fn until(run: &AgentRun) -> Duration {
    chrono::DateTime::parse_from_rfc3339(&run.until)
        .ok()
        .and_then(|u| {
            (u.with_timezone(&chrono::Utc) - chrono::Utc::now())
                .to_std()
                .ok()
        })
        .unwrap_or(Duration::ZERO)
}

/// The judge's answer if it has one now: RANKING.md written and unchanged for a second
/// (or its session ended), an error when the session ended without one or its time is
/// up; `None` while it is at work.
fn answered_now(path: &Path, run: &AgentRun, alive: impl Fn() -> bool) -> Option<Result<String>> {
    let text = std::fs::read_to_string(path)
        .ok()
        .filter(|t| !t.trim().is_empty());
    let settled = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t.elapsed().is_ok_and(|e| e >= Duration::from_secs(1)));
    let over = until(run).is_zero();
    match text {
        Some(t) if settled || over || !alive() => Some(Ok(t)),
        None if over => Some(Err(OrangeError::invalid(
            "the judge agent wrote no RANKING.md in its time",
        ))),
        None if !alive() => Some(Err(OrangeError::invalid(
            "the judge agent ended without writing RANKING.md",
        ))),
        _ => None,
    }
}

/// Has the judge agent of `g` answered (or ended, or run out of time)? What the monitor
/// asks before it starts `group judge G --collect`.
pub fn answered(
    home: &crate::adapters::store::Home,
    tmux: &crate::adapters::tmux::Tmux,
    g: &Group,
) -> bool {
    let Some(run) = g.judging() else {
        return false;
    };
    // Recorded, its session not yet made (`group judge --agent` starts it just after):
    // still starting, unless its command died (it holds the group's judging lock).
    if run.session_id.is_none() && GroupStore::new(home).judging_runs(g) {
        return false;
    }
    let path = GroupStore::new(home)
        .scratch(&g.project, &g.id)
        .join("judge/RANKING.md");
    let target = run.session_id.clone().unwrap_or(run.session.clone());
    answered_now(&path, run, || tmux.has_session(&target).unwrap_or(false)).is_some()
}

/// Stop the judge agent at work of `g` (a group cancelled or picked: its answer would
/// rank a group that is over), saying `why` in the judgement. The group as recorded.
pub fn stop_judging(tasks: &TaskService, g: &Group, why: &str) -> Result<Group> {
    let groups = GroupStore::new(tasks.home);
    let now = {
        let _lock = tasks.store.lock(&g.project)?;
        let mut now = groups.load(&g.project, &g.id)?;
        if now.judging().is_none() {
            return Ok(now);
        }
        kill_agent(tasks, &now);
        if let Some(j) = now.judgement.as_mut() {
            j.agent_run = None;
            j.agent_error = Some(format!("the judge agent was stopped: {why}"));
        }
        groups.save(&now)?;
        now
    };
    // Its worktree (slow to remove) after the lock: no command acts on a run the record
    // no longer names, and the next judge agent's start clears what a kill leaves.
    remove_worktree(
        &project::get(tasks.home, &g.project)?.path,
        &judge_dir(tasks, g),
    );
    Ok(now)
}

/// Stop `g`'s judge agent at work and remove its worktree (a new judging replaces it).
fn stop_agent(tasks: &TaskService, project: &Project, g: &Group) {
    kill_agent(tasks, g);
    remove_worktree(&project.path, &judge_dir(tasks, g));
}

/// Stop `g`'s judge agent at work (its session; a quick tmux call, made before its record
/// lets it go, so that a command killed in between leaves no agent unrecorded).
fn kill_agent(tasks: &TaskService, g: &Group) {
    if let Some(run) = g.judging() {
        let _ = tasks
            .tmux
            .kill_session(run.session_id.as_deref().unwrap_or(&run.session));
    }
}

/// The project's check in every judged member's workspace, as many at once as there are
/// cores; `None` for a member without a workspace, or when the project has no check.
fn run_checks(
    tasks: &TaskService,
    project: &Project,
    judged: &[&MemberNow],
) -> Result<Vec<Option<CheckResult>>> {
    let Some(cmd) = &project.check_cmd else {
        return Ok(vec![None; judged.len()]);
    };
    let timeout = match &project.check_timeout {
        Some(t) => humantime::parse_duration(t)
            .map_err(|e| OrangeError::invalid(format!("check_timeout {t:?}: {e}")))?,
        None => DEFAULT_CHECK_TIMEOUT,
    };
    let dirs: Vec<Option<PathBuf>> = judged
        .iter()
        .map(|m| {
            let w = m.task.as_ref()?.workspace.as_ref()?;
            let ws = pool::find(tasks.home, w).ok()?;
            git::is_worktree_of(&project.path, &ws.path).then_some(ws.path)
        })
        .collect();
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut out: Vec<Option<CheckResult>> = vec![None; judged.len()];
    let work: Vec<(usize, &PathBuf)> = dirs
        .iter()
        .enumerate()
        .filter_map(|(i, d)| d.as_ref().map(|d| (i, d)))
        .collect();
    for batch in work.chunks(cores) {
        std::thread::scope(|s| {
            let runs: Vec<_> = batch
                .iter()
                .map(|(i, dir)| (*i, s.spawn(move || check::run(dir, cmd, timeout, TAIL))))
                .collect();
            for (i, h) in runs {
                out[i] = Some(match h.join() {
                    Ok(Ok(run)) => CheckResult {
                        passed: run.passed(),
                        exit_code: run.exit_code,
                        timed_out: run.timed_out,
                        duration_ms: run.duration.as_millis() as u64,
                        tail: run
                            .tail
                            .iter()
                            .map(|l| crate::text::lossy(l.clone().into_bytes()))
                            .collect(),
                    },
                    Ok(Err(e)) => CheckResult {
                        tail: vec![e.to_string()],
                        ..CheckResult::default()
                    },
                    Err(_) => CheckResult::default(),
                });
            }
        });
    }
    Ok(out)
}

/// Start a judge agent of `harness` through the launcher in a scratch worktree (a session
/// of the same name left by a killed command stopped first), given JUDGE.md: its
/// session's id. It shows in the picker under its group's members.
fn start_agent(
    tasks: &TaskService,
    project: &Project,
    g: &Group,
    base: &str,
    harness: &str,
) -> Result<Option<String>> {
    let results = g
        .judgement
        .as_ref()
        .map(|j| j.results.clone())
        .unwrap_or_default();
    let config = Config::load(tasks.home)?;
    let harness = Harness::resolve(Some(harness), &config)?;
    tasks.tmux.preflight()?;
    harness.preflight()?;
    let scratch = GroupStore::new(tasks.home).scratch(&g.project, &g.id);
    let dir = scratch.join("judge");
    remove_worktree(&project.path, &dir);
    store::ensure_dir(&scratch)?;
    git::worktree_add_detached(&project.path, &dir, base)?;
    let brief = judge_brief(project, g, base, &results);
    std::fs::write(dir.join("JUDGE.md"), brief)
        .map_err(|e| OrangeError::io(format!("writing {}", dir.join("JUDGE.md").display()), e))?;
    let agent_dir = scratch.join("agent");
    store::ensure_dir(&agent_dir)?;
    let mux = Mux::Tmux(tasks.tmux.clone());
    let branch = judge_branch(g);
    let name = crate::execution::launch::session_name(&mux, &g.project, &branch);
    if tasks.tmux.has_session(&name)? {
        tasks.tmux.kill_session(&name)?;
    }
    let launch = Launch {
        home: tasks.home,
        config: &config,
        project,
        owner: Owner::Task(&g.id),
        branch: &branch,
        workspace: Workspace {
            path: &dir,
            name: None,
        },
        harness: &harness,
        start: Start::First,
        prompt: Some(JUDGE_PROMPT.to_string()),
        conversation: None,
        permission_mode: None,
        sandbox: sandbox::Kind::None,
        limits: Default::default(),
        agent_dir: &agent_dir,
        task_md: None,
        mux: &mux,
        exit_file: None,
        marks: picker_marks(g, &harness.name),
    };
    let started = launch.prepare()?.start()?;
    last_member_row(tasks, g, true);
    Ok(started.session.id)
}

/// The judge's session in the picker: under its group (`└ judge `), saying what it
/// does. `@orange_task` (the group's id) puts it among the task sessions the picker
/// lists; without `@orange_home` the crash repair never takes it for a task's agent.
fn picker_marks(g: &Group, harness: &str) -> Vec<(String, String)> {
    vec![
        (crate::execution::session::TASK_MARK.into(), g.id.clone()),
        (
            crate::execution::session::TREE_MARK.into(),
            g.judge_picker_prefix(),
        ),
        (
            crate::orchestration::observe::snapshot::SESSION_OPTION.into(),
            crate::text::for_tmux(&format!("⚖ judging ({harness})")),
        ),
    ]
}

/// The last member's picker row: `├` while the judge's row hangs under it (`judging`),
/// `└` again after.
fn last_member_row(tasks: &TaskService, g: &Group, judging: bool) {
    let Some(last) = g.members.last() else {
        return;
    };
    let session = last
        .task
        .as_ref()
        .and_then(|id| tasks.store.load(&g.project, id).ok())
        .and_then(|t| t.tmux_session_id);
    if let (Some(s), Some(row)) = (session, g.picker_prefix(&last.branch)) {
        let row = match judging {
            true => row.replacen('└', "├", 1),
            false => row,
        };
        let _ = tasks.tmux.set_option(
            crate::adapters::tmux::OptionScope::Session(&s),
            crate::execution::session::TREE_MARK,
            &row,
        );
    }
}

/// What the judge agent is told (the rest is in JUDGE.md).
const JUDGE_PROMPT: &str = "You are a judge. Read JUDGE.md in this directory: it holds a task, several attempts at it (each one's diff and check result) and the format of your answer. Rank the attempts, best first, and write your ranking to RANKING.md in this directory, in that format. Change nothing else.";

/// JUDGE.md: the prompt, each judged member's check result and diff, the answer format.
fn judge_brief(project: &Project, g: &Group, base: &str, results: &[MemberResult]) -> String {
    let mut s = format!(
        "# Judge {} attempts\n\n## The task each attempt was given\n\n{}\n\n",
        results.len(),
        crate::text::for_agent(&g.prompt)
    );
    for r in results {
        let Some(m) = g.members.iter().find(|m| m.label == r.member) else {
            continue;
        };
        s.push_str(&format!(
            "## Member /{} ({}, branch {})\n\n",
            m.label, m.harness, m.branch
        ));
        match &r.check {
            Some(c) => s.push_str(&format!(
                "Check `{}`: {}{}\n\n",
                project.check_cmd.as_deref().unwrap_or(""),
                if c.passed { "passed" } else { "FAILED" },
                if c.tail.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; its last lines:\n\n```\n{}\n```",
                        crate::text::for_agent(&c.tail.join("\n"))
                    )
                }
            )),
            None => s.push_str("Check: not run\n\n"),
        }
        let mut patch = git::compare::patch(&project.path, base, &m.branch).unwrap_or_default();
        if patch.len() > MAX_PATCH {
            let mut cut = MAX_PATCH;
            while !patch.is_char_boundary(cut) {
                cut -= 1;
            }
            patch.truncate(cut);
            patch.push_str("\n… (diff cut here)\n");
        }
        s.push_str(&format!(
            "```diff\n{}\n```\n\n",
            crate::text::for_agent(&patch)
        ));
    }
    s.push_str(RANKING_FORMAT);
    s
}

/// The documented answer format (docs/groups.md).
pub const RANKING_FORMAT: &str = "## Your answer\n\nWrite RANKING.md with one line per attempt, best first, each `/MEMBER: reason` (the member as named in its heading above, the reason on the same line, one sentence). For example:\n\n```\n/2: passes its checks and changes the least\n/1: works but rewrites an unrelated module\n```\n";

/// Wait until `path` holds an answer that no longer changes, the agent's session ends, or
/// `timeout` passes.
fn wait_for_ranking(path: &Path, timeout: Duration, alive: impl Fn() -> bool) -> Result<String> {
    let until = Instant::now() + timeout;
    let mut last: Option<String> = None;
    loop {
        let now = std::fs::read_to_string(path)
            .ok()
            .filter(|t| !t.trim().is_empty());
        if now.is_some() && now == last {
            return Ok(now.unwrap_or_default());
        }
        if now.is_none() && !alive() {
            return Err(OrangeError::invalid(
                "the judge agent ended without writing RANKING.md",
            ));
        }
        if Instant::now() >= until {
            return now.ok_or_else(|| {
                OrangeError::invalid(format!(
                    "the judge agent wrote no RANKING.md within {}",
                    humantime::format_duration(timeout)
                ))
            });
        }
        last = now;
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Remove a scratch worktree (and what is left of its directory).
fn remove_worktree(repo: &Path, dir: &Path) {
    if dir.exists() {
        let _ = git::worktree_remove(repo, dir);
        let _ = std::fs::remove_dir_all(dir);
        let _ = git::worktree_prune(repo);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::store::Home;
    use crate::adapters::tmux::{Server, Tmux};

    /// A judge agent recorded but not yet started (its session made just after, by the
    /// command that holds the group's judging lock) is not taken for one that ended
    /// without answering; once that command is gone, it is.
    #[test]
    fn a_judge_agent_recorded_but_not_started_is_still_starting_while_its_command_runs() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home {
            root: dir.path().to_path_buf(),
        };
        // No server on this socket: no session runs.
        let tmux = Tmux::new(Server::Path(dir.path().join("no-server")));
        let g = Group {
            id: "abc123".into(),
            project: "app".into(),
            judgement: Some(Judgement {
                agent_run: Some(AgentRun {
                    session: "app/x/judge".into(),
                    session_id: None,
                    started_at: store::now_rfc3339(),
                    until: (chrono::Utc::now() + chrono::Duration::minutes(15)).to_rfc3339(),
                }),
                ..Judgement::default()
            }),
            ..Group::default()
        };
        let groups = GroupStore::new(&home);
        let held = store::lock_shared(&groups.judging_lock("app", "abc123")).unwrap();
        assert!(!answered(&home, &tmux, &g));
        drop(held);
        assert!(answered(&home, &tmux, &g));
    }
}
