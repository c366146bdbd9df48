//! A task's branch: hostile names refused, local and remote branches reused, rename,
//! merge (a merged PR, uncommitted work, no fast-forward), and a post-checkout hook.

use crate::common;

use common::{git, id, TaskEnv};
use serde_json::Value;

use super::ws_of;

#[test]
fn hostile_branch_names_are_refused_before_anything_is_written() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    for bad in [
        "a b", "a..b", "fix:1", "-x", "--nope", "x~1", "a^", "a*b", ".hidden", "end/", "x.lock",
    ] {
        let m = env.err(
            &["task", "create", bad, "s", "--harness", "fake-wait"],
            "invalid_argument",
        );
        assert!(
            m.contains("invalid branch name") || m.contains("unexpected argument"),
            "{bad:?}: {m}"
        );
    }
    assert!(
        !env.home.join("tasks/app").exists()
            || std::fs::read_dir(env.home.join("tasks/app"))
                .unwrap()
                .flatten()
                .all(|e| !e.path().is_dir())
    );
    assert_eq!(env.tmux.sessions(), ["keepalive"]);
    // One task per branch.
    env.create(&["dup", "one", "--harness", "fake-wait", "--no-spawn"]);
    let m = env.err(
        &["task", "create", "dup", "two", "--harness", "fake-wait"],
        "invalid_argument",
    );
    assert!(m.contains("already belongs to task"), "{m}");
}

#[test]
fn branch_rules_reuse_local_and_remote_branches_and_refuse_one_checked_out_elsewhere() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "3"]);
    // A local branch with a commit.
    git(&env.repo, &["branch", "local-only"]);
    git(&env.repo, &["checkout", "-q", "local-only"]);
    std::fs::write(env.repo.join("l.txt"), "l").unwrap();
    git(&env.repo, &["add", "l.txt"]);
    git(&env.repo, &["commit", "-qm", "local work"]);
    let local_tip = git(&env.repo, &["rev-parse", "HEAD"]);
    git(&env.repo, &["checkout", "-q", "main"]);
    // A branch that exists only on origin.
    let other = env.root().join("other-clone");
    git(
        &env.root(),
        &[
            "clone",
            "-q",
            env.origin.to_str().unwrap(),
            other.to_str().unwrap(),
        ],
    );
    git(&other, &["checkout", "-qb", "remote-only"]);
    std::fs::write(other.join("r.txt"), "r").unwrap();
    git(&other, &["add", "r.txt"]);
    git(&other, &["commit", "-qm", "remote work"]);
    git(&other, &["push", "-q", "origin", "remote-only"]);
    git(&env.repo, &["fetch", "-q", "origin"]);
    let remote_tip = git(&env.repo, &["rev-parse", "origin/remote-only"]);

    let a = env.create(&["local-only", "reuse local", "--harness", "fake-wait"]);
    assert_eq!(git(&ws_of(&env, &a), &["rev-parse", "HEAD"]), local_tip);
    let b = env.create(&["remote-only", "reuse remote", "--harness", "fake-wait"]);
    let wsb = ws_of(&env, &b);
    assert_eq!(git(&wsb, &["rev-parse", "HEAD"]), remote_tip);
    assert_eq!(
        git(&wsb, &["rev-parse", "--abbrev-ref", "@{upstream}"]),
        "origin/remote-only"
    );

    // The default branch is refused at the door: a task works on a branch of its own.
    let m = env.err(
        &[
            "task",
            "create",
            "main",
            "on main",
            "--harness",
            "fake-wait",
        ],
        "invalid_argument",
    );
    assert!(m.contains("default branch"), "{m}");
    // A branch checked out in the main repository: a clear error before anything is
    // recorded or bound.
    git(&env.repo, &["checkout", "-qb", "feature/here"]);
    let before = env.ok(&["workspace", "list"]);
    let m = env.err(
        &[
            "task",
            "create",
            "feature/here",
            "here",
            "--harness",
            "fake-wait",
        ],
        "invalid_argument",
    );
    assert!(
        m.contains("checked out in") && m.contains(env.repo.to_str().unwrap()),
        "{m}"
    );
    assert_eq!(env.ok(&["workspace", "list"]), before);
    let tasks = env.ok(&["task", "list"]);
    assert_eq!(
        tasks.as_array().unwrap().len(),
        2,
        "nothing recorded: {tasks}"
    );
    // A waiting task whose branch someone checked out in the main repository since: its
    // start says where, and gives its workspace back.
    let later = env.ok(&["task", "create", "later/x", "later", "--no-spawn"]);
    git(&env.repo, &["checkout", "-qb", "later/x"]);
    let m = env.err(&["task", "spawn", &id(&later)], "invalid_argument");
    assert!(
        m.contains("kept as failed")
            && m.contains("checked out in")
            && m.contains(env.repo.to_str().unwrap()),
        "{m}"
    );
    let ws = env.ok(&["workspace", "list"]);
    let held: Vec<&Value> = ws
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["task"].as_str() == Some(id(&later).as_str()))
        .collect();
    assert!(held.is_empty(), "its workspace given back: {ws}");
}

