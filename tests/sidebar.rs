//! The sidebar: snapshot tests of the pure render (several widths, empty and full sections,
//! CJK and emoji, tiny heights, a remote task), then `orange sidebar` end to end with real git and a real
//! tmux server: `--once` frames of a task whose fake agent changed files, and the loop
//! running in a tmux pane, read back with `capture-pane` as a user would see it.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{git, wait_for, TaskEnv};
use orange::orchestration::attention::next::{Action, Keys, NextStep};
use orange::ui::diff::ChangedFile;
use orange::ui::sidebar::model::{remote_model, HistoryEntry, Model, FOOTER, SIDEBAR_FOOTER};
use orange::ui::sidebar::render::{render, render_ansi, render_gone};
use serde_json::Value;
use unicode_width::UnicodeWidthStr;

const NOW: i64 = 1_700_000_000;

fn file(status: char, path: &str) -> ChangedFile {
    ChangedFile {
        status,
        path: path.into(),
        from: None,
        untracked: false,
    }
}

fn event(ago: i64, event: &str, text: &str) -> HistoryEntry {
    HistoryEntry {
        at: Some(NOW - ago),
        event: event.into(),
        text: text.into(),
    }
}

fn empty_model() -> Model {
    let mut m = Model::empty("k3x9q2", "app", "orange-tasks/k3x9q2", NOW);
    m.harness = "claude".into();
    // A claude task whose transcript has no answer yet.
    m.tokens = Some(Default::default());
    m.commits = Some(0);
    m
}

fn full_model() -> Model {
    let mut m = Model::empty("a1b2c3", "coffee", "login-fix", NOW);
    m.status = "working".into();
    m.session = "live".into();
    m.harness = "claude".into();
    // 1.2M in (fresh, cache writes, cache reads) · 35k out.
    m.tokens = Some(orange::orchestration::usage::Tokens {
        input: 40_000,
        output: 35_000,
        cache_creation: 60_000,
        cache_read: 1_100_000,
    });
    m.pr = Some("#123 open".into());
    m.commits = Some(3);
    m.added = 144;
    m.removed = 12;
    m.files = vec![
        file('M', "src/auth/callback.ts"),
        file('M', "src/auth/oauth.ts"),
        file('A', "src/auth/mobile.ts"),
        file('D', "src/legacy/redirect.ts"),
        ChangedFile {
            status: 'R',
            path: "src/auth/session_store.ts".into(),
            from: Some("src/auth/session.ts".into()),
            untracked: false,
        },
        file('M', "package.json"),
        file('M', "README.md"),
        file('A', "tests/auth/callback.test.ts"),
        file('A', "tests/auth/mobile_safari_redirect_loop.test.ts"),
        file('M', "src/components/LoginButton.tsx"),
        file(
            'M',
            "src/components/very/deeply/nested/directory/Widget.tsx",
        ),
        file('D', "docs/old-oauth-notes.md"),
        ChangedFile {
            status: 'A',
            path: "scratch/notes.txt".into(),
            from: None,
            untracked: true,
        },
    ];
    m.history = vec![
        event(30, "status.changed", "status → working"),
        event(5 * 60, "agent.respawned", "respawned"),
        event(12 * 60, "agent.crashed", "crashed (1)"),
        event(2 * 3600, "pr.created", "PR #123 created"),
        event(3 * 3600 + 5, "status.changed", "status → working"),
        event(2 * 86400, "agent.spawned", "spawned (pi)"),
        event(2 * 86400 + 9, "task.created", "created"),
    ];
    m.task = vec![
        "Fix OAuth redirect loop on mobile Safari".into(),
        "".into(),
        "Users on iOS 17 bounce between /login and /callback forever.".into(),
        "".into(),
        "## Context".into(),
        "".into(),
        "- the state cookie is SameSite=Strict".into(),
        "- Safari drops it on the cross-site redirect".into(),
        "- see issue #88".into(),
        "".into(),
        "## Notes".into(),
        "".into(),
        "Tried SameSite=Lax: works on desktop.".into(),
    ];
    m
}

fn unicode_model() -> Model {
    let mut m = full_model();
    // A harness that reports no tokens.
    m.harness = "pi".into();
    m.tokens = None;
    m.project = "アプリ".into();
    m.branch = "機能/ログイン画面🍊の修正".into();
    m.files = vec![
        file('M', "src/画面/ログイン.tsx"),
        file('A', "docs/説明書/使い方.md"),
        file('A', "assets/🍊/orange🍊slice.png"),
        file('M', "src/émoji/👨‍👩‍👧‍👦family.rs"),
        file('D', "中文/文件.txt"),
    ];
    m.history = vec![
        event(45, "summary.changed", "summary changed"),
        event(3600, "branch.changed", "branch → 機能/ログイン画面🍊の修正"),
    ];
    m.task = vec![
        "ログイン画面のバグを直す 🐛🔧".into(),
        "".into(),
        "修复登录页面在移动端 Safari 上的重定向循环问题。".into(),
        "Mixed: ascii then 全角文字 then emoji 🎉🎉🎉 done".into(),
    ];
    m
}

