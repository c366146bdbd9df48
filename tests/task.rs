//! Tasks end to end: real git, a real tmux server on a private socket with a hostile
//! config, and a fake agent (tests/fixtures/fake-agent.sh) as a user harness.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::path::PathBuf;

use common::{git, id, wait_for, Env, TaskEnv};
use serde_json::Value;

fn ws_of(env: &TaskEnv, v: &Value) -> PathBuf {
    env.ws_path(v["workspace"].as_str().unwrap())
}

#[test]
fn create_spawn_work_complete_merge_then_the_next_queued_task_starts() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "1"]);
    let t = env.create(&[
        "feature/login",
        "Add a login page",
        "--harness",
        "fake-complete",
    ]);
    assert_eq!(t["outcome"], "spawned");
    assert_eq!(t["status"], "working");
    assert_eq!(t["tmux_session"], "app/feature/login");
    let id1 = id(&t);
    // A second task waits: the pool holds one workspace.
    let q = env.create(&["feature/logout", "Add logout", "--harness", "fake-wait"]);
    assert_eq!(q["outcome"], "queued");
    assert_eq!(q["status"], "pending");
    assert!(q["note"].as_str().unwrap().contains("1/1"), "{q}");

    // The agent commits, reports complete and exits 0; its pane stays readable.
    env.wait_status(&id1, "reviewing");
    // task.json is written before its history line: wait for the line too.
    wait_for("two status changes in history", 10, || {
        env.task(&id1)["history"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["event"] == "status.changed")
            .count()
            == 2
    });
    let shown = env.wait_session(&id1, "dead");
    assert_eq!(shown["session"]["exit_status"], 0);
    let peek = env.ok(&["task", "peek", &id1]);
    assert!(
        peek["lines"]
            .as_str()
            .unwrap()
            .contains("reported complete: 0"),
        "{peek}"
    );
    let ws = ws_of(&env, &shown);
    assert_eq!(
        git(&ws, &["log", "-1", "--format=%s"]),
        format!("work {id1}")
    );

    let m = env.ok(&["task", "merge", &id1]);
    assert_eq!(m["status"], "done");
    assert_eq!(m["merge"]["via"], "ff");
    assert_eq!(m["workspace"], Value::Null);
    assert_eq!(
        git(&env.repo, &["log", "-1", "--format=%s", "main"]),
        format!("work {id1}")
    );
    assert!(
        env.repo.join(format!("work-{id1}.txt")).exists(),
        "main's checkout was fast-forwarded"
    );
    assert!(
        !env.tmux.has_session("app/feature/login"),
        "merge kills the session"
    );
    // The queued task took the freed workspace.
    assert_eq!(m["next"]["spawned"], id(&q));
    let q2 = env.task(&id(&q));
    assert_eq!(q2["status"], "working");
    assert_eq!(q2["workspace"], "app--1");
    assert!(q2["history"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["event"] == "auto.spawned"));
    env.wait_session(&id(&q), "live");
    // The released workspace was reset before reuse: no trace of the first task's files.
    let ws = ws_of(&env, &q2);
    assert_eq!(
        std::fs::read_link(ws.join("TASK.md")).unwrap(),
        env.home.join(format!("tasks/app/{}/TASK.md", id(&q)))
    );
    assert_eq!(
        git(&ws, &["rev-parse", "--abbrev-ref", "HEAD"]),
        "feature/logout"
    );
}

#[test]
fn hostile_prompts_reach_the_agent_intact_and_are_never_executed() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let summary = "Fix \"quotes\" and 'single' $(touch pwned1) `touch pwned2`; echo hi;\nsecond line\twith tab;";
    let t = env.create(&["fix/hostile", summary, "--harness", "fake-wait"]);
    let got = env.agent_log(&id(&t), "prompt");
    assert!(got.starts_with(summary), "prompt arrived changed: {got:?}");
    assert!(got.contains(&format!("orange task {}", id(&t))));
    let md = env.agent_log(&id(&t), "task-md");
    assert!(
        md.starts_with("# Fix \"quotes\" and 'single' $(touch pwned1)"),
        "{md}"
    );
    for dir in [env.repo.clone(), ws_of(&env, &t), env.root()] {
        assert!(
            !dir.join("pwned1").exists() && !dir.join("pwned2").exists(),
            "a shell ran the prompt in {}",
            dir.display()
        );
    }
    // A leading dash is data too.
    let t2 = env.create(&["fix/dash", "--not-an-option", "--harness", "fake-wait"]);
    assert!(env
        .agent_log(&id(&t2), "prompt")
        .starts_with("--not-an-option"));
}

