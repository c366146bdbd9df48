//! Typing into panes and reading them back: send-text, copy mode, capture-pane, and the
//! one-call snapshot, observe and capture of several panes.

use crate::common::wait_until;

use std::path::Path;

use orange::adapters::tmux::{NewSession, OptionScope};

use super::{read, TestServer, WAIT};

#[test]
fn send_text_delivers_exactly() {
    let s = TestServer::start();
    let t = s.tmux();
    let file = s.path("typed.txt");
    let info = s.cat_session("p/typed", &file);
    let texts = [
        "plain",
        "ends with semicolon;",
        ";",
        "ends with backslash-semicolon \\;",
        "it's \"quoted\" $(touch PWNED) `touch PWNED` && rm -rf nothing",
        "-starts-with-dash",
        "Escape Enter C-c",
        "#{session_name} %1 ##",
        "line one\nline two;\n\nline four",
        "unicode ✓ 日本",
    ];
    let mut expected = String::new();
    for text in texts {
        t.send_text_then(&info.pane_id, text, &[], "Enter").unwrap();
        expected.push_str(text);
        expected.push('\n');
        wait_until(&format!("{text:?} in the file"), WAIT, || {
            read(&file) == expected
        });
    }
    assert!(!s.dir.path().join("PWNED").exists());
}

#[test]
fn send_text_escape_and_copy_mode() {
    let s = TestServer::start();
    let t = s.tmux();
    let file = s.path("typed.txt");
    s.cat_session("p/esc", &file);
    // Escape goes first, as its own key: cat records it verbatim.
    t.send_text_then("p/esc", "after escape", &["Escape"], "Enter")
        .unwrap();
    wait_until("escape line", WAIT, || read(&file) == "\x1bafter escape\n");

    // A pane left in copy mode (the user scrolled up) still gets the text.
    s.raw(&["copy-mode", "-t", "=p/esc:"]);
    assert_eq!(
        s.raw(&["display-message", "-p", "-t", "=p/esc:", "#{pane_in_mode}"])
            .trim(),
        "1"
    );
    t.send_text_then("p/esc", "from copy mode", &[], "Enter")
        .unwrap();
    wait_until("copy-mode line", WAIT, || {
        read(&file) == "\x1bafter escape\nfrom copy mode\n"
    });
}

#[test]
fn capture_pane_returns_screen_and_scrollback() {
    let s = TestServer::start();
    let t = s.tmux();
    let info = t
        .new_session(&NewSession {
            name: "p/cap".into(),
            cwd: s.dir.path().into(),
            command: vec![
                "sh".into(),
                "-c".into(),
                "i=1; while [ $i -le 100 ]; do echo row-$i; i=$((i+1)); done; exec sleep 60".into(),
            ],
            width: Some(100),
            height: Some(20),
            ..Default::default()
        })
        .unwrap();
    wait_until("row-100", WAIT, || {
        t.capture_pane("p/cap", 0).unwrap().contains("row-100")
    });
    let screen = t.capture_pane("p/cap", 0).unwrap();
    let lines: Vec<&str> = screen.lines().collect();
    assert!(lines.len() <= 20, "{lines:?}");
    assert_eq!(lines.last(), Some(&"row-100"));
    assert!(!screen.contains("row-1\n"));
    let all = t.capture_pane(&info.pane_id, 1000).unwrap();
    let rows: Vec<String> = (1..=100).map(|i| format!("row-{i}")).collect();
    assert_eq!(all, rows.join("\n"));

    let pane = t
        .snapshot()
        .unwrap()
        .into_iter()
        .find(|p| p.pane_id == info.pane_id)
        .unwrap();
    assert_eq!(pane.pane_width, 100);
    assert!(
        pane.pane_height == 20 || pane.pane_height == 19,
        "{}",
        pane.pane_height
    );
}

#[test]
fn snapshot_lists_every_pane_in_one_call() {
    let s = TestServer::start();
    let t = s.tmux();
    let sub = s.path("sub");
    std::fs::create_dir(&sub).unwrap();
    let a = s.session("p/a", &["sleep", "30"]);
    let b = t
        .new_session(&NewSession {
            name: "q/b".into(),
            cwd: sub.clone(),
            command: vec!["sleep".into(), "31".into()],
            ..Default::default()
        })
        .unwrap();
    let panes = t.snapshot().unwrap();
    let mut names: Vec<&str> = panes.iter().map(|p| p.session_name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["keepalive", "p/a", "q/b"]);
    let pb = panes.iter().find(|p| p.session_id == b.id).unwrap();
    assert_eq!(pb.pane_id, b.pane_id);
    assert_eq!(pb.window_id, b.window_id);
    assert_eq!(pb.pane_pid, b.pane_pid);
    // tmux reads the path from /proc of the pane's process: right after the spawn it may
    // be empty (the child has not changed directory yet). Seen once in ten suite runs.
    let want = sub.canonicalize().unwrap();
    wait_until("the pane's current path", WAIT, || {
        t.snapshot()
            .unwrap()
            .iter()
            .find(|p| p.session_id == b.id)
            .and_then(|p| Path::new(&p.pane_current_path).canonicalize().ok())
            .is_some_and(|p| p == want)
    });
    assert!(!pb.pane_dead && pb.pane_active && !pb.session_attached);
    assert!(pb.window_activity > 1_600_000_000);
    let pa = panes.iter().find(|p| p.session_id == a.id).unwrap();
    wait_until("sleep to be the current command", WAIT, || {
        t.snapshot()
            .unwrap()
            .iter()
            .any(|p| p.pane_id == pa.pane_id && p.pane_current_command == "sleep")
    });

    let sessions = t.list_sessions().unwrap();
    assert_eq!(sessions.len(), 3);
    let sb = sessions.iter().find(|r| r.id == b.id).unwrap();
    assert_eq!(
        (sb.name.as_str(), sb.windows, sb.attached),
        ("q/b", 1, false)
    );

    t.kill_server().unwrap();
    assert!(t.snapshot().unwrap().is_empty(), "no server: no panes");
    assert!(t.list_sessions().unwrap().is_empty());
    assert!(!t.has_session("p/a").unwrap());
    assert!(!t.kill_session("p/a").unwrap());
    assert_eq!(
        t.get_option(OptionScope::Global, "@orange_summary")
            .unwrap(),
        None
    );
    t.kill_server().unwrap();
}