/// Every line within `width` columns (by unicode-width), no trailing spaces, no control
/// characters; with a height, exactly that many lines.
fn check_frame(frame: &str, width: usize, height: Option<usize>) {
    for l in frame.lines() {
        assert!(
            l.width() <= width,
            "line {l:?} is {} columns, more than {width}:\n{frame}",
            l.width()
        );
        assert_eq!(l, l.trim_end(), "trailing spaces in {l:?}");
        assert!(!l.chars().any(char::is_control), "control char in {l:?}");
    }
    assert!(frame.ends_with('\n'));
    if let Some(h) = height {
        assert_eq!(
            frame.lines().count(),
            h,
            "frame of {h} lines expected:\n{frame}"
        );
    }
}

fn snap(name: &str, m: &Model, width: usize, height: Option<usize>) {
    let frame = render(m, width, height);
    check_frame(&frame, width, height);
    insta::assert_snapshot!(name, frame);
}

#[test]
fn empty_sections_at_several_widths() {
    let m = empty_model();
    for w in [20, 30, 48, 80] {
        snap(&format!("empty_w{w}"), &m, w, None);
    }
}

#[test]
fn a_group_member_shows_its_group_and_siblings() {
    let mut m = full_model();
    m.group = vec![
        "login-fix".into(),
        "/1 working ◂".into(),
        "/2 reviewing".into(),
        "/3 gone".into(),
    ];
    snap("group_w30", &m, 30, Some(24));
    let f = render(&m, 48, None);
    assert!(
        f.contains("\nGroup: login-fix\n  └ /1 working ◂\n  └ /2 reviewing\n"),
        "{f}"
    );
    // No group: no line.
    assert!(!render(&full_model(), 48, None).contains("Group:"));
}

/// What the agent's tree uses, under its harness (`Mem: 312M · CPU 4%`; the numbers alone
/// where the label does not fit); none while no agent runs. An agent the kernel killed at
/// its memory limit says so, in red.
#[test]
fn live_usage_and_a_kill_at_the_memory_limit() {
    let mut m = full_model();
    m.usage = Some(orange::orchestration::footprint::Usage {
        memory: 312 << 20,
        cpu: 4,
        ..Default::default()
    });
    snap("usage_w30", &m, 30, None);
    let f = render(&m, 48, None);
    assert!(f.contains("\nHarness: claude\nTokens: "), "{f}");
    assert!(f.contains("\nMem: 312M · CPU 4%\n"), "{f}");
    let narrow = render(&m, 14, None);
    assert!(narrow.contains("\n312M·4%\n"), "{narrow}");
    assert!(!render(&full_model(), 48, None).contains("Mem:"));
    let mut k = full_model();
    k.session = "dead".into();
    k.exit_signal = Some(9);
    k.agent = Some("killed: memory limit 4G".into());
    snap("killed_w30", &k, 30, None);
    let ansi = render_ansi(&k, 48, None);
    assert!(
        ansi.contains("\x1b[31mkilled: memory limit 4G"),
        "red: {ansi:?}"
    );
}

#[test]
fn full_sections_at_several_widths() {
    let m = full_model();
    for w in [20, 30, 48, 80] {
        snap(&format!("full_w{w}"), &m, w, None);
    }
    let f = render(&m, 48, None);
    assert!(f.contains(" +3 more\n"), "{f}");
    assert!(f.contains("── Files (13) ─"), "{f}");
    // At most 5 history entries, newest first, ages aligned.
    assert!(f.contains("\n 30s ago  status → working\n"), "{f}");
    assert!(f.contains("\n  2h ago  PR #123 created\n"), "{f}");
    assert!(!f.contains("spawned (pi)"), "{f}");
    assert!(f.ends_with(&format!("\n\n{FOOTER}\n")), "{f}");
}

#[test]
fn cjk_and_emoji_never_exceed_the_width() {
    let m = unicode_model();
    for w in [20, 30, 48] {
        snap(&format!("unicode_w{w}"), &m, w, None);
    }
    for w in 1..=100 {
        check_frame(&render(&m, w, None), w, None);
        check_frame(&render(&full_model(), w, None), w, None);
    }
    // A wide character is never split: at 9 columns the header keeps 4 wide characters.
    let f = render(&m, 9, None);
    assert_eq!(f.lines().next().unwrap(), "アプリ/…", "{f}");
}

