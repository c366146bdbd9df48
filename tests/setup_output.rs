//! What a workspace's setup command leaves is not a task's change (issue 24, part 3): with
//! `--setup-cmd 'echo x > setup.txt'` no task shows `A setup.txt` and +1 line — not in
//! `task show` (text and `--json`), not in the sidebar's frame, not in the merge preview
//! (`task merge --dry-run`) — while what the agent does to the setup's files (another
//! content, a deletion, a commit) and its own new files still show. A slot whose setup
//! runs again (recycled) records its output again, and a slot whose setup output a task
//! changed is set up again at release.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{self, git, TaskEnv};

/// A task of the fake agent that waits (it changes nothing by itself): its id and its
/// workspace.
fn task(env: &TaskEnv, branch: &str) -> (String, PathBuf) {
    let t = env.create(&[branch, "Do the thing", "--harness", "fake-wait"]);
    assert_eq!(t["outcome"], "spawned", "{t}");
    let id = common::id(&t);
    let ws = env.ws_path(t["workspace"].as_str().unwrap());
    env.agent_log(&id, "env");
    (id, ws)
}

fn text(env: &TaskEnv, args: &[&str]) -> String {
    let out = env.cmd_in(&env.repo, args).output().unwrap();
    assert!(
        out.status.success(),
        "orange {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `(status path, added, removed)` of a change list as JSON.
fn files(changes: &Value) -> (Vec<String>, u64, u64) {
    assert!(changes.is_object(), "no change list: {changes}");
    let files = changes["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f["status"].as_str().unwrap(),
                f["path"].as_str().unwrap()
            )
        })
        .collect();
    (
        files,
        changes["added"].as_u64().unwrap(),
        changes["removed"].as_u64().unwrap(),
    )
}

/// The task's change list as every view has it — the sidebar's model, `task show --json`
/// and the merge preview — which must agree; checked against `want`.
fn changes(env: &TaskEnv, id: &str, want: &[&str], added: u64, removed: u64) {
    let want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
    let side = env.ok(&["sidebar", "--once", "--task", id]);
    let got: Vec<String> = side["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f["status"].as_str().unwrap(),
                f["path"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        (
            got,
            side["added"].as_u64().unwrap(),
            side["removed"].as_u64().unwrap()
        ),
        (want.clone(), added, removed),
        "{side}"
    );
    let show = env.ok(&["task", "show", id]);
    assert_eq!(
        files(&show["changes"]),
        (want.clone(), added, removed),
        "{show}"
    );
    let preview = env.ok(&["task", "merge", id, "--dry-run"]);
    assert_eq!(preview["dry_run"], true, "{preview}");
    assert_eq!(
        files(&preview["changes"]),
        (want, added, removed),
        "{preview}"
    );
}

fn write(ws: &Path, path: &str, text: &str) {
    std::fs::write(ws.join(path), text).unwrap();
}

#[test]
fn what_the_setup_command_left_is_not_a_tasks_change() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "2", "--setup-cmd", "echo x > setup.txt"]);
    let (id, ws) = task(&env, "feature/setup");
    assert_eq!(
        std::fs::read_to_string(ws.join("setup.txt")).unwrap(),
        "x\n"
    );

    // The agent changed nothing: nothing shows, anywhere.
    changes(&env, &id, &[], 0, 0);
    let show = text(&env, &["task", "show", &id]);
    assert!(
        show.contains("changes: 0 commits, 0 files, +0 -0 against origin/main\n"),
        "{show}"
    );
    assert!(!show.contains("setup.txt"), "{show}");
    let frame = text(&env, &["sidebar", "--once", "--task", &id, "--width", "40"]);
    assert!(frame.contains("── Files (0) ─"), "{frame}");
    assert!(frame.contains(" (no changes)\n"), "{frame}");
    assert!(frame.contains("Commits: 0  +0 -0\n"), "{frame}");
    assert!(!frame.contains("setup.txt"), "{frame}");
    let preview = text(&env, &["task", "merge", &id, "--dry-run"]);
    assert!(!preview.contains("setup.txt"), "{preview}");
    assert!(preview.contains("would merge"), "{preview}");
    // A second task, in the other slot, the same.
    let (id2, _) = task(&env, "feature/other");
    changes(&env, &id2, &[], 0, 0);

    // The agent writes other content to the setup's file, and a file of its own: both
    // show (against the base, as they would be committed).
    write(&ws, "setup.txt", "mine\nand more\n");
    write(&ws, "new.txt", "n\n");
    changes(&env, &id, &["A new.txt", "A setup.txt"], 3, 0);
    let show = text(&env, &["task", "show", &id]);
    assert!(show.contains("  A setup.txt\n"), "{show}");
    assert!(show.contains("  A new.txt\n"), "{show}");
    let frame = text(&env, &["sidebar", "--once", "--task", &id, "--width", "40"]);
    assert!(frame.contains(" A setup.txt\n"), "{frame}");
    assert!(frame.contains("Commits: 0  +3 -0\n"), "{frame}");
    // Work that merging would lose: the preview says it would refuse, naming the file.
    let preview = env.ok(&["task", "merge", &id, "--dry-run"]);
    assert_eq!(preview["would_merge"], false, "{preview}");
    assert!(
        preview["refusal"].as_str().unwrap().contains("setup.txt"),
        "{preview}"
    );

    // The same size, other bytes: still the agent's.
    write(&ws, "setup.txt", "y\n");
    changes(&env, &id, &["A new.txt", "A setup.txt"], 2, 0);

    // Back as the setup left it: out of the list again.
    write(&ws, "setup.txt", "x\n");
    changes(&env, &id, &["A new.txt"], 1, 0);

    // Deleted by the agent: a deletion of what the setup made (its one line).
    std::fs::remove_file(ws.join("setup.txt")).unwrap();
    changes(&env, &id, &["A new.txt", "D setup.txt"], 1, 1);
    let show = text(&env, &["task", "show", &id]);
    assert!(show.contains("  D setup.txt\n"), "{show}");

    // Committed, even with the setup's content: part of the branch, so it shows.
    write(&ws, "setup.txt", "x\n");
    git(&ws, &["add", "setup.txt", "new.txt"]);
    git(&ws, &["commit", "-qm", "the agent commits everything"]);
    changes(&env, &id, &["A new.txt", "A setup.txt"], 2, 0);
}