#[test]
fn context_from_stdin_lands_in_task_md() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let c = env.cmd_in(
        &env.repo,
        &[
            "task",
            "create",
            "ctx/x",
            "Do it",
            "--harness",
            "fake-wait",
            "--context",
            "-",
            "--no-spawn",
            "--json",
        ],
    );
    let out = crate::common::output_with_stdin(c, b"Use the `auth` module.\n$(not run)\n");
    let (ok, v) = common::parse_json_output(&["create"], &out);
    assert!(ok, "{v}");
    assert_eq!(v["outcome"], "pending");
    let shown = env.task(&id(&v));
    let md = shown["task_md"].as_str().unwrap();
    assert!(
        md.contains("## Context\n\nUse the `auth` module.\n$(not run)"),
        "{md}"
    );
}

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
fn agent_exit_status_is_observed_and_the_pane_stays_readable() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "3"]);
    let fail = env.create(&["x/fail", "fail please", "--harness", "fake-fail"]);
    let ok0 = env.create(&["x/ok", "exit please", "--harness", "fake-exit0"]);
    let f = env.wait_session(&id(&fail), "dead");
    assert_eq!(f["session"]["exit_status"], 3);
    let o = env.wait_session(&id(&ok0), "dead");
    assert_eq!(o["session"]["exit_status"], 0);
    let peek = env.ok(&["task", "peek", &id(&fail), "--lines", "20"]);
    assert!(
        peek["lines"].as_str().unwrap().contains("giving up"),
        "{peek}"
    );
    // Killed by a signal.
    let w = env.create(&["x/killed", "wait", "--harness", "fake-wait"]);
    env.wait_session(&id(&w), "live");
    let pid = env
        .tmux
        .ok(&["display", "-p", "-t", "=app/x/killed:", "#{pane_pid}"]);
    std::process::Command::new("kill")
        .args(["-9", &pid])
        .status()
        .unwrap();
    let k = env.wait_session(&id(&w), "dead");
    assert_eq!(k["session"]["exit_signal"], 9, "{k}");
    let list = env.ok(&["task", "list"]);
    assert_eq!(list.as_array().unwrap().len(), 3);
}

#[test]
fn respawn_after_the_session_is_killed_reuses_workspace_and_branch() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let t = env.create(&["r/x", "keep going", "--harness", "fake-wait"]);
    let tid = id(&t);
    env.wait_session(&tid, "live");
    let m = env.err(&["task", "respawn", &tid], "invalid_transition");
    assert!(m.contains("still running"), "{m}");
    env.tmux.ok(&["kill-session", "-t", "=app/r/x"]);
    assert_eq!(env.task(&tid)["session"]["state"], "none");
    let r = env.ok(&["task", "respawn", &tid]);
    assert_eq!(r["workspace"], t["workspace"]);
    assert_eq!(r["tmux_session"], "app/r/x");
    assert_ne!(r["tmux_session_id"], t["tmux_session_id"]);
    env.wait_session(&tid, "live");
    wait_for("the respawn prompt", 10, || {
        env.agent_log(&tid, "prompt")
            .starts_with("Resuming: keep going")
    });
    assert_eq!(
        git(&ws_of(&env, &r), &["rev-parse", "--abbrev-ref", "HEAD"]),
        "r/x"
    );
    assert!(env.task(&tid)["history"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["event"] == "agent.respawned"));
    // A dead (exited) agent can be respawned too: the kept pane is replaced.
    env.tmux.ok(&["send-keys", "-t", "=app/r/x:", "C-d"]);
    env.wait_session(&tid, "dead");
    env.ok(&["task", "respawn", &tid]);
    env.wait_session(&tid, "live");
    assert_eq!(
        env.tmux
            .sessions()
            .iter()
            .filter(|s| s.starts_with("app/r/x"))
            .count(),
        1
    );
}

