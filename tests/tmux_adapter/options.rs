//! Options at each scope, the environment, attach and display, errors, a missing tmux,
//! and the server the environment selects.

use orange::adapters::tmux::{NewSession, OptionScope, Server, Tmux};

use super::TestServer;

#[test]
fn options_global_session_and_pane() {
    let s = TestServer::start();
    let t = s.tmux();
    let a = s.session("p/a", &["sleep", "30"]);
    s.session("p/b", &["sleep", "30"]);
    let g = OptionScope::Global;
    let summary = "2 working; 1 waiting \"x\" #{session_name} ;";

    assert_eq!(t.get_option(g, "@orange_summary").unwrap(), None);
    t.set_option(g, "@orange_summary", summary).unwrap();
    assert_eq!(
        t.get_option(g, "@orange_summary").unwrap().as_deref(),
        Some(summary)
    );
    // The status line sees it as a format variable.
    assert_eq!(
        s.raw(&["display-message", "-p", "-t", "=p/a:", "#{@orange_summary}"])
            .trim_end_matches('\n'),
        summary
    );

    let sa = OptionScope::Session("p/a");
    t.set_option(sa, "@orange_status", "working;").unwrap();
    t.set_option(OptionScope::Session("p/b"), "@orange_status", "")
        .unwrap();
    assert_eq!(
        t.get_option(sa, "@orange_status").unwrap().as_deref(),
        Some("working;")
    );
    assert_eq!(
        t.get_option(OptionScope::Session(&a.id), "@orange_status")
            .unwrap()
            .as_deref(),
        Some("working;")
    );
    assert_eq!(
        t.get_option(OptionScope::Session("p/b"), "@orange_status")
            .unwrap()
            .as_deref(),
        Some(""),
        "set to empty is not unset"
    );
    assert_eq!(t.get_option(g, "@orange_status").unwrap(), None);
    assert_eq!(
        s.raw(&[
            "show-options",
            "-v",
            "-t",
            "=keepalive:",
            "-q",
            "@orange_status"
        ]),
        ""
    );

    t.set_options(&[(sa, "@orange_status", None)]).unwrap();
    assert_eq!(t.get_option(sa, "@orange_status").unwrap(), None);
    t.set_options(&[(sa, "@orange_status", None)]).unwrap();
    t.set_options(&[(g, "@orange_summary", None)]).unwrap();
    assert_eq!(t.get_option(g, "@orange_summary").unwrap(), None);

    let pane = OptionScope::Pane(&a.pane_id);
    t.set_option(pane, "@orange_state", "idle").unwrap();
    assert_eq!(
        t.get_option(pane, "@orange_state").unwrap().as_deref(),
        Some("idle")
    );
    assert_eq!(t.get_option(sa, "@orange_state").unwrap(), None);

    // An option on a session that is gone: get is an error, unset a no-op.
    assert!(t.get_option(OptionScope::Session("p/gone"), "@x").is_err());
    t.set_options(&[(OptionScope::Session("p/gone"), "@x", None)])
        .unwrap();
}

#[test]
fn environment_attach_display_and_errors() {
    let s = TestServer::start();
    let t = s.tmux();
    let a = s.session("p/env", &["sleep", "30"]);
    t.set_global_environment("ORANGE_TASK_ID", "abc;").unwrap();
    assert_eq!(
        s.raw(&["show-environment", "-g", "ORANGE_TASK_ID"]),
        "ORANGE_TASK_ID=abc;\n"
    );
    assert_eq!(
        t.attach_command(&a.id),
        [
            "tmux",
            "-L",
            s.socket.as_str(),
            "attach-session",
            "-t",
            a.id.as_str()
        ]
    );
    assert_eq!(
        t.attach_command("p/env"),
        [
            "tmux",
            "-L",
            s.socket.as_str(),
            "attach-session",
            "-t",
            "=p/env"
        ]
    );
    // No client is attached: display-message has nowhere to show, but is not an error;
    // switch-client has no client to switch and fails with tmux's message.
    t.display_message_to(None, None, "-x #{not a format} done;")
        .unwrap();
    let err = t.switch_client("p/env").unwrap_err();
    assert_eq!(err.code(), "backend_command_failed");

    let dup = t
        .new_session(&NewSession {
            name: "p/env".into(),
            cwd: s.dir.path().into(),
            ..Default::default()
        })
        .unwrap_err();
    assert_eq!(dup.code(), "backend_command_failed");
    assert!(dup.to_string().contains("duplicate session"), "{dup}");
}

/// No tmux on PATH: a command that needs it says `backend_not_found`, and names tmux.
#[test]
fn missing_tmux_is_backend_not_found() {
    let env = crate::common::TaskEnv::new();
    env.add_project(&[]);
    // Only what orange needs besides tmux: git, and sh for the stand-in agent.
    let bare = env.root().join("bin-without-tmux");
    std::fs::create_dir_all(&bare).unwrap();
    for tool in ["git", "sh"] {
        let real = crate::common::find_program(&env.path, tool).unwrap();
        std::os::unix::fs::symlink(real, bare.join(tool)).unwrap();
    }
    let args = [
        "task",
        "create",
        "no-tmux",
        "x",
        "--harness",
        "fake-wait",
        "--json",
    ];
    let mut c = env.cmd_in(&env.repo, &args);
    c.env("PATH", &bare);
    let out = c.output().unwrap();
    let m = crate::common::expect_error(
        &args,
        crate::common::parse_json_output(&args, &out),
        "backend_not_found",
    );
    assert!(m.contains("tmux"), "{m}");
}

#[test]
fn server_selection_from_environment_values() {
    assert_eq!(
        Tmux::server_from(Some("orange-sock"), Some("/tmp/tmux-1/default,42,0")),
        Server::Name("orange-sock".into())
    );
    assert_eq!(
        Tmux::server_from(Some("/tmp/o.sock"), None),
        Server::Path("/tmp/o.sock".into())
    );
    assert_eq!(
        Tmux::server_from(None, Some("/tmp/tmux-1/default,42,0")),
        Server::Path("/tmp/tmux-1/default".into())
    );
    assert_eq!(Tmux::server_from(None, None), Server::Default);
    assert_eq!(
        Tmux::new(Server::Path("/tmp/o.sock".into())).attach_command("$1"),
        ["tmux", "-S", "/tmp/o.sock", "attach-session", "-t", "$1"]
    );
    assert_eq!(
        Tmux::default().attach_command("a/b"),
        ["tmux", "attach-session", "-t", "=a/b"]
    );
}