#[test]
fn a_tracked_file_the_setup_rewrote_is_left_out_while_unchanged_since() {
    let env = TaskEnv::new();
    // A setup that rewrites a tracked file (as an install rewrites a lockfile).
    env.add_project(&[
        "--pool-size",
        "1",
        "--setup-cmd",
        "echo three >> src/lib.txt",
    ]);
    let (id, ws) = task(&env, "feature/lock");
    assert_eq!(
        std::fs::read_to_string(ws.join("src/lib.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );
    changes(&env, &id, &[], 0, 0);
    let preview = env.ok(&["task", "merge", &id, "--dry-run"]);
    assert_eq!(preview["would_merge"], true, "{preview}");
    // The agent changes it further: its change shows, against the base.
    write(&ws, "src/lib.txt", "one\ntwo\nthree\nfour\n");
    changes(&env, &id, &["M src/lib.txt"], 2, 0);
}

#[test]
fn a_slot_set_up_again_records_its_setup_output_again() {
    let env = TaskEnv::new();
    // Each run of the setup leaves other content: its run number.
    let runs = env.root().join("setup-runs");
    let setup = format!(
        "echo run >> '{0}' && wc -l < '{0}' | tr -d ' ' > setup.txt",
        runs.display()
    );
    env.add_project(&["--pool-size", "1", "--setup-cmd", &setup]);
    let (id, ws) = task(&env, "feature/one");
    assert_eq!(
        std::fs::read_to_string(ws.join("setup.txt")).unwrap(),
        "1\n"
    );
    changes(&env, &id, &[], 0, 0);
    env.ok(&["task", "cancel", &id, "--yes"]);

    // The slot's directory is lost: the next task's acquire recycles it (the setup runs
    // again, with another output), and that output is left out too.
    std::fs::remove_dir_all(&ws).unwrap();
    let (id, ws2) = task(&env, "feature/two");
    assert_eq!(ws2, ws);
    assert_eq!(
        std::fs::read_to_string(ws.join("setup.txt")).unwrap(),
        "2\n"
    );
    changes(&env, &id, &[], 0, 0);

    // A task that deletes the setup's file: released, the slot is set up again (run 3),
    // and the next task starts with nothing to show.
    std::fs::remove_file(ws.join("setup.txt")).unwrap();
    changes(&env, &id, &["D setup.txt"], 0, 1);
    env.ok(&["task", "cancel", &id, "--yes"]);
    assert_eq!(
        std::fs::read_to_string(ws.join("setup.txt")).unwrap(),
        "3\n"
    );
    let (id, _) = task(&env, "feature/three");
    changes(&env, &id, &[], 0, 0);
    env.ok(&["task", "cancel", &id, "--yes"]);

    // Other content in a setup file is work: release refuses it, and once forced sets the
    // slot up again (run 4) instead of handing the changed file to the next task.
    env.ok(&["workspace", "acquire", "--task", "by-hand"]);
    write(&ws, "setup.txt", "edited\n");
    let m = env.err(&["workspace", "release", "app--1"], "worktree_dirty");
    assert!(m.contains("setup.txt"), "{m}");
    let r = env.ok(&["workspace", "release", "app--1", "--force"]);
    assert_eq!(r["outcome"], "set_up_again", "{r}");
    assert_eq!(
        std::fs::read_to_string(ws.join("setup.txt")).unwrap(),
        "4\n"
    );
    let (id, _) = task(&env, "feature/four");
    changes(&env, &id, &[], 0, 0);
}