#[test]
fn cancel_kills_the_session_and_returns_the_workspace_but_keeps_uncommitted_work() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let t = env.create(&["c/x", "to cancel", "--harness", "fake-wait"]);
    let tid = id(&t);
    env.wait_session(&tid, "live");
    let m = env.err(&["task", "cancel", &tid], "invalid_argument");
    assert!(m.contains("--yes"), "{m}");
    assert_eq!(env.task(&tid)["status"], "working");
    let c = env.ok(&["task", "cancel", &tid, "--yes"]);
    assert_eq!(c["status"], "cancelled");
    assert_eq!(c["workspace"], Value::Null);
    assert!(!env.tmux.has_session("app/c/x"));
    assert_eq!(env.ok(&["workspace", "list"])[0]["status"], "available");
    env.err(&["task", "cancel", &tid, "--yes"], "invalid_transition");

    // With uncommitted work the workspace stays bound: nothing is lost.
    let t2 = env.create(&["c/y", "dirty", "--harness", "fake-wait"]);
    let ws = ws_of(&env, &t2);
    std::fs::write(ws.join("unsaved.txt"), "precious").unwrap();
    let c2 = env.ok(&["task", "cancel", &id(&t2), "--yes"]);
    assert_eq!(c2["status"], "cancelled");
    assert!(c2["note"].as_str().unwrap().contains("kept bound"), "{c2}");
    assert_eq!(
        std::fs::read_to_string(ws.join("unsaved.txt")).unwrap(),
        "precious"
    );
    // gc does not throw it away either.
    let gc = env.ok(&["workspace", "gc"]);
    assert_eq!(gc["skipped"][0]["code"], "worktree_dirty", "{gc}");
    // Nor does deleting the task's record: it would leave the workspace bound to nothing.
    let m = env.err(&["task", "delete", &id(&t2), "--yes"], "invalid_transition");
    assert!(
        m.contains("workspace release") && m.contains("--force"),
        "{m}"
    );
    // Only final tasks can be deleted.
    let t3 = env.create(&["c/z", "alive", "--harness", "fake-wait", "--no-spawn"]);
    env.err(&["task", "delete", &id(&t3), "--yes"], "invalid_transition");
    // Deleting a task also drops the sidebar's derived line-count cache.
    let cache = env.home.join(format!("run/sidebar/app--{tid}.json"));
    std::fs::create_dir_all(cache.parent().unwrap()).unwrap();
    std::fs::write(&cache, "{}").unwrap();
    env.ok(&["task", "delete", &tid, "--yes"]);
    env.err(&["task", "show", &tid], "task_not_found");
    assert!(!cache.exists());
}

#[test]
fn exact_session_targets_never_touch_a_prefix_neighbour() {
    let env = TaskEnv::new();
    env.add_project(&["--name", "p"]);
    // A live session whose name starts with the task's.
    env.tmux.ok(&[
        "new-session",
        "-d",
        "-s",
        "p/feature-x",
        "sh",
        "-c",
        "echo neighbour; exec cat",
    ]);
    let t = env.create(&["feat", "small", "--harness", "fake-wait"]);
    assert_eq!(t["tmux_session"], "p/feat");
    env.wait_session(&id(&t), "live");
    // Typing into / peeking at the task never reaches the neighbour.
    let peek = env.ok(&["task", "peek", &id(&t)]);
    assert!(!peek["lines"].as_str().unwrap().contains("neighbour"));
    env.ok(&["task", "cancel", &id(&t), "--yes"]);
    assert!(!env.tmux.has_session("p/feat"));
    assert!(
        env.tmux.has_session("p/feature-x"),
        "cancel of p/feat killed p/feature-x"
    );
    // The neighbour's name is not mistaken for the task's session.
    let shown = env.task(&id(&t));
    assert_eq!(shown["session"]["state"], "none");
}

/// A task's session is made by one tmux call: no `has-session` first, and `new-session`
/// tells which server made it. A name another session holds gives the task its id after
/// it (a call of its own), and the other session is left as it was.
#[test]
fn a_taken_session_name_gives_the_task_its_id_after_it_and_leaves_the_other_alone() {
    let env = TaskEnv::new();
    env.add_project(&["--name", "p"]);
    let create =
        |b: &str| env.ok_counting_tmux(&["task", "create", b, "x", "--harness", "fake-wait"]);
    let (t, calls) = create("free");
    assert_eq!(t["tmux_session"], "p/free");
    assert!(t["tmux_server"]["pid"].as_u64().is_some(), "{t}");
    let made: Vec<&String> = calls.iter().filter(|c| c.contains("new-session")).collect();
    assert_eq!(made.len(), 1, "{calls:#?}");
    assert!(
        !calls.iter().any(|c| c.contains("has-session")),
        "{calls:#?}"
    );
    // Another's session holds the name.
    env.tmux
        .ok(&["new-session", "-d", "-s", "p/taken", "sleep", "3600"]);
    let (t, calls) = create("taken");
    assert_eq!(t["tmux_session"], format!("p/taken-{}", id(&t)).as_str());
    let made = calls.iter().filter(|c| c.contains("new-session")).count();
    assert_eq!(made, 2, "{calls:#?}");
    env.wait_session(&id(&t), "live");
    assert_eq!(
        env.tmux
            .ok(&["show-options", "-qv", "-t", "=p/taken:", "@orange_task"]),
        ""
    );
    assert!(env
        .tmux
        .ok(&[
            "list-panes",
            "-t",
            "=p/taken:",
            "-F",
            "#{pane_start_command}"
        ])
        .contains("3600"));
    // The task's own session is the one orange acts on.
    env.ok(&["task", "cancel", &id(&t), "--yes"]);
    assert!(env.tmux.has_session("p/taken"));
}

