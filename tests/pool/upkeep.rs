//! Pool upkeep: gc of gone tasks' workspaces (and the ones it must keep), shutdown, a
//! corrupt pool file, and the audit line of every mutation.

use crate::common;

use common::{git, Env};

use super::acquire;

#[test]
fn gc_releases_workspaces_of_gone_tasks_and_keeps_live_and_dirty_ones() {
    let env = Env::new();
    env.add_project(&["--pool-size", "4"]);
    acquire(&env, "gone-task"); // app--1: no such task in the store
    acquire(&env, "live"); // app--2: a live task
    acquire(&env, "finished"); // app--3: a done task
    acquire(&env, "gone-dirty"); // app--4: no task, uncommitted work
    let tasks = env.home.join("tasks/app");
    for (id, status, ws) in [
        ("live", "working", "app--2"),
        ("finished", "done", "app--3"),
    ] {
        std::fs::create_dir_all(tasks.join(id)).unwrap();
        std::fs::write(
            tasks.join(id).join("task.json"),
            serde_json::json!({"id": id, "status": status, "workspace": ws}).to_string(),
        )
        .unwrap();
    }
    std::fs::write(env.ws_path("app--4").join("wip.txt"), "work in progress").unwrap();

    let dry = env.ok(&["workspace", "gc", "--dry-run"]);
    assert_eq!(
        dry["released"],
        serde_json::json!(["app--1", "app--3", "app--4"])
    );
    assert!(
        env.pool_json()["workspaces"]["app--1"]["status"] == "bound",
        "dry run changed nothing"
    );

    let r = env.ok(&["workspace", "gc"]);
    assert_eq!(r["released"], serde_json::json!(["app--1", "app--3"]));
    assert_eq!(r["kept"], serde_json::json!(["app--2"]));
    assert_eq!(r["skipped"][0]["name"], "app--4");
    assert_eq!(r["skipped"][0]["code"], "worktree_dirty");
    assert_eq!(
        std::fs::read_to_string(env.ws_path("app--4").join("wip.txt")).unwrap(),
        "work in progress"
    );
    let pool = env.pool_json();
    assert_eq!(pool["workspaces"]["app--1"]["status"], "available");
    assert_eq!(pool["workspaces"]["app--2"]["status"], "bound");
    assert_eq!(pool["workspaces"]["app--4"]["status"], "bound");
}

#[test]
fn shutdown_refuses_unsaved_work_then_removes_everything_with_force() {
    let env = Env::new();
    env.add_project(&[]);
    env.ok(&["workspace", "init"]);
    acquire(&env, "t");
    std::fs::write(env.ws_path("app--1").join("wip.txt"), "wip").unwrap();
    let m = env.err(&["workspace", "shutdown"], "worktree_dirty");
    assert!(m.contains("app--1"), "{m}");
    assert!(
        env.ws_path("app--1").exists() && env.ws_path("app--2").exists(),
        "nothing removed"
    );

    let r = env.ok(&["workspace", "shutdown", "--force"]);
    assert_eq!(r["removed"], serde_json::json!(["app--1", "app--2"]));
    assert_eq!(r["pool_dir_removed"], true);
    assert!(!env.home.join("workspaces").exists());
    assert_eq!(
        git(&env.repo, &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
    // The pool starts again from nothing.
    assert_eq!(acquire(&env, "t")["name"], "app--1");
}

#[test]
fn corrupt_pool_file_is_reported_with_its_path_and_never_treated_as_empty() {
    let env = Env::new();
    env.add_project(&[]);
    acquire(&env, "t");
    let file = env.home.join("workspaces/.pool.json");
    std::fs::write(&file, "{\"workspaces\": {\"app--1\": ").unwrap();
    for args in [
        &["workspace", "list"][..],
        &["workspace", "acquire", "--task", "x"],
        &["workspace", "release", "app--1"],
        &["workspace", "init"],
        &["workspace", "gc"],
        &["workspace", "shutdown", "--force"],
    ] {
        let m = env.err(args, "state_corrupt");
        assert!(m.contains(file.to_str().unwrap()), "{args:?}: {m}");
    }
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "{\"workspaces\": {\"app--1\": "
    );
    assert!(env.ws_path("app--1").join("README.md").exists());
}

#[test]
fn every_mutation_writes_an_audit_line() {
    let env = Env::new();
    env.add_project(&[]);
    env.ok(&["workspace", "init"]);
    acquire(&env, "t");
    env.err(&["workspace", "release", "nope"], "workspace_not_found");
    env.ok(&["workspace", "release", "app--1"]);
    env.ok(&["workspace", "gc"]);
    env.ok(&["workspace", "shutdown"]);
    env.ok(&["workspace", "list", "--all"]);
    let ops: Vec<(String, bool)> = env
        .audit_ops()
        .iter()
        .map(|l| {
            (
                l["op"].as_str().unwrap().to_string(),
                l["ok"].as_bool().unwrap(),
            )
        })
        .collect();
    let want = [
        ("project.add", true),
        ("workspace.init", true),
        ("workspace.acquire", true),
        ("workspace.release", true),
        ("workspace.gc", true),
        ("workspace.shutdown", true),
    ];
    assert_eq!(
        ops,
        want.iter()
            .map(|(o, k)| (o.to_string(), *k))
            .collect::<Vec<_>>()
    );
    let acquire_line = &env.audit_ops()[2];
    assert_eq!(acquire_line["inputs"]["task"], "t");
    assert!(acquire_line["ts"].as_str().unwrap().ends_with('Z'));
}

#[test]
fn gc_skips_a_workspace_a_process_works_in_or_with_unpushed_commits_unless_forced() {
    let env = Env::new();
    env.add_project(&["--pool-size", "2"]);
    acquire(&env, "gone-1");
    acquire(&env, "gone-2");
    let (busy, ahead) = (env.ws_path("app--1"), env.ws_path("app--2"));
    let mut sleeper = std::process::Command::new("sleep")
        .arg("60")
        .current_dir(&busy)
        .spawn()
        .unwrap();
    git(&ahead, &["checkout", "-qb", "local-work"]);
    std::fs::write(ahead.join("w.txt"), "w").unwrap();
    git(&ahead, &["add", "w.txt"]);
    git(&ahead, &["commit", "-qm", "not pushed"]);
    let r = env.ok(&["workspace", "gc"]);
    assert_eq!(r["released"], serde_json::json!([]), "{r}");
    let reasons = r["skipped"].to_string();
    assert!(
        reasons.contains(&format!("pid {}", sleeper.id())) && reasons.contains("not pushed"),
        "{reasons}"
    );
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let r = env.ok(&["workspace", "gc", "--force"]);
    assert_eq!(
        r["released"],
        serde_json::json!(["app--1", "app--2"]),
        "{r}"
    );
    assert_eq!(
        git(&env.repo, &["log", "-1", "--format=%s", "local-work"]),
        "not pushed",
        "the branch keeps the commit"
    );
}
