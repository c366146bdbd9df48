//! `orange project …` against real git repositories.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use common::{git, make_repo, Env};

#[test]
fn add_uses_directory_name_origin_head_and_default_pool_size() {
    let env = Env::new();
    let p = env.add_project(&[]);
    assert_eq!(p["name"], "app");
    assert_eq!(p["default_branch"], "main");
    assert_eq!(p["pool_size"], 2);
    assert_eq!(p["path"], env.repo.to_str().unwrap());
    let list = env.ok(&["project", "list"]);
    assert_eq!(list.as_array().unwrap().len(), 1);
    // TASK.md and the outcome file are excluded in the main repo (worktrees share it).
    let exclude = std::fs::read_to_string(env.repo.join(".git/info/exclude")).unwrap();
    assert!(exclude.lines().any(|l| l == "TASK.md"));
    assert!(exclude.lines().any(|l| l == ".orange-outcome"));
}

#[test]
fn add_from_a_subdirectory_registers_the_top_level() {
    let env = Env::new();
    let (ok, v) = env.json_in(&env.repo.join("src"), &["project", "add"]);
    assert!(ok, "{v}");
    assert_eq!(v["path"], env.repo.to_str().unwrap());
}

#[test]
fn default_branch_follows_origin_head_then_main_then_master() {
    let env = Env::new();
    // origin/HEAD points at "trunk".
    git(&env.repo, &["checkout", "-qb", "trunk"]);
    git(&env.repo, &["push", "-q", "origin", "trunk"]);
    git(&env.repo, &["remote", "set-head", "origin", "trunk"]);
    assert_eq!(env.add_project(&[])["default_branch"], "trunk");

    // No origin and only a master branch.
    let root = env.root().join("m");
    std::fs::create_dir_all(&root).unwrap();
    git(&root, &["init", "-q", "-b", "master"]);
    std::fs::write(root.join("f"), "x").unwrap();
    git(&root, &["add", "f"]);
    git(&root, &["commit", "-qm", "c"]);
    let (ok, v) = env.json(&["project", "add", root.to_str().unwrap()]);
    assert!(ok, "{v}");
    assert_eq!(v["default_branch"], "master");
}

#[test]
fn duplicates_non_git_dirs_and_bad_pool_sizes_are_clear_errors() {
    let env = Env::new();
    env.add_project(&[]);
    let before = std::fs::read(env.home.join("projects.json")).unwrap();
    let m = env.err(&["project", "add"], "invalid_argument");
    assert!(m.contains("already registered"), "{m}");
    let m = env.err(&["project", "add", "--name", "app"], "invalid_argument");
    assert!(m.contains("already registered"), "{m}");

    let (other, _) = make_repo(&env.root(), "other");
    let m = env.err(
        &["project", "add", other.to_str().unwrap(), "--name", "app"],
        "invalid_argument",
    );
    assert!(m.contains("\"app\""), "{m}");

    let plain = env.root().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let m = env.err(
        &["project", "add", plain.to_str().unwrap()],
        "invalid_argument",
    );
    assert!(m.contains("not inside a git repository"), "{m}");
    let m = env.err(&["project", "add", "/nonexistent/x"], "invalid_argument");
    assert!(m.contains("does not exist"), "{m}");

    for size in ["0", "-1", "-5"] {
        let m = env.err(
            &[
                "project",
                "add",
                other.to_str().unwrap(),
                "--pool-size",
                size,
            ],
            "invalid_argument",
        );
        assert!(m.contains("at least 1"), "{m}");
    }
    let m = env.err(
        &["project", "update", "app", "--pool-size", "0"],
        "invalid_argument",
    );
    assert!(m.contains("at least 1"), "{m}");
    assert_eq!(
        before,
        std::fs::read(env.home.join("projects.json")).unwrap(),
        "failed commands changed the registry"
    );
}

#[test]
fn hostile_project_names_are_refused_and_nothing_is_written() {
    let env = Env::new();
    for bad in [
        "a b",
        "..",
        "a/../b",
        "a/b",
        "a:b",
        "-rf",
        "--x",
        ".hidden",
        "a\nb",
        "$(touch pwned)",
        "`id`",
        "a;b",
        "",
    ] {
        let m = env.err(
            &["project", "add", &format!("--name={bad}")],
            "invalid_argument",
        );
        assert!(m.contains("invalid project name"), "{bad:?}: {m}");
    }
    assert!(!env.home.join("projects.json").exists());
    assert!(!env.repo.join("pwned").exists());
}

#[test]
fn a_directory_name_that_is_not_a_valid_name_is_made_safe() {
    let env = Env::new();
    let (repo, _) = make_repo(&env.root(), "my repo:v2");
    let (ok, v) = env.json(&["project", "add", repo.to_str().unwrap()]);
    assert!(ok, "{v}");
    assert_eq!(v["name"], "my-repo-v2");
}

#[test]
fn update_and_remove() {
    let env = Env::new();
    env.add_project(&[]);
    let p = env.ok(&[
        "project",
        "update",
        "--pool-size",
        "5",
        "--setup-cmd",
        "echo hi",
    ]);
    assert_eq!(p["pool_size"], 5);
    assert_eq!(p["setup_cmd"], "echo hi");
    let p = env.ok(&["project", "update", "app", "--setup-cmd", ""]);
    assert!(p.get("setup_cmd").is_none(), "{p}");
    env.err(
        &["project", "update", "nope", "--pool-size", "3"],
        "project_not_found",
    );
    env.err(&["project", "remove", "nope"], "project_not_found");

    // A project with workspaces cannot be removed until its pool is shut down.
    env.ok(&["workspace", "init"]);
    let m = env.err(&["project", "remove", "app"], "invalid_argument");
    assert!(m.contains("workspace shutdown"), "{m}");
    env.ok(&["workspace", "shutdown"]);
    env.ok(&["project", "remove", "app"]);
    assert_eq!(env.ok(&["project", "list"]).as_array().unwrap().len(), 0);
    assert!(
        env.repo.join("README.md").exists(),
        "the repository itself is untouched"
    );
}

#[test]
fn corrupt_projects_file_is_reported_with_its_path_and_kept() {
    let env = Env::new();
    env.add_project(&[]);
    let file = env.home.join("projects.json");
    std::fs::write(&file, "{ not json").unwrap();
    let m = env.err(&["project", "list"], "state_corrupt");
    assert!(m.contains(file.to_str().unwrap()), "{m}");
    let m = env.err(&["project", "add", "--name", "x"], "state_corrupt");
    assert!(m.contains("projects.json"), "{m}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{ not json");
}

#[test]
fn unknown_project_and_directory_outside_any_project() {
    let env = Env::new();
    env.add_project(&[]);
    env.err(
        &["workspace", "list", "--project", "ghost"],
        "project_not_found",
    );
    let elsewhere = env.root();
    let (ok, v) = env.json_in(&elsewhere, &["workspace", "list"]);
    assert!(!ok);
    assert_eq!(v["error"]["code"], "project_not_found");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--project"),
        "{v}"
    );
}