#[test]
fn dotted_project_and_branch_names_are_sanitized_and_seen_alive() {
    let tmp_env = Env::with_repo("my.app");
    let env = TaskEnv::from_env(tmp_env);
    env.add_project(&[]);
    let t = env.create(&["fix.1", "dots", "--harness", "fake-wait"]);
    assert_eq!(t["tmux_session"], "my.app/fix.1".replace('.', "_"));
    let shown = env.wait_session(&id(&t), "live");
    assert_eq!(shown["project"], "my.app");
    assert!(env.tmux.has_session("my_app/fix_1"));
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
fn the_session_gets_orange_environment_and_the_agent_can_report_without_an_id() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let t = env.create(&["envy", "env check", "--harness", "fake-stuck"]);
    let tid = id(&t);
    let envs = env.agent_log(&tid, "env");
    let ws = ws_of(&env, &t);
    for want in [
        format!("ORANGE_TASK_ID={tid}"),
        "ORANGE_PROJECT=app".to_string(),
        format!("ORANGE_WORKSPACE={}", ws.display()),
        format!("ORANGE_HOME={}", env.home.display()),
        "ORANGE_WORKSPACE_NAME=app--1".to_string(),
        "ORANGE_WORKSPACE_INDEX=1".to_string(),
        "ORANGE_PORT=3101".to_string(),
    ] {
        assert!(
            envs.lines().any(|l| l == want),
            "missing {want} in:\n{envs}"
        );
    }
    // The session is marked as an orange task session (the plugin's keys rely on it).
    let sess = t["tmux_session_id"].as_str().unwrap();
    assert_eq!(
        env.tmux.ok(&["show", "-t", sess, "-v", "@orange_task"]),
        tid
    );
    // fake-stuck ran `orange task stuck` with no id: ORANGE_TASK_ID routed it.
    env.wait_status(&tid, "stuck");
    assert_eq!(
        std::fs::read_to_string(ws.join(".orange-outcome")).unwrap(),
        "stuck\n"
    );
    // From inside the workspace, without ORANGE_TASK_ID, the workspace names the task.
    let (ok, v) = env.json_in(&ws.join("src"), &["task", "update", "--status", "working"]);
    assert!(ok, "{v}");
    assert_eq!(v["id"], tid.as_str());
}