/// The observer's one call: each session once (its front pane standing for it) with its own
/// marks, the global options once, the server that answered; what it does not ask of a pane
/// stays empty.
#[test]
fn observe_reads_marks_per_session_and_globals_once() {
    let s = TestServer::start();
    let t = s.tmux();
    let a = t
        .new_session(&NewSession {
            name: "p/a".into(),
            cwd: s.dir.path().to_path_buf(),
            command: vec!["sleep".into(), "30".into()],
            marks: vec![("@orange_t".into(), "task a; #{x}".into())],
            ..Default::default()
        })
        .unwrap();
    let b = s.session("p/b", &["sleep", "30"]);
    // A second pane in b's window, made the active one: it stands for b.
    let split = s.raw(&[
        "split-window",
        "-d",
        "-P",
        "-F",
        "#{pane_id}",
        "-t",
        &b.pane_id,
        "sleep",
        "30",
    ]);
    let split = split.trim();
    s.raw(&["select-pane", "-t", split]);
    t.set_option(OptionScope::Global, "@orange_g", "global ;")
        .unwrap();
    let o = t
        .observe(&["@orange_t", "@unset"], &["@orange_g", "@none"])
        .unwrap();
    assert_eq!(o.server, t.server_identity().unwrap());
    assert_eq!(
        o.options,
        [
            ("@orange_g".to_string(), "global ;".to_string()),
            ("@none".to_string(), String::new())
        ]
    );
    let ids: Vec<&str> = o.sessions.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids.iter().filter(|id| **id == b.id).count(), 1, "{ids:?}");
    let sa = o.sessions.iter().find(|m| m.id == a.id).unwrap();
    assert_eq!(
        (sa.name.as_str(), sa.pane_id.as_str()),
        ("p/a", a.pane_id.as_str())
    );
    assert_eq!(sa.mark("@orange_t"), Some("task a; #{x}"));
    assert_eq!(sa.mark("@unset"), None);
    let sb = o.sessions.iter().find(|m| m.id == b.id).unwrap();
    assert_eq!(sb.pane_id, split);
    assert_eq!(sb.mark("@orange_t"), None);
    assert_eq!(o.panes.len(), 4, "keepalive, a and b's two panes");
    let pa = o.panes.iter().find(|p| p.pane_id == a.pane_id).unwrap();
    assert_eq!(
        (pa.session_id.as_str(), pa.pane_pid),
        (a.id.as_str(), a.pane_pid)
    );
    assert!(pa.pane_active && !pa.pane_dead && pa.window_activity > 1_600_000_000);
    // Its window is asked (an agent's teammates are its window's other panes); not asked:
    // where else the pane is, how big, its command.
    assert!(pa.window_id.starts_with('@'), "{}", pa.window_id);
    assert_eq!((pa.pane_width, pa.pane_current_command.as_str()), (0, ""));
    t.kill_server().unwrap();
    assert_eq!(
        t.observe(&["@orange_t"], &["@orange_g"]).unwrap(),
        Default::default()
    );
}

#[test]
fn capture_panes_reads_several_panes_in_one_call_and_survives_a_gone_one() {
    let s = TestServer::start();
    let t = s.tmux();
    let a = s.session("p/ca", &["sh", "-c", "echo alpha-screen; exec sleep 60"]);
    let b = s.session(
        "p/cb",
        &["sh", "-c", "printf 'beta 1\\nbeta 2\\n'; exec sleep 60"],
    );
    wait_until("both screens", WAIT, || {
        t.capture_pane(&a.pane_id, 0).unwrap().contains("alpha")
            && t.capture_pane(&b.pane_id, 0).unwrap().contains("beta 2")
    });
    let got = t.capture_panes(&[&b.pane_id, &a.pane_id]).unwrap();
    assert_eq!(got.len(), 2);
    assert!(
        got[0].as_deref().unwrap().contains("beta 1\nbeta 2"),
        "{got:?}"
    );
    assert!(
        got[1].as_deref().unwrap().contains("alpha-screen"),
        "{got:?}"
    );
    assert!(!got[0].as_deref().unwrap().contains("alpha"), "{got:?}");
    // A pane gone between the snapshot and the read: the others are still read.
    t.kill_session("p/ca").unwrap();
    let got = t.capture_panes(&[&a.pane_id, &b.pane_id]).unwrap();
    assert_eq!(got[0], None);
    assert!(got[1].as_deref().unwrap().contains("beta 2"), "{got:?}");
    assert!(t.capture_panes(&[]).unwrap().is_empty());
}