#[test]
fn a_tiny_height_drops_lower_sections_first() {
    let m = full_model();
    snap("full_w30_h12", &m, 30, Some(12));
    snap("full_w30_h24", &m, 30, Some(24));
    snap("full_w30_h4", &m, 30, Some(4));
    for h in 1..=60 {
        for w in [10, 30, 80] {
            check_frame(&render(&m, w, Some(h)), w, Some(h));
            check_frame(&render(&empty_model(), w, Some(h)), w, Some(h));
        }
    }
    // Task goes before History, History before Files; the header stays.
    let f = render(&m, 40, Some(22));
    assert!(f.contains("── Files"), "{f}");
    assert!(!f.contains("── Task"), "{f}");
    assert!(f.starts_with("coffee/login-fix\n"), "{f}");
    assert!(f.ends_with(&format!("{FOOTER}\n")), "{f}");
    // A tall pane: everything, the footer on its last line.
    let f = render(&m, 40, Some(60));
    assert!(f.contains("── Task"), "{f}");
    assert_eq!(f.lines().last(), Some(FOOTER));
}

#[test]
fn dead_session_agent_port_and_notice() {
    let mut m = full_model();
    m.session = "dead".into();
    m.exit_status = Some(3);
    m.agent = Some("dead".into());
    m.port = Some(3101);
    m.notice = Some("Needs you: the agent exited twice".into());
    // Issue 24: what moves it on, with the key the plugin bound (in the task's session).
    let keys = Keys {
        table: Some("prefix O".into()),
    };
    m.next_step = Some(NextStep::of(Action::Respawn, "a1b2c3", Some(&keys)));
    m.files.truncate(2);
    m.history.truncate(2);
    m.task.truncate(1);
    snap("dead_w40", &m, 40, None);
    let f = render(&m, 40, None);
    assert!(f.contains("Status: working   ✗ dead (exit 3)\n"), "{f}");
    assert!(
        f.contains("Next: respawn: prefix O m r ·\norange task respawn a1b2c3\n"),
        "{f}"
    );
    // Narrow: wrapped at spaces, the command whole.
    snap("dead_w20", &m, 20, None);
    // Colours only in the ANSI variant, and the same text underneath.
    let a = render_ansi(&m, 40, None);
    assert!(a.contains("\x1b[31m✗ dead (exit 3)\x1b[0m"), "{a:?}");
    assert!(!f.contains('\x1b'));
}

/// Issue 24: the footer names the keys of the pane in focus, shortened to fit, never cut
/// in the middle of a key while a shorter form fits.
#[test]
fn the_footer_names_the_keys_of_the_pane_in_focus() {
    let mut m = full_model();
    let last = |m: &Model, w: usize| render(m, w, Some(30)).lines().last().unwrap().to_string();
    assert_eq!(last(&m, 48), "Ctrl+\\ sidebar  Ctrl+] full screen");
    assert_eq!(last(&m, 30), "^\\ sidebar  ^] full screen");
    assert_eq!(last(&m, 20), "^\\ sidebar ^] full");
    m.footer = SIDEBAR_FOOTER.into();
    assert_eq!(last(&m, 48), "Tab terminal  Esc back  q close");
    assert_eq!(last(&m, 30), "Tab term Esc back q close");
    let narrow = last(&m, 20);
    assert!(
        narrow.width() <= 20 && narrow.starts_with("Tab term"),
        "{narrow}"
    );
}

#[test]
fn a_deleted_task_renders_a_notice() {
    let f = render_gone("k3x9q2", 30, Some(10));
    check_frame(&f, 30, Some(10));
    insta::assert_snapshot!("gone_w30", f);
}

/// A remote task as its host's last snapshot lists it (`None`: no longer listed), drawn
/// here without ssh.
fn remote_frame(item: Option<Value>, reachable: bool, age_s: Option<u64>) -> String {
    let item: Option<orange::orchestration::attention::Item> =
        item.map(|v| serde_json::from_value(v).expect("an item"));
    let host = orange::orchestration::attention::HostView {
        name: "build-box".into(),
        reachable,
        age_s,
        error: None,
    };
    let m = remote_model("r7t2m1", item.as_ref(), &host, NOW);
    let frame = render(&m, 40, None);
    check_frame(&frame, 40, None);
    frame
}