#[test]
fn status_changes_follow_the_transition_map() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let t = env.create(&["map", "m", "--harness", "fake-wait", "--no-spawn"]);
    let tid = id(&t);
    let m = env.err(&["task", "complete", &tid], "invalid_transition");
    assert!(m.contains("pending to reviewing"), "{m}");
    env.err(
        &["task", "update", &tid, "--status", "done"],
        "invalid_transition",
    );
    env.err(
        &["task", "update", &tid, "--status", "finished"],
        "invalid_argument",
    );
    env.err(&["task", "update", &tid], "invalid_argument");
    env.err(&["task", "merge", &tid], "invalid_transition");
    env.err(&["task", "show", "zzzzzz"], "task_not_found");
    env.err(&["task", "show", "../etc"], "task_not_found");
    env.ok(&["task", "spawn", &tid]);
    env.err(&["task", "spawn", &tid], "invalid_transition");
    env.ok(&["task", "update", &tid, "--status", "clarification"]);
    env.ok(&[
        "task",
        "update",
        &tid,
        "--status",
        "working",
        "--summary",
        "new \"summary\"",
    ]);
    let r = env.ok(&["task", "complete", &tid]);
    assert_eq!(r["status"], "reviewing");
    assert_eq!(r["summary"], "new \"summary\"");
    env.err(&["task", "stuck", &tid], "invalid_transition");
    let h: Vec<String> = env.task(&tid)["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(h.first().unwrap(), "task.created");
    assert_eq!(
        h.iter().filter(|e| *e == "status.changed").count(),
        4,
        "{h:?}"
    );
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
fn builtin_claude_gets_its_flags_a_session_id_and_the_settings_sync() {
    let env = TaskEnv::new();
    std::fs::create_dir_all(env.repo.join(".claude")).unwrap();
    std::fs::write(env.repo.join(".claude/settings.json"), "{\"model\":\"x\"}").unwrap();
    env.add_project(&[]);
    let t = env.create(&["cl", "hello claude", "--harness", "claude"]);
    let argv = env.agent_log(&id(&t), "argv");
    let lines: Vec<&str> = argv.lines().collect();
    assert_eq!(lines[0], "--dangerously-skip-permissions", "{argv}");
    assert_eq!(lines[1], "--session-id");
    assert_eq!(lines[2].len(), 36, "a uuid: {argv}");
    // The prompt is an argument, never an option: `--` before it.
    assert_eq!(lines[3], "--", "{argv}");
    assert!(lines[4].starts_with("hello claude"));
    assert_eq!(env.task(&id(&t))["agent_session_id"], lines[2]);
    let ws = ws_of(&env, &t);
    // Seed 003's settings sync: the project's settings, plus orange's hooks.
    let local: Value = serde_json::from_str(
        &std::fs::read_to_string(ws.join(".claude/settings.local.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(local["model"], "x");
    assert!(local["hooks"]["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .ends_with("hook agent Stop"));
    // It is excluded from git: the workspace stays clean.
    assert_eq!(git(&ws, &["status", "--porcelain"]), "");
    // Not installed → backend_not_found before anything is touched. (codex may be
    // installed here: the command runs with a PATH that has only what orange needs.)
    let bare = env.root().join("bare-bin");
    std::fs::create_dir_all(&bare).unwrap();
    for tool in ["tmux", "git", "sh"] {
        let real = which(tool);
        std::os::unix::fs::symlink(real, bare.join(tool)).unwrap();
    }
    let mut c = env.cmd_in(
        &env.repo,
        &["task", "create", "cx", "x", "--harness", "codex", "--json"],
    );
    c.env(
        "PATH",
        format!(
            "{}:{}",
            common::bin().parent().unwrap().display(),
            bare.display()
        ),
    );
    let args = ["task", "create", "cx"];
    let m = common::expect_error(
        &args,
        common::parse_json_output(&args, &c.output().unwrap()),
        "backend_not_found",
    );
    assert!(m.contains("codex"), "{m}");
    // Checked before anything is recorded: no hidden pending task is left behind.
    let pending = env.ok(&["task", "list", "--status", "pending"]);
    assert_eq!(pending.as_array().unwrap().len(), 0, "{pending}");
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

#[test]
fn attach_switches_the_client_inside_tmux_and_attaches_outside() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let t = env.create(&["att", "attach me", "--harness", "fake-wait"]);
    let tid = id(&t);
    env.wait_session(&tid, "live");
    let orange = common::bin();
    let home = env.home.display().to_string();
    // Outside tmux: a terminal (a pane of a second, outer server) runs `orange task attach`
    // with TMUX unset, which execs `tmux attach-session` to our server.
    let outer = common::TmuxServer::start(&env.root(), &[]);
    let script = format!(
        "unset TMUX; ORANGE_HOME={home} ORANGE_TMUX_SOCKET={} {} task attach {tid}",
        env.tmux.socket,
        orange.display()
    );
    outer.ok(&[
        "new-session",
        "-d",
        "-s",
        "term",
        "-x",
        "120",
        "-y",
        "40",
        "sh",
        "-c",
        &script,
    ]);
    wait_for("a client attached to the task session", 10, || {
        env.tmux
            .ok(&["list-clients", "-F", "#{client_session}"])
            .lines()
            .any(|l| l == "app/att")
    });
    // Inside tmux: from a pane of our server, switch-client moves that client.
    env.tmux
        .ok(&["new-session", "-d", "-s", "home", "sh", "-c", "exec cat"]);
    let client = env.tmux.ok(&["list-clients", "-F", "#{client_name}"]);
    env.tmux.ok(&[
        "switch-client",
        "-c",
        client.lines().next().unwrap(),
        "-t",
        "=home",
    ]);
    wait_for("the client to move home", 5, || {
        env.tmux.ok(&["list-clients", "-F", "#{client_session}"]) == "home"
    });
    let cmd = format!(
        "ORANGE_HOME={home} {} task attach {tid} > /tmp/orange-attach-{tid}.log 2>&1",
        orange.display()
    );
    env.tmux
        .ok(&["new-window", "-t", "=home:", "sh", "-c", &cmd]);
    wait_for("switch-client back to the task", 10, || {
        env.tmux.ok(&["list-clients", "-F", "#{client_session}"]) == "app/att"
    });
    let _ = std::fs::remove_file(format!("/tmp/orange-attach-{tid}.log"));
}

#[test]
fn gc_uses_the_task_store_and_a_corrupt_task_file_is_reported() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "2"]);
    let t = env.create(&["g/x", "g", "--harness", "fake-exit0"]);
    let tid = id(&t);
    // The task's record vanishes behind orange's back (its session too: a live one would
    // be stopped by the reconciliation every command starts with): gc frees its workspace.
    env.tmux
        .ok(&["kill-session", "-t", t["tmux_session_id"].as_str().unwrap()]);
    std::fs::remove_dir_all(env.home.join(format!("tasks/app/{tid}"))).unwrap();
    let gc = env.ok(&["workspace", "gc"]);
    assert_eq!(gc["released"], serde_json::json!(["app--1"]), "{gc}");
    // A corrupt task.json: state_corrupt with its path; gc keeps that task's workspace.
    let t2 = env.create(&["g/y", "g", "--harness", "fake-wait"]);
    let file = env.home.join(format!("tasks/app/{}/task.json", id(&t2)));
    std::fs::write(&file, "{broken").unwrap();
    let m = env.err(&["task", "show", &id(&t2)], "state_corrupt");
    assert!(m.contains(file.to_str().unwrap()), "{m}");
    env.err(&["task", "list"], "state_corrupt");
    let gc = env.ok(&["workspace", "gc"]);
    assert_eq!(gc["kept"].as_array().unwrap().len(), 1, "{gc}");
}

#[test]
fn user_harness_from_config_and_unknown_harness() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    env.err(
        &["task", "create", "h/x", "x", "--harness", "nope"],
        "invalid_argument",
    );
    std::fs::write(env.home.join("config.toml"), "[harness.broken\n").unwrap();
    let m = env.err(
        &["task", "create", "h/y", "x", "--harness", "fake-wait"],
        "state_corrupt",
    );
    assert!(m.contains("config.toml"), "{m}");
}

#[test]
fn a_workspace_freed_by_gc_starts_the_oldest_queued_task() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "1"]);
    let a = env.create(&["q/a", "a", "--harness", "fake-wait"]);
    let b = env.create(&["q/b", "b", "--harness", "fake-wait"]);
    let c = env.create(&["q/c", "c", "--harness", "fake-wait"]);
    assert_eq!(b["outcome"], "queued");
    assert_eq!(c["outcome"], "queued");
    env.tmux.ok(&["kill-session", "-t", "=app/q/a"]);
    std::fs::remove_dir_all(env.home.join(format!("tasks/app/{}", id(&a)))).unwrap();
    let gc = env.ok(&["workspace", "gc"]);
    assert_eq!(gc["released"], serde_json::json!(["app--1"]));
    assert_eq!(
        gc["next"]["spawned"],
        id(&b),
        "FIFO: the oldest pending task goes first"
    );
    assert_eq!(env.task(&id(&b))["status"], "working");
    assert_eq!(env.task(&id(&c))["status"], "pending");
}