#[test]
fn branch_rename_and_record() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let t = env.create(&["", "unnamed", "--harness", "fake-wait"]);
    let tid = id(&t);
    assert_eq!(t["branch"], format!("orange-tasks/{tid}"));
    let ws = ws_of(&env, &t);
    let r = env.ok(&["task", "update", &tid, "--branch", "feature/named"]);
    assert_eq!(r["branch"], "feature/named");
    assert_eq!(
        git(&ws, &["rev-parse", "--abbrev-ref", "HEAD"]),
        "feature/named"
    );
    // The agent renames the branch itself, then records it.
    git(&ws, &["branch", "-m", "feature/renamed-by-agent"]);
    let r = env.ok(&["task", "update", &tid, "--branch"]);
    assert_eq!(r["branch"], "feature/renamed-by-agent");
    env.err(
        &["task", "update", &tid, "--branch", "bad name"],
        "invalid_argument",
    );
}

#[test]
fn merge_skips_the_local_merge_when_the_pr_is_merged_and_says_when_pr_status_is_unknown() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "2"]);
    let a = env.create(&["pr/a", "a", "--harness", "fake-complete"]);
    let b = env.create(&["pr/b", "b", "--harness", "fake-complete"]);
    env.wait_status(&id(&a), "reviewing");
    env.wait_status(&id(&b), "reviewing");
    let main_before = git(&env.repo, &["rev-parse", "main"]);
    let mut c = env.cmd_in(&env.repo, &["task", "merge", &id(&a), "--json"]);
    c.env("FAKE_GH_STATE", "MERGED");
    let (ok, v) = common::parse_json_output(&["merge"], &c.output().unwrap());
    assert!(ok, "{v}");
    assert_eq!(v["merge"]["via"], "pr");
    assert_eq!(v["merge"]["pr"]["number"], 42);
    assert_eq!(
        git(&env.repo, &["rev-parse", "main"]),
        main_before,
        "no local merge"
    );
    // Without gh on PATH: orange works and says PR status is unknown.
    let path_without_gh = common::gh_standin::path_without_gh(&env.root(), &env.path);
    let mut c = env.cmd_in(
        &env.repo,
        &["task", "merge", &id(&b), "--strategy", "merge", "--json"],
    );
    c.env("PATH", path_without_gh);
    let (ok, v) = common::parse_json_output(&["merge"], &c.output().unwrap());
    assert!(ok, "{v}");
    assert_eq!(v["merge"]["via"], "merge");
    assert!(
        v["merge"]["pr"]["reason"]
            .as_str()
            .unwrap()
            .contains("gh is not installed"),
        "{v}"
    );
    assert_eq!(
        git(&env.repo, &["log", "-1", "--format=%s", "main"]),
        "Merge branch 'pr/b'"
    );
}

#[test]
fn merge_refuses_uncommitted_work_and_a_branch_that_cannot_fast_forward() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let t = env.create(&["m/x", "m", "--harness", "fake-complete"]);
    let tid = id(&t);
    env.wait_status(&tid, "reviewing");
    let ws = ws_of(&env, &t);
    std::fs::write(ws.join("late.txt"), "late").unwrap();
    env.err(&["task", "merge", &tid, "--local"], "worktree_dirty");
    std::fs::remove_file(ws.join("late.txt")).unwrap();
    // main moves on: a fast-forward is impossible.
    std::fs::write(env.repo.join("main.txt"), "m").unwrap();
    git(&env.repo, &["add", "main.txt"]);
    git(&env.repo, &["commit", "-qm", "main moves"]);
    let m = env.err(
        &["task", "merge", &tid, "--local"],
        "backend_command_failed",
    );
    assert!(m.contains("--strategy merge"), "{m}");
    assert_eq!(
        env.task(&tid)["status"],
        "reviewing",
        "a failed merge changes nothing"
    );
    env.ok(&["task", "merge", &tid, "--local", "--strategy", "merge"]);
}

/// A new task's branch is made without `git checkout` (a ref and HEAD, no index refresh
/// of every file) — unless the repository has a `post-checkout` hook, which git's own
/// checkout runs: then git does it, and the hook sees the task's branch.
#[test]
fn a_post_checkout_hook_still_runs_when_a_task_takes_its_branch() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "2"]);
    let plain = env.create(&["plain/one", "x", "--harness", "fake-wait"]);
    let ws = ws_of(&env, &plain);
    assert_eq!(
        git(&ws, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "plain/one"
    );
    assert!(git(&ws, &["status", "--porcelain"]).trim().is_empty());
    let hook = env.repo.join(".git/hooks/post-checkout");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    common::write_script(&hook, "#!/bin/sh\ngit rev-parse --abbrev-ref HEAD > \"$(git rev-parse --git-dir)/hooked-branch\"\n");
    let hooked = env.create(&["hooked/one", "x", "--harness", "fake-wait"]);
    let ws = ws_of(&env, &hooked);
    let gitdir = git(&ws, &["rev-parse", "--git-dir"]);
    let seen = std::fs::read_to_string(std::path::Path::new(gitdir.trim()).join("hooked-branch"))
        .unwrap_or_default();
    assert_eq!(
        seen.trim(),
        "hooked/one",
        "the hook did not see the task's branch"
    );
}
