//! Judging a group: the project's check command in every judged member's workspace (in
//! parallel, as many at once as there are cores, each killed at its timeout), the size of
//! each member's committed diff, and optionally a judge agent — started by the one
//! launcher in a scratch worktree of the project, given the prompt and every member's diff
//! and check result, answering with a ranking in RANKING.md (the format: docs/groups.md,
//! [`model::parse_ranking`]). The rank: [`model::rank`].

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::adapters::{check, fault, git, store};
use crate::error::{OrangeError, Result};
use crate::execution::config::Config;
use crate::execution::harness::{Harness, Start};
use crate::execution::launch::{Launch, Owner, Workspace};
use crate::execution::session::Mux;
use crate::execution::{pool, sandbox};
use crate::orchestration::group::model::{
    self, CheckResult, DiffSize, Group, Judgement, MemberResult,
};
use crate::orchestration::group::service::{members, MemberNow};
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
}

/// Judge `g`: its judgement, recorded in the group.
pub fn judge(tasks: &mut TaskService, g: &Group, req: &JudgeRequest) -> Result<Group> {
    let project = project::get(tasks.home, &g.project)?;
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
    let mut results: Vec<MemberResult> = judged
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
        ..Judgement::default()
    };
    if let Some(agent) = &req.agent {
        match ask_agent(tasks, &project, g, &base, &results, agent, req) {
            Ok(ranking) if ranking.is_empty() => {
                judgement.agent_error = Some("the judge's answer named no member".into())
            }
            Ok(ranking) => {
                for (place, (label, reason)) in ranking.into_iter().enumerate() {
                    if let Some(r) = results.iter_mut().find(|r| r.member == label) {
                        r.judge_place = Some(place + 1);
                        r.judge_reason = Some(reason);
                    }
                }
            }
            Err(e) => judgement.agent_error = Some(e.to_string()),
        }
    }
    model::rank(&mut results);
    judgement.notes = model::notes(&results, project.check_cmd.is_some());
    judgement.results = results;
    let groups = GroupStore::new(tasks.home);
    let _lock = tasks.store.lock(&g.project)?;
    let mut g = groups.load(&g.project, &g.id)?;
    g.judgement = Some(judgement);
    groups.save(&g)?;
    fault::point("group.judged");
    Ok(g)
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

/// Start a judge agent of `harness` through the launcher in a scratch worktree, wait for
/// its RANKING.md, and read it. The agent's session and worktree are removed after.
fn ask_agent(
    tasks: &mut TaskService,
    project: &Project,
    g: &Group,
    base: &str,
    results: &[MemberResult],
    harness: &str,
    req: &JudgeRequest,
) -> Result<Vec<(String, String)>> {
    let config = Config::load(tasks.home)?;
    let harness = Harness::resolve(Some(harness), &config)?;
    tasks.tmux.preflight()?;
    harness.preflight()?;
    let scratch = GroupStore::new(tasks.home).scratch(&g.project, &g.id);
    let dir = scratch.join("judge");
    remove_worktree(&project.path, &dir);
    store::ensure_dir(&scratch)?;
    git::worktree_add_detached(&project.path, &dir, base)?;
    let brief = judge_brief(tasks, project, g, base, results);
    std::fs::write(dir.join("JUDGE.md"), brief)
        .map_err(|e| OrangeError::io(format!("writing {}", dir.join("JUDGE.md").display()), e))?;
    let agent_dir = scratch.join("agent");
    store::ensure_dir(&agent_dir)?;
    let mux = Mux::Tmux(tasks.tmux.clone());
    let branch = format!("{}/judge", g.base);
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
        marks: vec![],
    };
    let started = launch.prepare()?.start()?;
    fault::point("group.judge.started");
    let target = started.session.id.clone().unwrap_or(started.session.target);
    let answer = wait_for_ranking(
        &dir.join("RANKING.md"),
        req.agent_timeout.unwrap_or(DEFAULT_JUDGE_TIMEOUT),
        || tasks.tmux.has_session(&target).unwrap_or(false),
    );
    let _ = tasks.tmux.kill_session(&target);
    remove_worktree(&project.path, &dir);
    let labels: Vec<String> = g.members.iter().map(|m| m.label.clone()).collect();
    Ok(model::parse_ranking(&answer?, &labels))
}

/// What the judge agent is told (the rest is in JUDGE.md).
const JUDGE_PROMPT: &str = "You are a judge. Read JUDGE.md in this directory: it holds a task, several attempts at it (each one's diff and check result) and the format of your answer. Rank the attempts, best first, and write your ranking to RANKING.md in this directory, in that format. Change nothing else.";

/// JUDGE.md: the prompt, each judged member's check result and diff, the answer format.
fn judge_brief(
    tasks: &TaskService,
    project: &Project,
    g: &Group,
    base: &str,
    results: &[MemberResult],
) -> String {
    let _ = tasks;
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