#[test]
fn each_workspace_gets_a_stable_port_from_its_slot_and_the_project_base() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "3", "--port-base", "8000"]);
    let a = env.create(&["p/a", "a", "--harness", "fake-wait"]);
    let b = env.create(&["p/b", "b", "--harness", "fake-wait"]);
    let port = |v: &Value| {
        env.agent_log(&id(v), "env")
            .lines()
            .find_map(|l| l.strip_prefix("ORANGE_PORT=").map(str::to_string))
            .unwrap()
    };
    assert_eq!(port(&a), "8001");
    assert_eq!(port(&b), "8002");
    // The same slot gives the same port to the next task.
    env.ok(&["task", "cancel", &id(&a), "--yes"]);
    let c = env.create(&["p/c", "c", "--harness", "fake-wait"]);
    assert_eq!(c["workspace"], "app--1");
    assert_eq!(port(&c), "8001");
}

#[test]
fn list_all_groups_tasks_by_project() {
    let env = TaskEnv::new();
    let (web, _) = common::make_repo(&env.root(), "web");
    env.add_project(&[]);
    env.ok(&["project", "add", web.to_str().unwrap()]);
    let a1 = env.create(&["a/1", "one", "--harness", "fake-wait", "--no-spawn"]);
    let (ok, w1) = env.json_in(
        &web,
        &[
            "task",
            "create",
            "w/1",
            "web one",
            "--harness",
            "fake-wait",
            "--no-spawn",
        ],
    );
    assert!(ok, "{w1}");
    let a2 = env.create(&["a/2", "two", "--harness", "fake-wait", "--no-spawn"]);
    let all = env.ok(&["task", "list", "--all"]);
    let order: Vec<(&str, &str)> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["project"].as_str().unwrap(), t["id"].as_str().unwrap()))
        .collect();
    assert_eq!(
        order,
        [
            ("app", a1["id"].as_str().unwrap()),
            ("app", a2["id"].as_str().unwrap()),
            ("web", w1["id"].as_str().unwrap())
        ]
    );
    let out = env
        .cmd_in(&env.repo, &["task", "list", "--all"])
        .env("ORANGE_TMUX_SOCKET", &env.tmux.socket)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().next().unwrap().starts_with("PROJECT"),
        "{text}"
    );
}