#[test]
fn a_remote_task_renders_from_its_hosts_last_snapshot() {
    let item = serde_json::json!({
        "kind": "task", "id": "r7t2m1", "project": "api", "branch": "fix-auth",
        "status": "working", "bucket": "dead", "reason": "exited 3",
        "session": "api-r7t2m1", "exit_status": 3, "harness": "codex", "next": "respawn",
    });
    insta::assert_snapshot!(
        "remote_seen_w40",
        remote_frame(Some(item.clone()), true, Some(4))
    );
    // Unreachable: the session is not known now, never called dead.
    let f = remote_frame(Some(item), false, Some(90));
    assert!(!f.contains("dead"), "{f}");
    insta::assert_snapshot!("remote_unreachable_w40", f);
    insta::assert_snapshot!("remote_not_listed_w40", remote_frame(None, true, None));
}

// ---------------------------------------------------------------------------------------
// End to end
// ---------------------------------------------------------------------------------------

fn create_waiting_task(env: &TaskEnv, branch: &str, summary: &str) -> (String, PathBuf) {
    env.add_project(&["--pool-size", "2"]);
    let t = env.ok(&["task", "create", branch, summary, "--harness", "fake-wait"]);
    assert_eq!(t["outcome"], "spawned", "{t}");
    let id = t["id"].as_str().unwrap().to_string();
    let ws = env.ws_path(t["workspace"].as_str().unwrap());
    // The fake agent has started (it logs its environment first).
    env.agent_log(&id, "env");
    (id, ws)
}

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

/// The screen of a tmux pane, as a user sees it.
fn screen(env: &TaskEnv, target: &str) -> String {
    env.tmux.ok(&["capture-pane", "-p", "-t", target])
}

fn wait_screen(
    env: &TaskEnv,
    target: &str,
    what: &str,
    secs: u64,
    f: impl Fn(&str) -> bool,
) -> String {
    let mut last = String::new();
    common::poll(Duration::from_secs(secs), || {
        last = screen(env, target);
        f(&last).then(|| last.clone())
    })
    .unwrap_or_else(|| {
        panic!("timed out after {secs}s waiting for {what}; the pane shows:\n{last}")
    })
}

