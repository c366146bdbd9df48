//! `pool init` and workspace set-up: detached worktrees, a stray directory, the base ref,
//! the setup command, the pool file, ignored files copied or linked, pruned records.

use crate::common;

use common::{git, git_output, make_repo, Env};

use super::{acquire, head};

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
