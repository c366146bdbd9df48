//! Acquire and release: lazy creation and exhaustion, waiting, unsaved work refused, the
//! reset on release, healing, independent pools, hostile labels and names.

use crate::common;

use std::path::Path;

use common::{git, git_output, make_repo, Env};

use super::{acquire, head};

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
