//! Snapshot tests of the pure render (tests/sidebar/snapshots/): several widths, empty and
//! full sections, CJK and emoji, tiny heights, the footer, a deleted task, a remote task.

use orange::orchestration::attention::next::{Action, Keys, NextStep};
use orange::ui::diff::ChangedFile;
use orange::ui::sidebar::model::{remote_model, HistoryEntry, Model, FOOTER, SIDEBAR_FOOTER};
use orange::ui::sidebar::render::{render, render_ansi, render_gone};
use serde_json::Value;
use unicode_width::UnicodeWidthStr;

use super::check_frame;

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