#[test]
fn the_loop_in_a_tmux_pane_follows_task_md_git_and_the_agent() {
    let env = TaskEnv::new();
    let (id, ws) = create_waiting_task(&env, "live-view", "Watch me 🍊");
    let bin = common::bin();
    let cmd = format!(
        "env ORANGE_HOME='{}' ORANGE_TMUX_SOCKET='{}' '{}' sidebar --task {id}; echo exited $?; exec sleep 600",
        env.home.display(),
        env.tmux.socket,
        bin.display()
    );
    env.tmux.ok(&[
        "new-session",
        "-d",
        "-s",
        "sb",
        "-x",
        "40",
        "-y",
        "30",
        &cmd,
    ]);
    // The whole first frame (a capture can come while tmux is still reading it): the
    // header, and the footer on the pane's last line.
    let s = wait_screen(&env, "=sb:", "the first frame, whole", 10, |s| {
        s.contains("app/live-view") && s.lines().nth(29) == Some(FOOTER)
    });
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(lines.len(), 30, "the frame fills the pane:\n{s}");
    assert_eq!(lines[0], "app/live-view", "{s}");
    assert_eq!(lines[1], "Status: working   ● live", "{s}");
    assert_eq!(lines[29], FOOTER, "the footer sits on the last line:\n{s}");
    assert!(s.contains(" Watch me 🍊"), "{s}");
    assert!(s.contains(" (no changes)"), "{s}");
    for l in &lines {
        assert!(l.width() <= 40, "{l:?}");
    }
    // The cursor is hidden.
    assert_eq!(
        env.tmux
            .ok(&["display", "-p", "-t", "=sb:", "#{cursor_flag}"]),
        "0"
    );

    // TASK.md edited in place: the pane follows within a few seconds.
    let md = env.home.join("tasks/app").join(&id).join("TASK.md");
    let mut text = std::fs::read_to_string(&md).unwrap();
    text.push_str("Appended by the agent\n");
    std::fs::write(&md, &text).unwrap();
    wait_screen(&env, "=sb:", "the appended line", 5, |s| {
        s.contains(" Appended by the agent")
    });
    // … and replaced by rename, as editors save.
    let tmp = md.with_extension("swp");
    std::fs::write(&tmp, "# Watch me 🍊\n\nRewritten body line\n").unwrap();
    std::fs::rename(&tmp, &md).unwrap();
    let s = wait_screen(&env, "=sb:", "the rewritten body", 5, |s| {
        s.contains(" Rewritten body line")
    });
    assert!(!s.contains("Appended by the agent"), "{s}");

    // A status change (task.json and history.jsonl) shows at once.
    env.ok(&["task", "update", &id, "--status", "stuck"]);
    wait_screen(&env, "=sb:", "the new status", 5, |s| {
        s.contains("Status: stuck") && s.contains("status → stuck")
    });

    // Git is read every 10 s, or at once when poked.
    std::fs::write(ws.join("src/lib.txt"), "changed\n").unwrap();
    std::fs::create_dir_all(env.home.join("run")).unwrap();
    std::fs::write(env.home.join("run/poke"), "1").unwrap();
    wait_screen(&env, "=sb:", "the changed file", 5, |s| {
        s.contains(" M src/lib.txt") && s.contains("── Files (1)")
    });

    // The agent exits: the session state follows within a couple of seconds.
    let session = env.task(&id)["tmux_session"].as_str().unwrap().to_string();
    env.tmux
        .ok(&["send-keys", "-t", &format!("={session}:"), "C-d"]);
    wait_screen(&env, "=sb:", "the dead agent", 6, |s| s.contains("✗ dead"));

    // A resize redraws at the new width.
    env.tmux
        .ok(&["resize-window", "-t", "=sb:", "-x", "24", "-y", "20"]);
    // Whole: down to the pane's last line (its footer).
    let s = wait_screen(&env, "=sb:", "the narrower frame", 5, |s| {
        s.lines()
            .any(|l| l.starts_with("── Files (1) ─") && l.width() == 24)
            && s.lines().count() == 20
    });
    assert!(s.lines().all(|l| l.width() <= 24), "{s}");

    // Deleting the task: the sidebar says so and keeps running.
    let c = env.ok(&["task", "cancel", &id, "--yes"]);
    // Cancel kept the workspace for its uncommitted change; the user lets it go.
    let ws = c["workspace"].as_str().unwrap().to_string();
    env.ok(&["workspace", "release", &ws, "--force"]);
    env.ok(&["task", "delete", &id, "--yes"]);
    wait_screen(&env, "=sb:", "the gone notice", 5, |s| {
        s.contains("This task was deleted.")
    });

    // `q` quits and restores the terminal.
    env.tmux.ok(&["send-keys", "-t", "=sb:", "q"]);
    wait_screen(&env, "=sb:", "the shell after q", 5, |s| {
        s.contains("exited 0")
    });
    assert_eq!(
        env.tmux.ok(&[
            "display",
            "-p",
            "-t",
            "=sb:",
            "#{cursor_flag} #{alternate_on}"
        ]),
        "1 0"
    );
}

#[test]
fn ctrl_c_restores_the_cursor() {
    let env = TaskEnv::new();
    let (id, _ws) = create_waiting_task(&env, "interrupt", "Interrupt me");
    let cmd = format!(
        "trap true INT; env ORANGE_HOME='{}' ORANGE_TMUX_SOCKET='{}' '{}' sidebar --task {id}; echo exited $?; exec sleep 600",
        env.home.display(),
        env.tmux.socket,
        common::bin().display()
    );
    env.tmux.ok(&[
        "new-session",
        "-d",
        "-s",
        "sb",
        "-x",
        "40",
        "-y",
        "20",
        &cmd,
    ]);
    wait_screen(&env, "=sb:", "the first frame", 10, |s| {
        s.contains("app/interrupt")
    });
    assert_eq!(
        env.tmux
            .ok(&["display", "-p", "-t", "=sb:", "#{cursor_flag}"]),
        "0"
    );
    env.tmux.ok(&["send-keys", "-t", "=sb:", "C-c"]);
    wait_screen(&env, "=sb:", "the shell after Ctrl+C", 5, |s| {
        s.contains("exited 130")
    });
    wait_for("the cursor to come back", 5, || {
        env.tmux.ok(&[
            "display",
            "-p",
            "-t",
            "=sb:",
            "#{cursor_flag} #{alternate_on}",
        ]) == "1 0"
    });
}

#[test]
fn sidebar_without_once_refuses_json_and_toggle_needs_tmux() {
    let env = TaskEnv::new();
    let (id, _ws) = create_waiting_task(&env, "flags", "Flags");
    let msg = env.err(&["sidebar", "--task", &id], "invalid_argument");
    assert!(msg.contains("--once"), "{msg}");
    // Outside tmux (no TMUX_PANE) toggle explains itself.
    let (ok, v): (bool, Value) = env.json(&["sidebar", "toggle"]);
    assert!(!ok, "{v}");
}
