//! Sessions and what runs in them: the hostile config in force, exact targets and names
//! used verbatim, a program's argv, environment and cwd, and how its exit is seen.

use crate::common::wait_until;

use std::process::Command;

use orange::adapters::tmux::{NewSession, OptionScope, PaneExit, Tmux};

use super::{read, TestServer, WAIT};

/// How the program in `target` (a pane id, or a session's active pane) ended, `None`
/// while it runs: read as orange reads it, from a snapshot.
fn exit_of(t: &Tmux, target: &str) -> Option<PaneExit> {
    let panes = t.snapshot().unwrap();
    let pane = panes
        .iter()
        .find(|p| {
            p.pane_id == target
                || (p.pane_active && (p.session_id == target || p.session_name == target))
        })
        .unwrap_or_else(|| panic!("no pane {target} in {panes:?}"));
    pane.exit()
}

fn wait_for_exit(t: &Tmux, target: &str) -> PaneExit {
    let mut exit = None;
    wait_until(&format!("{target} to exit"), WAIT, || {
        exit = exit_of(t, target);
        exit.is_some()
    });
    exit.unwrap()
}

#[test]
fn hostile_config_is_in_force_and_base_index_1_works() {
    let s = TestServer::start();
    let t = s.tmux();
    assert_eq!(
        t.get_option(OptionScope::Global, "base-index").unwrap(),
        Some("1".to_string())
    );
    // Every command below reaches its program although the default shell mangles commands.
    assert_eq!(
        t.get_option(OptionScope::Global, "default-shell").unwrap(),
        Some(s.path("hostile-shell").to_str().unwrap().to_string())
    );
    let info = s.session("p/one", &["sleep", "30"]);
    assert!(
        info.id.starts_with('$')
            && info.pane_id.starts_with('%')
            && info.window_id.starts_with('@')
    );
    assert_eq!(info.name, "p/one");
    let panes = t.snapshot().unwrap();
    let pane = panes.iter().find(|p| p.pane_id == info.pane_id).unwrap();
    assert_eq!((pane.window_index, pane.pane_index), (1, 1));
    assert_eq!(pane.pane_pid, info.pane_pid);
    // Our window keeps its pane after exit although the config says remain-on-exit off.
    assert_eq!(
        t.get_option(OptionScope::Window("p/one"), "remain-on-exit")
            .unwrap(),
        Some("on".to_string())
    );
}

#[test]
fn targets_are_exact_never_prefixes() {
    let s = TestServer::start();
    let t = s.tmux();
    let other = s.path("feature-x.txt");
    s.cat_session("p/feature-x", &other);

    assert!(t.has_session("p/feature-x").unwrap());
    assert!(!t.has_session("p/feat").unwrap());
    assert!(!t.kill_session("p/feat").unwrap());
    assert!(t.has_session("p/feature-x").unwrap());
    assert!(t
        .send_text_then("p/feat", "typed into the wrong session", &[], "Enter")
        .is_err());
    assert!(t.capture_pane("p/feat", 0).is_err());
    assert!(t.session_info("p/feat").unwrap().is_none());
    assert!(t
        .set_option(OptionScope::Session("p/feat"), "@orange_status", "x")
        .is_err());
    assert_eq!(
        t.get_option(OptionScope::Session("p/feature-x"), "@orange_status")
            .unwrap(),
        None
    );

    // With both alive, killing p/feat kills only p/feat.
    let feat = s.cat_session("p/feat", &s.path("feat.txt"));
    t.send_text_then("p/feat", "for feat", &[], "Enter")
        .unwrap();
    wait_until("feat.txt", WAIT, || {
        read(&s.path("feat.txt")) == "for feat\n"
    });
    assert_eq!(read(&other), "", "nothing was typed into p/feature-x");
    assert!(t.kill_session("p/feat").unwrap());
    assert!(!t.has_session(&feat.id).unwrap());
    assert!(t.has_session("p/feature-x").unwrap());
    assert!(!t.kill_session(&feat.id).unwrap(), "second kill is a no-op");
}

