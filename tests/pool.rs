//! The workspace pool against real git: init, acquire, release, gc, shutdown, healing.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::path::Path;

use common::{git, git_output, make_repo, Env};
use serde_json::Value;

fn acquire(env: &Env, label: &str) -> Value {
    env.ok(&["workspace", "acquire", "--task", label])
}

fn head(dir: &Path) -> String {
    git(dir, &["rev-parse", "HEAD"])
}

#[test]
fn init_creates_detached_worktrees_at_origin_default_and_twice_creates_nothing() {
    let env = Env::new();
    env.add_project(&["--pool-size", "3"]);
    let r = env.ok(&["workspace", "init"]);
    assert_eq!(r["created"].as_array().unwrap().len(), 3);
    let origin_main = git(&env.repo, &["rev-parse", "origin/main"]);
    for n in 1..=3 {
        let p = env.ws_path(&format!("app--{n}"));
        assert_eq!(head(&p), origin_main);
        let sym = git_output(&p, &["symbolic-ref", "-q", "HEAD"]);
        assert!(!sym.status.success(), "app--{n} must be detached");
    }
    let r = env.ok(&["workspace", "init"]);
    assert_eq!(r["created"].as_array().unwrap().len(), 0);
    assert_eq!(r["workspaces"].as_array().unwrap().len(), 3);
    let worktrees = git(&env.repo, &["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 4, "{worktrees}");
}

#[test]
fn a_stray_directory_is_skipped_and_never_reused() {
    let env = Env::new();
    env.add_project(&["--pool-size", "3"]);
    let stray = env.ws_path("app--2");
    std::fs::create_dir_all(&stray).unwrap();
    std::fs::write(stray.join("precious.txt"), "user data").unwrap();
    let r = env.ok(&["workspace", "init"]);
    assert_eq!(r["skipped"][0], stray.to_str().unwrap());
    let names: Vec<&str> = r["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["app--3", "app--4", "app--5"]);
    assert_eq!(
        std::fs::read_to_string(stray.join("precious.txt")).unwrap(),
        "user data"
    );
    // Shutdown leaves it alone too.
    env.ok(&["workspace", "shutdown"]);
    assert_eq!(
        std::fs::read_to_string(stray.join("precious.txt")).unwrap(),
        "user data"
    );
}

#[test]
fn init_validates_the_base_ref() {
    let env = Env::new();
    env.add_project(&[]);
    env.ok(&["project", "update", "--default-branch", "nope"]);
    let m = env.err(&["workspace", "init"], "invalid_argument");
    assert!(m.contains("\"nope\""), "{m}");
    assert!(!env.ws_path("app--1").exists());
}

#[test]
fn setup_command_runs_in_each_new_worktree_and_its_failure_names_the_worktree() {
    let env = Env::new();
    env.add_project(&[
        "--setup-cmd",
        "echo \"$ORANGE_WORKSPACE_NAME\" > setup-ran.txt",
    ]);
    env.ok(&["workspace", "init"]);
    for n in 1..=2 {
        let name = format!("app--{n}");
        let got = std::fs::read_to_string(env.ws_path(&name).join("setup-ran.txt")).unwrap();
        assert_eq!(got.trim(), name);
    }
    env.ok(&[
        "project",
        "update",
        "--pool-size",
        "3",
        "--setup-cmd",
        "echo boom >&2; exit 7",
    ]);
    let m = env.err(&["workspace", "init"], "backend_command_failed");
    assert!(
        m.contains("app--3") && m.contains("exit status 7") && m.contains("boom"),
        "{m}"
    );
    // The failed slot leaves nothing behind: no record, no directory, no worktree.
    assert!(env.pool_json()["workspaces"].get("app--3").is_none());
    assert!(!env.ws_path("app--3").exists());
    assert!(!git(&env.repo, &["worktree", "list"]).contains("app--3"));
}

#[test]
fn acquire_creates_lazily_and_exhaustion_names_bound_over_size_without_changing_the_pool() {
    let env = Env::new();
    env.add_project(&[]);
    let a = acquire(&env, "t1");
    assert_eq!(a["name"], "app--1");
    assert_eq!(a["status"], "bound");
    assert_eq!(a["task"], "t1");
    assert_eq!(a["project"], "app");
    assert!(Path::new(a["path"].as_str().unwrap())
        .join("README.md")
        .exists());
    assert_eq!(acquire(&env, "t2")["name"], "app--2");
    let before = std::fs::read(env.home.join("workspaces/.pool.json")).unwrap();
    let m = env.err(&["workspace", "acquire", "--task", "t3"], "pool_exhausted");
    assert!(m.contains("2/2"), "{m}");
    assert_eq!(
        before,
        std::fs::read(env.home.join("workspaces/.pool.json")).unwrap()
    );
}

#[test]
fn pool_file_is_in_seed_format() {
    let env = Env::new();
    env.add_project(&[]);
    env.ok(&["workspace", "init"]);
    acquire(&env, "app/dark-mode");
    let pool = env.pool_json();
    assert_eq!(pool["workspaces"]["app--1"]["status"], "bound");
    assert_eq!(pool["workspaces"]["app--1"]["task"], "app/dark-mode");
    assert_eq!(pool["workspaces"]["app--2"]["status"], "available");
    // A file written by the original (seed 000 format, no extra fields) is read.
    std::fs::write(
        env.home.join("workspaces/.pool.json"),
        r#"{"workspaces":{"app--1":{"status":"bound","task":"x"},"app--2":{"status":"available"}}}"#,
    )
    .unwrap();
    let list = env.ok(&["workspace", "list"]);
    assert_eq!(list[0]["name"], "app--1");
    assert_eq!(list[0]["project"], "app");
    assert_eq!(list[0]["path"], env.ws_path("app--1").to_str().unwrap());
    assert_eq!(acquire(&env, "y")["name"], "app--2");
}

#[test]
fn wait_returns_when_a_slot_is_released_and_times_out_otherwise() {
    let env = Env::new();
    env.add_project(&["--pool-size", "1"]);
    acquire(&env, "holder");
    let m = env.err(
        &["workspace", "acquire", "--task", "w", "--wait", "300ms"],
        "pool_exhausted",
    );
    assert!(m.contains("1/1"), "{m}");

    let waiter = env
        .cmd(&[
            "workspace",
            "acquire",
            "--task",
            "waiter",
            "--wait",
            "60s",
            "--json",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Released only once the waiter found the pool full and sleeps before its next try
    // (the kernel names where a process sleeps in /proc/<pid>/wchan).
    let pid = waiter.id();
    common::wait_for("the waiter to wait", 10, || {
        std::fs::read_to_string(format!("/proc/{pid}/wchan")).is_ok_and(|w| w.contains("nanosleep"))
    });
    let waiter = std::thread::spawn(move || waiter.wait_with_output().unwrap());
    env.ok(&["workspace", "release", "app--1"]);
    let out = waiter.join().unwrap();
    let (ok, v) = common::parse_json_output(&["acquire --wait"], &out);
    assert!(ok, "{v}");
    assert_eq!(v["name"], "app--1");
    assert_eq!(v["task"], "waiter");
    env.err(
        &["workspace", "acquire", "--task", "w", "--wait", "soon"],
        "invalid_argument",
    );
}

#[test]
fn release_refuses_uncommitted_work_without_force() {
    let env = Env::new();
    env.add_project(&[]);
    let ws = env.ws_path("app--1");
    acquire(&env, "t");
    type Case<'a> = (&'a str, Box<dyn Fn() + 'a>);
    let cases: Vec<Case> = vec![
        (
            "untracked",
            Box::new(|| std::fs::write(ws.join("new.txt"), "x").unwrap()),
        ),
        (
            "modified",
            Box::new(|| std::fs::write(ws.join("README.md"), "changed").unwrap()),
        ),
        (
            "staged",
            Box::new(|| {
                std::fs::write(ws.join("staged.txt"), "s").unwrap();
                git(&ws, &["add", "staged.txt"]);
            }),
        ),
    ];
    for (what, make) in cases {
        make();
        let m = env.err(&["workspace", "release", "app--1"], "worktree_dirty");
        assert!(m.contains("app--1"), "{what}: {m}");
        assert_eq!(
            env.pool_json()["workspaces"]["app--1"]["status"],
            "bound",
            "{what}"
        );
        git(&ws, &["reset", "-q", "--hard"]);
        git(&ws, &["clean", "-fdq"]);
    }
}

#[test]
fn release_resets_everything_but_leaves_the_task_branch_and_ignored_caches() {
    let env = Env::new();
    env.add_project(&[]);
    acquire(&env, "t");
    let ws = env.ws_path("app--1");
    let base = head(&ws);
    // Branch work, committed.
    git(&ws, &["checkout", "-qb", "task/feature"]);
    std::fs::write(ws.join("feature.txt"), "feature").unwrap();
    git(&ws, &["add", "feature.txt"]);
    git(&ws, &["commit", "-qm", "feature"]);
    let tip = head(&ws);
    // Uncommitted: modified, staged, untracked; orange's own files; an ignored cache.
    std::fs::write(ws.join("README.md"), "changed").unwrap();
    std::fs::write(ws.join("staged.txt"), "s").unwrap();
    git(&ws, &["add", "staged.txt"]);
    std::fs::create_dir_all(ws.join("junk")).unwrap();
    std::fs::write(ws.join("junk/untracked.txt"), "u").unwrap();
    std::os::unix::fs::symlink(env.root().join("TASK-source.md"), ws.join("TASK.md")).unwrap();
    std::fs::write(ws.join(".orange-outcome"), "done").unwrap();
    std::fs::create_dir_all(ws.join("cache")).unwrap();
    std::fs::write(ws.join("cache/build.bin"), "warm").unwrap();

    let r = env.ok(&["workspace", "release", "app--1", "--force"]);
    assert_eq!(r["status"], "available");
    assert_eq!(r["outcome"], "reset");
    assert_eq!(head(&ws), base);
    assert!(
        !git_output(&ws, &["symbolic-ref", "-q", "HEAD"])
            .status
            .success(),
        "HEAD is detached"
    );
    assert_eq!(git(&ws, &["status", "--porcelain", "--ignored=no"]), "");
    assert_eq!(
        std::fs::read_to_string(ws.join("README.md")).unwrap(),
        "hello\n"
    );
    for gone in [
        "staged.txt",
        "junk",
        "TASK.md",
        ".orange-outcome",
        "feature.txt",
    ] {
        assert!(
            ws.join(gone).symlink_metadata().is_err(),
            "{gone} survived release"
        );
    }
    assert_eq!(
        std::fs::read_to_string(ws.join("cache/build.bin")).unwrap(),
        "warm",
        "ignored caches keep the pool warm"
    );
    assert_eq!(
        git(&env.repo, &["rev-parse", "task/feature"]),
        tip,
        "the task branch must not move"
    );
    // The released slot is the next one handed out.
    assert_eq!(acquire(&env, "again")["name"], "app--1");
}

#[test]
fn clean_release_after_committing_on_a_branch_needs_no_force() {
    let env = Env::new();
    env.add_project(&[]);
    acquire(&env, "t");
    let ws = env.ws_path("app--1");
    git(&ws, &["checkout", "-qb", "task/x"]);
    std::fs::write(ws.join("x.txt"), "x").unwrap();
    git(&ws, &["add", "x.txt"]);
    git(&ws, &["commit", "-qm", "x"]);
    let tip = head(&ws);
    env.ok(&["workspace", "release", "app--1"]);
    assert_eq!(git(&env.repo, &["rev-parse", "task/x"]), tip);
    // Releasing again is harmless.
    assert_eq!(
        env.ok(&["workspace", "release", "app--1"])["outcome"],
        "already_available"
    );
}

#[test]
fn commits_on_a_detached_head_that_no_branch_holds_count_as_unsaved() {
    let env = Env::new();
    env.add_project(&[]);
    acquire(&env, "t");
    let ws = env.ws_path("app--1");
    std::fs::write(ws.join("orphan.txt"), "o").unwrap();
    git(&ws, &["add", "orphan.txt"]);
    git(&ws, &["commit", "-qm", "orphan"]);
    let m = env.err(&["workspace", "release", "app--1"], "worktree_dirty");
    assert!(m.contains("no branch references"), "{m}");
    // Once a branch holds the commit, release is allowed.
    git(&ws, &["branch", "keep"]);
    env.ok(&["workspace", "release", "app--1"]);
}

#[test]
fn a_slot_whose_reset_fails_is_recycled_not_lost() {
    let env = Env::new();
    env.add_project(&[]);
    acquire(&env, "t");
    let ws = env.ws_path("app--1");
    std::fs::write(ws.join("README.md"), "changed").unwrap();
    // A stale index.lock makes checkout/reset fail for real.
    let gitdir = git(&ws, &["rev-parse", "--absolute-git-dir"]);
    std::fs::write(Path::new(&gitdir).join("index.lock"), "").unwrap();
    let r = env.ok(&["workspace", "release", "app--1", "--force"]);
    assert_eq!(r["outcome"], "recycled");
    assert_eq!(r["status"], "available");
    assert_eq!(
        std::fs::read_to_string(ws.join("README.md")).unwrap(),
        "hello\n"
    );
    assert_eq!(git(&ws, &["status", "--porcelain"]), "");
    assert_eq!(acquire(&env, "next")["name"], "app--1");
}

#[test]
fn a_worktree_deleted_by_hand_is_healed_or_reported_never_a_crash() {
    let env = Env::new();
    env.add_project(&[]);
    env.ok(&["workspace", "init"]);
    // An available slot deleted behind orange's back: acquire recreates it.
    std::fs::remove_dir_all(env.ws_path("app--1")).unwrap();
    let list = env.ok(&["workspace", "list"]);
    assert_eq!(list[0]["status"], "missing");
    let a = acquire(&env, "t1");
    assert_eq!(a["name"], "app--1");
    assert!(env.ws_path("app--1").join("README.md").exists());
    // A bound slot deleted: reported as missing, release recreates it.
    std::fs::remove_dir_all(env.ws_path("app--1")).unwrap();
    assert_eq!(env.ok(&["workspace", "list"])[0]["status"], "missing");
    let r = env.ok(&["workspace", "release", "app--1"]);
    assert_eq!(r["outcome"], "recreated");
    assert!(env.ws_path("app--1").join("README.md").exists());
    // init heals an available slot deleted by hand as well.
    std::fs::remove_dir_all(env.ws_path("app--2")).unwrap();
    let r = env.ok(&["workspace", "init"]);
    assert_eq!(r["recreated"][0], "app--2");
    assert!(env.ws_path("app--2").join("README.md").exists());
}

#[test]
fn two_projects_have_independent_pools() {
    let env = Env::new();
    let (other, _) = make_repo(&env.root(), "web");
    env.add_project(&["--pool-size", "1"]);
    let (ok, v) = env.json(&[
        "project",
        "add",
        other.to_str().unwrap(),
        "--pool-size",
        "1",
    ]);
    assert!(ok, "{v}");
    assert_eq!(acquire(&env, "a")["name"], "app--1");
    env.err(&["workspace", "acquire", "--task", "b"], "pool_exhausted");
    let (ok, v) = env.json_in(&other, &["workspace", "acquire", "--task", "b"]);
    assert!(ok, "{v}");
    assert_eq!(v["name"], "web--1");
    assert_eq!(v["project"], "web");
    assert_eq!(env.ok(&["workspace", "list"]).as_array().unwrap().len(), 1);
    assert_eq!(
        env.ok(&["workspace", "list", "--all"])
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // Shutting one down leaves the other untouched.
    env.ok(&["workspace", "shutdown", "--project", "app"]);
    assert!(env.ws_path("web--1").join("README.md").exists());
    assert_eq!(
        env.ok(&["workspace", "list", "--all"])
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn the_project_is_found_from_inside_a_workspace() {
    let env = Env::new();
    env.add_project(&[]);
    acquire(&env, "t");
    let inside = env.ws_path("app--1").join("src");
    let (ok, v) = env.json_in(&inside, &["workspace", "list"]);
    assert!(ok, "{v}");
    assert_eq!(v[0]["project"], "app");
    let (ok, v) = env.json_in(&inside, &["workspace", "acquire", "--task", "t2"]);
    assert!(ok, "{v}");
    assert_eq!(v["project"], "app");
}

#[test]
fn labels_with_hostile_characters_are_data_not_paths() {
    let env = Env::new();
    env.add_project(&["--pool-size", "8"]);
    for (i, label) in [
        "a b",
        "../../etc",
        "x/y",
        "a:b",
        "-rf",
        "--force",
        "$(touch pwned)",
        "`id`;",
        "ünï 名前 🍊",
    ]
    .iter()
    .enumerate()
    {
        let v = env.ok(&["workspace", "acquire", &format!("--task={label}")]);
        assert_eq!(v["task"], *label);
        assert_eq!(v["name"], format!("app--{}", i + 1).as_str());
        if i == 7 {
            break;
        }
    }
    // Leading-dash labels also work as a separate argument.
    env.ok(&["workspace", "release", "app--1"]);
    let v = env.ok(&["workspace", "acquire", "--task", "-rf"]);
    assert_eq!(v["task"], "-rf");
    assert!(!env.repo.join("pwned").exists() && !env.ws_path("app--7").join("pwned").exists());
    for bad in ["", "   ", "a\nb", "tab\there"] {
        env.err(
            &["workspace", "acquire", &format!("--task={bad}")],
            "invalid_argument",
        );
    }
}

#[test]
fn unknown_and_hostile_workspace_names_are_not_found() {
    let env = Env::new();
    env.add_project(&[]);
    env.ok(&["workspace", "init"]);
    for bad in [
        "app--9",
        "../app--1",
        "app--1/..",
        "-x",
        "nope",
        "app--1/../../etc",
    ] {
        env.err(
            &["workspace", "release", bad, "--force"],
            "workspace_not_found",
        );
    }
}

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
fn acquire_skips_an_available_slot_that_a_live_task_still_references() {
    let env = Env::new();
    env.add_project(&[]);
    env.ok(&["workspace", "init"]);
    let t = env.home.join("tasks/app/abc");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(
        t.join("task.json"),
        r#"{"id":"abc","status":"working","workspace":"app--1"}"#,
    )
    .unwrap();
    assert_eq!(acquire(&env, "new")["name"], "app--2");
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
fn untracked_files_made_by_the_setup_command_are_not_task_work_and_survive_release() {
    let env = Env::new();
    env.add_project(&[
        "--setup-cmd",
        "mkdir -p deps && echo v1 > deps/lib.txt && echo ok > .setup-stamp",
    ]);
    acquire(&env, "t");
    let ws = env.ws_path("app--1");
    // Without the task doing anything, the workspace is clean: release needs no --force.
    std::fs::write(ws.join("task-output.txt"), "agent work").unwrap();
    let m = env.err(&["workspace", "release", "app--1"], "worktree_dirty");
    assert!(
        m.contains("task-output.txt") && !m.contains("deps") && !m.contains(".setup-stamp"),
        "{m}"
    );
    std::fs::remove_file(ws.join("task-output.txt")).unwrap();
    env.ok(&["workspace", "release", "app--1"]);
    assert_eq!(
        std::fs::read_to_string(ws.join("deps/lib.txt")).unwrap(),
        "v1\n"
    );
    assert!(ws.join(".setup-stamp").exists());
    // A forced release still removes the task's own untracked files but keeps setup's.
    acquire(&env, "t2");
    std::fs::write(ws.join("scratch.txt"), "x").unwrap();
    env.ok(&["workspace", "release", "app--1", "--force"]);
    assert!(!ws.join("scratch.txt").exists());
    assert!(ws.join("deps/lib.txt").exists());
}

#[test]
fn a_half_done_rebase_is_unsaved_work_and_a_forced_release_clears_it() {
    let env = Env::new();
    env.add_project(&[]);
    acquire(&env, "t");
    let ws = env.ws_path("app--1");
    git(&ws, &["checkout", "-qb", "task/r"]);
    for n in 1..=2 {
        std::fs::write(ws.join(format!("r{n}.txt")), "r").unwrap();
        git(&ws, &["add", "-A"]);
        git(&ws, &["commit", "-qm", &format!("r{n}")]);
    }
    // Stop an interactive rebase at "edit": the tree is clean but a rebase is running.
    let out = common::git_output(
        &ws,
        &[
            "-c",
            "sequence.editor=sed -i 's/^pick/edit/'",
            "rebase",
            "-q",
            "-i",
            "HEAD~2",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(git(&ws, &["status", "--porcelain"]), "");
    let m = env.err(&["workspace", "release", "app--1"], "worktree_dirty");
    assert!(m.contains("rebase is in progress"), "{m}");
    let r = env.ok(&["workspace", "release", "app--1", "--force"]);
    assert_eq!(r["status"], "available");
    let status = git(&ws, &["status"]);
    assert!(!status.contains("rebase"), "{status}");
    let gitdir = git(&ws, &["rev-parse", "--absolute-git-dir"]);
    assert!(!Path::new(&gitdir).join("rebase-merge").exists());
    assert_eq!(
        git(&ws, &["rev-parse", "HEAD"]),
        git(&env.repo, &["rev-parse", "origin/main"])
    );
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

#[test]
fn gitignored_files_are_copied_or_linked_into_workspaces_without_overwriting() {
    let env = Env::new();
    std::fs::write(
        env.repo.join(".gitignore"),
        "cache/\n.env*\nnode_modules/\n",
    )
    .unwrap();
    git(&env.repo, &["commit", "-qam", "ignore env"]);
    git(&env.repo, &["push", "-q"]);
    std::fs::write(env.repo.join(".env"), "SECRET=1\n").unwrap();
    std::fs::write(env.repo.join(".env.local"), "LOCAL=1\n").unwrap();
    std::fs::create_dir_all(env.repo.join("node_modules/dep")).unwrap();
    std::fs::write(
        env.repo.join("node_modules/dep/index.js"),
        "module.exports = 1\n",
    )
    .unwrap();
    env.add_project(&[
        "--copy",
        ".env*",
        "--symlink",
        "node_modules",
        "--setup-cmd",
        "cat .env > setup-saw-env.txt",
    ]);
    let ws = env.ws_path("app--1");
    acquire(&env, "t");
    assert_eq!(
        std::fs::read_to_string(ws.join(".env")).unwrap(),
        "SECRET=1\n"
    );
    assert_eq!(
        std::fs::read_link(ws.join("node_modules")).unwrap(),
        env.repo.join("node_modules")
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("setup-saw-env.txt")).unwrap(),
        "SECRET=1\n",
        "setup runs after the copy"
    );
    // The task edits its copy; a new file appears in the repo; release + acquire again.
    std::fs::write(ws.join(".env.local"), "TASK-EDIT\n").unwrap();
    std::fs::write(env.repo.join(".env.test"), "TEST=1\n").unwrap();
    env.ok(&["workspace", "release", "app--1"]);
    acquire(&env, "t2");
    assert_eq!(
        std::fs::read_to_string(ws.join(".env.local")).unwrap(),
        "TASK-EDIT\n",
        "never overwritten"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join(".env.test")).unwrap(),
        "TEST=1\n",
        "new files arrive at acquire"
    );
    // The same lists from config.toml for a project that set none.
    let (other, _) = make_repo(&env.root(), "web");
    std::fs::write(other.join(".gitignore"), ".env\n").unwrap();
    std::fs::write(other.join(".env"), "WEB=1\n").unwrap();
    std::fs::write(
        env.home.join("config.toml"),
        "[project.web]\ncopy = [\".env\"]\nport_base = 5000\n",
    )
    .unwrap();
    let (ok, v) = env.json(&["project", "add", other.to_str().unwrap()]);
    assert!(ok, "{v}");
    let (ok, v) = env.json_in(&other, &["workspace", "acquire", "--task", "w"]);
    assert!(ok, "{v}");
    assert_eq!(
        std::fs::read_to_string(env.ws_path("web--1").join(".env")).unwrap(),
        "WEB=1\n"
    );
    let m = env.err(
        &["project", "update", "--copy", "../outside"],
        "invalid_argument",
    );
    assert!(m.contains("without '..'"), "{m}");
}

#[test]
fn init_prunes_the_records_of_worktrees_deleted_behind_git_s_back() {
    let env = Env::new();
    env.add_project(&["--pool-size", "1"]);
    // A worktree of the user's own (not the pool's), then its directory deleted by hand:
    // git keeps its record (`prunable`) until something prunes it.
    let stray = env.root().join("stray-worktree");
    git(
        &env.repo,
        &["worktree", "add", "-q", "--detach", stray.to_str().unwrap()],
    );
    std::fs::remove_dir_all(&stray).unwrap();
    let listed = git(&env.repo, &["worktree", "list", "--porcelain"]);
    assert!(listed.contains("prunable"), "{listed}");
    env.ok(&["workspace", "init"]);
    let listed = git(&env.repo, &["worktree", "list", "--porcelain"]);
    assert!(!listed.contains("prunable"), "{listed}");
    assert!(!listed.contains("stray-worktree"), "{listed}");
    // The pool's own worktree is there, and only it beside the main one.
    assert_eq!(listed.matches("worktree ").count(), 2, "{listed}");
}
