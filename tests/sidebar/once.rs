//! `orange sidebar --once` end to end: the branch diff against git, the frame of a task
//! whose fake agent changed files, of nothing changed, a done and a missing task.

use crate::common;

use std::path::Path;

use common::{git, TaskEnv};
use orange::ui::sidebar::model::FOOTER;
use unicode_width::UnicodeWidthStr;

use super::{check_frame, create_waiting_task};

/// What an agent does in its workspace: a committed modification, addition, deletion
/// and rename, then an unstaged edit, a staged addition and an untracked file.
fn agent_changes(ws: &Path) {
    std::fs::write(ws.join("src/lib.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::write(ws.join("src/new.txt"), "a\nb\n").unwrap();
    git(ws, &["rm", "-q", "README.md"]);
    git(ws, &["mv", ".gitignore", "gitignore.moved"]);
    git(ws, &["add", "-A"]);
    git(ws, &["commit", "-qm", "agent work"]);
    std::fs::write(ws.join("src/lib.txt"), "one\ntwo\nthree\nfour\n").unwrap();
    std::fs::write(ws.join("staged.txt"), "s\n").unwrap();
    git(ws, &["add", "staged.txt"]);
    std::fs::write(ws.join("untracked.txt"), "u1\nu2\nu3\n").unwrap();
}

/// `ui::diff::branch_diff` against what git itself says: every kind of change, committed,
/// staged, unstaged and untracked, renames exact and edited, reverts, type changes.
#[test]
fn branch_diff_agrees_with_git() {
    let env = common::Env::new();
    let r = &env.repo;
    let w = |p: &str, text: &str| {
        let p = r.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    let long: String = (0..40)
        .map(|i| format!("line {i} of a long file\n"))
        .collect();
    w("long.txt", &long);
    w("revert.txt", "same\n");
    w("gone-then-back.txt", "x\n");
    w("link-me.txt", "target\n");
    w("moved-later.txt", "moved later\n");
    w("tool.sh", "echo hi\n");
    git(r, &["add", "-A"]);
    git(r, &["commit", "-qm", "more files"]);
    git(r, &["push", "-q", "origin", "main"]);
    git(r, &["checkout", "-qb", "task"]);
    // Committed work.
    w("src/lib.txt", "one\ntwo\nthree\n");
    w("added.txt", "a\nb\n");
    w("revert.txt", "changed\n");
    git(r, &["rm", "-q", "README.md", "gone-then-back.txt"]);
    git(r, &["mv", ".gitignore", "gitignore.moved"]);
    git(r, &["mv", "long.txt", "long-renamed.txt"]);
    w("long-renamed.txt", &format!("{long}one more line\n"));
    w("bin.dat", "\0\u{1}binary\0");
    w("dir with space/ünï cödé 🍊.txt", "u\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(r.join("tool.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    git(r, &["add", "-A"]);
    git(r, &["commit", "-qm", "work"]);
    // Uncommitted: staged, unstaged, untracked, reverted, re-created, type change, plain mv.
    w("staged.txt", "s\n");
    git(r, &["add", "staged.txt"]);
    w("src/lib.txt", "one\ntwo\nthree\nfour\n");
    w("revert.txt", "same\n");
    w("gone-then-back.txt", "x\ny\n");
    w("untracked/deep/file.txt", "u1\nu2\n");
    std::fs::remove_file(r.join("link-me.txt")).unwrap();
    std::os::unix::fs::symlink("src/lib.txt", r.join("link-me.txt")).unwrap();
    std::fs::rename(r.join("moved-later.txt"), r.join("moved-now.txt")).unwrap();

    let d = orange::ui::diff::branch_diff(r, "origin/main", None, None).unwrap();
    let got: Vec<String> = d
        .files
        .iter()
        .map(|f| match &f.from {
            Some(from) => format!("{} {from} -> {}", f.status, f.path),
            None => format!(
                "{} {}{}",
                f.status,
                f.path,
                if f.untracked { " (untracked)" } else { "" }
            ),
        })
        .collect();
    assert_eq!(
        got,
        vec![
            "D README.md",
            "A added.txt",
            "A bin.dat",
            "A dir with space/ünï cödé 🍊.txt",
            "R .gitignore -> gitignore.moved",
            "M gone-then-back.txt (untracked)",
            "T link-me.txt",
            "R long.txt -> long-renamed.txt",
            "R moved-later.txt -> moved-now.txt",
            "M src/lib.txt",
            "A staged.txt",
            "M tool.sh",
            "A untracked/deep/file.txt (untracked)",
        ],
        "{d:#?}"
    );
    assert_eq!(d.commits, 2 - 1, "one commit on the task branch");
    // Lines, as `git diff --numstat <merge-base>` counts them, plus untracked files' lines:
    // README -1; added +2; lib +2; long-renamed +1; ünï +1; gone-then-back +1 (x → x y);
    // staged +1; untracked +2; bin.dat: binary, none; link-me: its text -1 (a link's
    // target is no lines of text here, where git would count it +1).
    assert_eq!((d.added, d.removed), (10, 2), "{d:#?}");
    let numstat = git(r, &["diff", "--numstat", &d.merge_base]);
    let (mut a, mut rm) = (0, 0);
    for l in numstat.lines() {
        let f: Vec<&str> = l.split('\t').collect();
        a += f[0].parse::<usize>().unwrap_or(0);
        rm += f[1].parse::<usize>().unwrap_or(0);
    }
    // git sees tracked changes only: not untracked/deep (+2); gone-then-back and
    // moved-later as deleted (-1 each: their new files are untracked); plus +1 for the
    // link's target. Ours: 10 = 8 - 1 + 1 + 2, 2 = 4 - 1 - 1.
    assert_eq!((a, rm), (8, 4), "{numstat}");

    // A line cache makes the second pass read nothing new, with the same answer.
    let mut cache = orange::ui::diff::LineCache::default();
    let first = orange::ui::diff::branch_diff(r, "origin/main", None, Some(&mut cache)).unwrap();
    assert!(cache.dirty && !cache.counts.is_empty());
    cache.dirty = false;
    let second = orange::ui::diff::branch_diff(r, "origin/main", None, Some(&mut cache)).unwrap();
    assert!(!cache.dirty);
    assert_eq!(first, second);
    assert_eq!(first, d);

    // The branch alone (no work tree): committed changes only.
    let c = orange::ui::diff::branch_diff_committed(r, "task", "origin/main", None).unwrap();
    let paths: Vec<&str> = c.files.iter().map(|f| f.path.as_str()).collect();
    assert!(paths.contains(&"revert.txt"), "{paths:?}");
    assert!(!paths.contains(&"staged.txt"), "{paths:?}");
}

fn once(env: &TaskEnv, args: &[&str]) -> String {
    let mut a = vec!["sidebar", "--once"];
    a.extend_from_slice(args);
    let out = env.cmd_in(&env.repo, &a).output().unwrap();
    assert!(
        out.status.success(),
        "orange {a:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn once_shows_a_task_that_changed_files() {
    let env = TaskEnv::new();
    let (id, ws) = create_waiting_task(&env, "feature/side", "Show the sidebar");
    agent_changes(&ws);
    let frame = once(&env, &["--task", &id, "--width", "40"]);
    check_frame(&frame, 40, None);
    assert!(
        !frame.contains('\x1b'),
        "no ANSI without a terminal: {frame:?}"
    );
    let lines: Vec<&str> = frame.lines().collect();
    assert_eq!(lines[0], "app/feature/side", "{frame}");
    assert_eq!(lines[1], "Status: working   ● live", "{frame}");
    assert!(lines.contains(&"Harness: fake-wait"), "{frame}");
    assert!(lines.contains(&"PR: none"), "{frame}");
    // 1 commit; lines: lib.txt +2, new.txt +2, staged.txt +1, untracked.txt +3; README -1.
    assert!(lines.contains(&"Commits: 1  +8 -1"), "{frame}");
    for rule in ["── Files (6) ─", "── History ─", "── Task ─"] {
        assert!(
            lines.iter().any(|l| l.starts_with(rule) && l.width() == 40),
            "no {rule:?} rule 40 columns wide in\n{frame}"
        );
    }
    for want in [
        " R gitignore.moved",
        " D README.md",
        " A src/new.txt",
        " M src/lib.txt",
        " A staged.txt",
        " A untracked.txt",
        " Show the sidebar",
        FOOTER,
    ] {
        assert!(lines.contains(&want), "missing {want:?} in\n{frame}");
    }
    assert!(frame.contains("s ago  spawned (fake-wait)\n"), "{frame}");
    assert!(frame.contains("s ago  status → working\n"), "{frame}");
    // Newest first.
    let pos = |s: &str| frame.find(s).unwrap();
    assert!(pos("status → working") < pos("spawned (fake-wait)"));
    assert!(pos("spawned (fake-wait)") < pos("  created"));

    // The model as JSON.
    let (ok, v) = env.json(&["sidebar", "--once", "--task", &id]);
    assert!(ok, "{v}");
    assert_eq!(v["id"], id.as_str());
    assert_eq!(v["session"], "live");
    assert_eq!(v["commits"], 1);
    assert_eq!(v["added"], 8);
    assert_eq!(v["removed"], 1);
    let files: Vec<(String, String)> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["status"].as_str().unwrap().to_string(),
                f["path"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        files.contains(&("R".into(), "gitignore.moved".into())),
        "{v}"
    );
    let moved = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "gitignore.moved")
        .unwrap();
    assert_eq!(moved["from"], ".gitignore");
    let untracked = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "untracked.txt")
        .unwrap();
    assert_eq!(untracked["untracked"], true);
    assert_eq!(v["port"], 3101, "{v}");
    assert_eq!(v["footer"], FOOTER);

    // The same frame, the task found from $ORANGE_TASK_ID, then from the workspace.
    let by_env = env
        .cmd_in(&env.repo, &["sidebar", "--once", "--width", "40"])
        .env("ORANGE_TASK_ID", &id)
        .output()
        .unwrap();
    assert_eq!(
        first_line(&String::from_utf8_lossy(&by_env.stdout)),
        "app/feature/side"
    );
    let by_cwd = env
        .cmd_in(&ws.join("src"), &["sidebar", "--once"])
        .env("COLUMNS", "25")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&by_cwd.stdout);
    assert_eq!(first_line(&text), "app/feature/side", "{text}");
    check_frame(&text, 25, None);
    assert!(
        text.lines().any(|l| l.width() == 25),
        "COLUMNS=25 is the width:\n{text}"
    );
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

#[test]
fn once_with_nothing_changed_a_done_task_and_a_missing_task() {
    let env = TaskEnv::new();
    let (id, ws) = create_waiting_task(&env, "quiet", "Nothing yet");
    let frame = once(&env, &["--task", &id, "--width", "30"]);
    assert!(frame.contains("── Files (0) ─"), "{frame}");
    assert!(frame.contains(" (no changes)\n"), "{frame}");
    assert!(frame.contains("Commits: 0  +0 -0\n"), "{frame}");

    // The agent commits; the task is merged: the sidebar says so instead of failing.
    std::fs::write(ws.join("done.txt"), "x\n").unwrap();
    git(&ws, &["add", "done.txt"]);
    git(&ws, &["commit", "-qm", "done"]);
    env.ok(&["task", "merge", &id, "--local"]);
    let frame = once(&env, &["--task", &id, "--width", "48"]);
    check_frame(&frame, 48, None);
    assert!(frame.contains("Status: done   ○ none\n"), "{frame}");
    assert!(
        frame.contains("Task done: merged, workspace released."),
        "{frame}"
    );
    assert!(frame.contains("ago  merged\n"), "{frame}");

    env.ok(&["task", "delete", &id, "--yes"]);
    env.err(&["sidebar", "--once", "--task", &id], "task_not_found");
    env.err(&["sidebar", "--once", "--task", "nosuch"], "task_not_found");
    env.err(
        &["sidebar", "--once", "--task", &id, "--width", "0"],
        "invalid_argument",
    );
    env.err(&["sidebar", "frobnicate"], "invalid_argument");
}

#[test]
fn no_task_to_follow_is_a_clear_error() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let msg = env.err(&["sidebar", "--once"], "invalid_argument");
    assert!(msg.contains("--task"), "{msg}");
}