#[test]
fn sanitized_names_are_used_verbatim_by_tmux() {
    let s = TestServer::start();
    let t = s.tmux();
    let name = orange::execution::launch::session_name(
        &orange::execution::session::Mux::named("tmux").unwrap(),
        "my.app",
        "fix:1",
    );
    assert_eq!(name, "my_app/fix_1");
    let info = s.session(&name, &["sleep", "30"]);
    assert_eq!(info.name, name);
    assert!(t.has_session(&name).unwrap());
    assert!(t.has_session(&info.id).unwrap());
    assert!(t.snapshot().unwrap().iter().any(|p| p.session_name == name));
    assert_eq!(t.session_info(&name).unwrap(), Some(info.clone()));
    assert_eq!(t.session_info(&info.pane_id).unwrap(), Some(info));
    // Names tmux would rewrite are refused instead of silently changed.
    let err = t
        .new_session(&NewSession {
            name: "my.app/fix:1".into(),
            cwd: s.dir.path().into(),
            ..Default::default()
        })
        .unwrap_err();
    assert_eq!(err.code(), "invalid_argument");
}

#[test]
fn hostile_argv_env_and_cwd_arrive_intact() {
    let s = TestServer::start();
    let t = s.tmux();
    let work = s.path("work dir; $(x)");
    std::fs::create_dir(&work).unwrap();
    let out = s.path("argv.out");
    let args = [
        "it's",
        "\"double\"",
        "$(touch PWNED1)",
        "`touch PWNED2`",
        "a; touch PWNED3",
        "x && touch PWNED4 || true",
        "line1\nline2",
        "trailing;",
        ";",
        "back\\slash\\;",
        "\\",
        "",
        "  spaces  ",
        "*",
        "~",
        "$HOME",
        "#{session_name}",
        "-e",
        "--",
        "%s",
        "tab\there",
        "unicode ✓ 日本",
        "ends with a semicolon;",
    ];
    // Writes cwd, $ORANGE_T and every argument, NUL-terminated, then renames into place.
    let script = r#"out=$0; { pwd; printf '\0%s\0' "$ORANGE_T"; for a in "$@"; do printf '%s\0' "$a"; done; } > "$out.tmp" && mv "$out.tmp" "$out""#;
    let mut command = vec!["sh".to_string(), "-c".into(), script.into()];
    command.push(out.to_str().unwrap().into());
    command.extend(args.iter().map(|a| a.to_string()));
    let env_value = "v a l'u\"e $(touch PWNED5);";
    let info = t
        .new_session(&NewSession {
            name: "p/argv".into(),
            cwd: work.clone(),
            env: vec![("ORANGE_T".into(), env_value.into())],
            command,
            width: None,
            height: None,
            marks: vec![("@orange_t".into(), env_value.into())],
        })
        .unwrap();
    assert_eq!(wait_for_exit(&t, &info.id), PaneExit::Status(0));
    // A mark reaches tmux verbatim, set with the session, and is read back as it was.
    let marked = t.marked_sessions(&["@orange_t", "@unset"]).unwrap();
    assert_eq!(marked.server, t.server_identity().unwrap());
    let m = marked.sessions.iter().find(|m| m.id == info.id).unwrap();
    assert_eq!(m.mark("@orange_t"), Some(env_value));
    assert_eq!(m.mark("@unset"), None);
    assert_eq!(m.pane_id, info.pane_id);
    let got = read(&out);
    let mut expected = format!("{}\n\0{env_value}\0", work.display());
    for a in args {
        expected.push_str(a);
        expected.push('\0');
    }
    assert_eq!(got, expected);
    for dir in [s.dir.path(), work.as_path()] {
        for i in 1..=5 {
            assert!(
                !dir.join(format!("PWNED{i}")).exists(),
                "PWNED{i} was executed"
            );
        }
    }
}

#[test]
fn a_missing_program_is_a_visible_exit_127() {
    let s = TestServer::start();
    let t = s.tmux();
    s.session("p/missing", &["orange-no-such-program-xyz", "arg"]);
    assert_eq!(wait_for_exit(&t, "p/missing"), PaneExit::Status(127));
    // sh's "not found" message is usually in the pane too, but output written in the
    // very instant of exit is sometimes lost between the pty and tmux (about 1 in 40 runs),
    // so it is not asserted here; see the next test for output that is.
    assert!(t.has_session("p/missing").unwrap());
}