/// The absolute path of `tool` on this machine's PATH.
fn which(tool: &str) -> std::path::PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{tool} is not on PATH"))
}

/// Seen over ssh: without a UTF-8 locale tmux printed orange's field separators
/// (and any non-ASCII text) as `_`, so no task could start from cron, systemd or a remote
/// command. orange now passes tmux `-u`.
#[test]
fn tasks_start_and_show_without_a_utf8_locale() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let run = |args: &[&str]| {
        let mut a = args.to_vec();
        a.push("--json");
        let out = env
            .cmd_in(&env.repo, &a)
            .env_remove("LANG")
            .env_remove("LC_ALL")
            .env_remove("LC_CTYPE")
            .output()
            .unwrap();
        common::parse_json_output(&a, &out)
    };
    let (ok, t) = run(&[
        "task",
        "create",
        "c/locale",
        "café ✓",
        "--harness",
        "fake-wait",
    ]);
    assert!(ok, "{t}");
    let tid = id(&t);
    wait_for("the session without a UTF-8 locale", 20, || {
        run(&["task", "show", &tid]).1["session"]["state"] == "live"
    });
    let (ok, st) = run(&["status", "--format", "json"]);
    assert!(ok, "{st}");
    assert_eq!(st["working"], 1, "{st}");
    assert_eq!(st["items"][0]["branch"], "c/locale", "{st}");
}

/// Seen over ssh: an agent could not find `orange` when orange itself was run
/// with a PATH that does not hold it (by absolute path, from cron or over ssh): tmux gives
/// a new session's pane the PATH of the tmux client, whatever `new-session -e PATH=…` says.
#[test]
fn the_agent_finds_this_orange_when_orange_was_run_by_its_path() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let out = env
        .cmd_in(
            &env.repo,
            &[
                "task",
                "create",
                "c/path",
                "finish",
                "--harness",
                "fake-complete",
                "--json",
            ],
        )
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .output()
        .unwrap();
    let (ok, t) = common::parse_json_output(&[], &out);
    assert!(ok, "{t}");
    let done = env.wait_status(&id(&t), "reviewing");
    assert_eq!(done["status"], "reviewing");
    let log = env.agent_log(&id(&t), "env");
    assert!(log.contains("ORANGE_BIN="), "{log}");
}

/// A new task's branch is made without `git checkout` (a ref and HEAD, no index refresh
/// of every file) — unless the repository has a `post-checkout` hook, which git's own
/// checkout runs: then git does it, and the hook sees the task's branch.
#[test]
fn a_post_checkout_hook_still_runs_when_a_task_takes_its_branch() {
    use std::os::unix::fs::PermissionsExt;
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
    std::fs::write(
        &hook,
        "#!/bin/sh\ngit rev-parse --abbrev-ref HEAD > \"$(git rev-parse --git-dir)/hooked-branch\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
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