#[test]
fn exit_status_and_signal_are_observed_and_pane_stays_readable() {
    let s = TestServer::start();
    let t = s.tmux();
    // Each exits only when told (a line sent once its text is on the screen): tmux 3.3a
    // drops what a pane wrote but tmux had not yet read when its process exits.
    let ok = s.session("p/ok", &["sh", "-c", "echo output-of-ok; read _"]);
    s.session(
        "p/three",
        &["sh", "-c", "echo output-of-three; read _; exit 3"],
    );
    let killed = s.session(
        "p/killed",
        &["sh", "-c", "echo output-of-killed; exec sleep 60"],
    );
    for (name, text) in [("p/ok", "output-of-ok"), ("p/three", "output-of-three")] {
        wait_until(text, WAIT, || {
            t.capture_pane(name, 0).unwrap().contains(text)
        });
        t.send_text_then(name, "", &[], "Enter").unwrap();
    }

    assert_eq!(wait_for_exit(&t, &ok.pane_id), PaneExit::Status(0));
    assert_eq!(wait_for_exit(&t, "p/three"), PaneExit::Status(3));
    assert_eq!(exit_of(&t, "p/killed"), None, "still running");
    wait_until("output-of-killed", WAIT, || {
        t.capture_pane("p/killed", 0)
            .unwrap()
            .contains("output-of-killed")
    });
    let status = Command::new("kill")
        .args(["-KILL", &killed.pane_pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(wait_for_exit(&t, "p/killed"), PaneExit::Signal(9));

    for (name, text) in [
        ("p/ok", "output-of-ok"),
        ("p/three", "output-of-three"),
        ("p/killed", "output-of-killed"),
    ] {
        assert!(
            t.has_session(name).unwrap(),
            "{name} still exists after exit"
        );
        let text_seen = t.capture_pane(name, 100).unwrap();
        assert!(text_seen.contains(text), "{name}: {text_seen:?}");
    }
    let panes = t.snapshot().unwrap();
    let three = panes.iter().find(|p| p.session_name == "p/three").unwrap();
    assert!(three.pane_dead);
    assert_eq!(three.pane_dead_status, Some(3));
    assert_eq!(three.exit(), Some(PaneExit::Status(3)));
    let killed = panes.iter().find(|p| p.session_name == "p/killed").unwrap();
    assert_eq!(killed.pane_dead_signal, Some(9));
    assert!(
        !panes
            .iter()
            .find(|p| p.session_name == "keepalive")
            .unwrap()
            .pane_dead
    );
}

/// Programs that exit at once, with a child of their own: with Debian's tmux (libutempter)
/// about one in five leaves a zombie whose status tmux never collects unless nudged. One at
/// a time, so no later exit's SIGCHLD reaps an earlier zombie by chance.
#[test]
fn quick_exits_always_report_their_status() {
    let s = TestServer::start();
    let t = s.tmux();
    for i in 0..12 {
        let name = format!("p/quick-{i}");
        let info = s.session(&name, &["sh", "-c", "/bin/true; exit 7"]);
        assert_eq!(wait_for_exit(&t, &name), PaneExit::Status(7), "{name}");
        let pane = t
            .snapshot()
            .unwrap()
            .into_iter()
            .find(|p| p.pane_id == info.pane_id)
            .unwrap();
        assert_eq!(pane.exit(), Some(PaneExit::Status(7)));
        assert!(t.kill_session(&info.id).unwrap());
    }
}

#[test]
fn read_loop_sees_text_then_exits() {
    let s = TestServer::start();
    let t = s.tmux();
    // It exits only when told (a second line), once its answer is on the screen: tmux
    // 3.3a drops what a pane wrote but tmux had not yet read when its process exits.
    s.session(
        "p/read",
        &[
            "sh",
            "-c",
            "read line; echo \"got [$line]\"; read _; exit 3",
        ],
    );
    assert_eq!(exit_of(&t, "p/read"), None);
    t.send_text_then("p/read", "hello; world;", &[], "Enter")
        .unwrap();
    wait_until("the answer on the screen", WAIT, || {
        t.capture_pane("p/read", 100)
            .unwrap()
            .contains("got [hello; world;]")
    });
    t.send_text_then("p/read", "", &[], "Enter").unwrap();
    assert_eq!(wait_for_exit(&t, "p/read"), PaneExit::Status(3));
    let dead = t
        .send_text_then("p/read", "too late", &[], "Enter")
        .unwrap_err();
    assert!(dead.to_string().contains("dead"), "{dead}");
    assert!(t
        .capture_pane("p/read", 100)
        .unwrap()
        .contains("got [hello; world;]"));
}
