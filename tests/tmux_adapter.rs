//! The tmux adapter against a REAL tmux server: each test runs its own server on a private
//! socket with a hostile user config, and kills it when done, even on panic.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common::wait_until;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use orange::adapters::tmux::{NewSession, OptionScope, PaneExit, Server, Tmux};
use tempfile::TempDir;

static SEQ: AtomicUsize = AtomicUsize::new(0);

/// What a user might have in ~/.tmux.conf, all of it hostile to naive adapters.
const HOSTILE_CONF: &str = r##"
set -g base-index 1
setw -g pane-base-index 1
set -g renumber-windows on
set -g status-right '#[fg=red]#{session_name} %H:%M ;'
set -g history-limit 5000
setw -g remain-on-exit off
set -g default-shell "@SHELL@"
"##;

/// A default shell that mangles whatever it is asked to run: a command that went through
/// the user's shell instead of reaching its program directly fails loudly.
const HOSTILE_SHELL: &str = "#!/bin/sh\necho \"hostile shell ran: $*\"\nexit 99\n";

/// A private tmux server, killed on drop (and its socket file removed).
struct TestServer {
    socket: String,
    socket_path: Option<PathBuf>,
    dir: TempDir,
    conf: PathBuf,
}

impl TestServer {
    fn start() -> TestServer {
        let socket = format!(
            "orange-test-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::SeqCst)
        );
        let dir = tempfile::tempdir().unwrap();
        let shell = dir.path().join("hostile-shell");
        std::fs::write(&shell, HOSTILE_SHELL).unwrap();
        chmod_x(&shell);
        let conf = dir.path().join("tmux.conf");
        std::fs::write(
            &conf,
            HOSTILE_CONF.replace("@SHELL@", shell.to_str().unwrap()),
        )
        .unwrap();
        let mut server = TestServer {
            socket,
            socket_path: None,
            dir,
            conf,
        };
        // A session of our own keeps the server (and its config) up for the whole test.
        server.raw(&["new-session", "-d", "-s", "keepalive", "sleep", "3600"]);
        let path = server.raw(&["display-message", "-p", "#{socket_path}"]);
        server.socket_path = Some(PathBuf::from(path.trim_end()));
        server
    }

    fn tmux(&self) -> Tmux {
        Tmux::new(Server::Name(self.socket.clone())).with_config(&self.conf)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// tmux called directly (not through the adapter), for setup and cross-checks.
    fn raw(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .arg("-f")
            .arg(&self.conf)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A session running `command` in the test dir.
    fn session(&self, name: &str, command: &[&str]) -> orange::adapters::tmux::SessionInfo {
        self.tmux()
            .new_session(&NewSession {
                name: name.to_string(),
                cwd: self.dir.path().to_path_buf(),
                command: command.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            })
            .unwrap()
    }

    /// A session whose program appends every line it reads to `file`.
    fn cat_session(&self, name: &str, file: &Path) -> orange::adapters::tmux::SessionInfo {
        self.session(
            name,
            &["sh", "-c", "exec cat > \"$0\"", file.to_str().unwrap()],
        )
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
        // tmux 3.3a leaves the socket file behind.
        if let Some(p) = &self.socket_path {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn chmod_x(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

const WAIT: Duration = Duration::from_secs(5);

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

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

/// The tmux calls a test's sessions make when their `PATH` puts a counting tmux first (the
/// adapter runs tmux with the sessions' `PATH`): that `PATH`, and the log of calls.
fn counted_path(s: &TestServer) -> (String, PathBuf) {
    let (bin, log) = crate::common::counting_tmux(s.dir.path());
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    (path, log)
}

/// A session of `name` on `path` running `command`, marked with its own name.
fn spec(s: &TestServer, name: &str, path: &str, command: &[&str]) -> NewSession {
    NewSession {
        name: name.into(),
        cwd: s.dir.path().into(),
        env: vec![("PATH".into(), path.into())],
        command: command.iter().map(|c| c.to_string()).collect(),
        marks: vec![("@orange_task".into(), name.into())],
        ..Default::default()
    }
}

/// A session id's number: tmux numbers sessions in the order it makes them.
fn made_at(id: &str) -> u32 {
    id.trim_start_matches('$').parse().unwrap()
}

#[test]
fn several_sessions_are_made_in_one_call_in_order_and_a_taken_name_is_told_alone() {
    let s = TestServer::start();
    let t = s.tmux();
    let (path, log) = counted_path(&s);
    let sleep = ["sleep", "3600"];
    // Three at once: one tmux call, in order, each with remain-on-exit and its mark, and
    // the server that made them told with them.
    let made =
        t.new_sessions_unless_taken(&["p/a1", "p/a2", "p/a3"].map(|n| spec(&s, n, &path, &sleep)));
    let made: Vec<_> = made.into_iter().map(|m| m.unwrap().unwrap()).collect();
    assert_eq!(
        crate::common::calls(&log).len(),
        1,
        "{:?}",
        crate::common::calls(&log)
    );
    let ids: Vec<u32> = made.iter().map(|m| made_at(&m.info.id)).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let pid: u32 = s
        .raw(&["display-message", "-p", "#{pid}"])
        .trim()
        .parse()
        .unwrap();
    for (m, n) in made.iter().zip(["p/a1", "p/a2", "p/a3"]) {
        assert_eq!(m.info.name, n);
        assert_eq!(m.server.pid, pid);
        let target = format!("={n}:");
        assert_eq!(
            s.raw(&["show-options", "-wqv", "-t", &target, "remain-on-exit"])
                .trim(),
            "on"
        );
        assert_eq!(
            s.raw(&["show-options", "-qv", "-t", &target, "@orange_task"])
                .trim(),
            n
        );
    }
    // Another's session holds the second name: tmux stops the sequence there, the one
    // before is made, the taken one told (`None`) and left as it was, the rest made in
    // one more call.
    s.raw(&["new-session", "-d", "-s", "p/b2", "sleep", "3601"]);
    let other_pane = s.raw(&["list-panes", "-t", "=p/b2:", "-F", "#{pane_id}"]);
    let before = crate::common::calls(&log).len();
    let made = t.new_sessions_unless_taken(
        &["p/b1", "p/b2", "p/b3", "p/b4"].map(|n| spec(&s, n, &path, &sleep)),
    );
    let calls = crate::common::calls(&log)[before..].to_vec();
    assert_eq!(calls.len(), 2, "{calls:?}");
    let made: Vec<_> = made.into_iter().map(Result::unwrap).collect();
    assert!(made[1].is_none(), "{made:?}");
    let names: Vec<_> = made
        .iter()
        .flatten()
        .map(|m| m.info.name.as_str())
        .collect();
    assert_eq!(names, ["p/b1", "p/b3", "p/b4"]);
    let ids: Vec<u32> = made.iter().flatten().map(|m| made_at(&m.info.id)).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert_eq!(
        s.raw(&["list-panes", "-t", "=p/b2:", "-F", "#{pane_id}"]),
        other_pane
    );
    assert_eq!(
        s.raw(&["show-options", "-wqv", "-t", "=p/b2:", "remain-on-exit"])
            .trim(),
        ""
    );
    assert_eq!(
        s.raw(&["show-options", "-qv", "-t", "=p/b2:", "@orange_task"])
            .trim(),
        ""
    );
    assert!(s
        .raw(&["list-panes", "-t", "=p/b2:", "-F", "#{pane_start_command}"])
        .contains("3601"));
    // One session alone: one call, the taken name told the same way.
    let before = crate::common::calls(&log).len();
    assert_eq!(
        t.new_session_unless_taken(&spec(&s, "p/b2", &path, &sleep))
            .unwrap(),
        None
    );
    assert_eq!(crate::common::calls(&log).len(), before + 1);
    // A spec refused before tmux is asked is answered alone; the others are made.
    let made = t.new_sessions_unless_taken(&[
        spec(&s, "p/c1", &path, &sleep),
        spec(&s, "p/bad name", &path, &sleep),
        spec(&s, "p/c3", &path, &sleep),
    ]);
    assert!(
        made[0].as_ref().unwrap().is_some() && made[2].as_ref().unwrap().is_some(),
        "{made:?}"
    );
    assert_eq!(made[1].as_ref().unwrap_err().code(), "invalid_argument");
}

#[test]
fn a_batch_too_long_for_one_call_or_of_several_paths_is_split() {
    let s = TestServer::start();
    let t = s.tmux();
    let (path, log) = counted_path(&s);
    // Five sessions of about 6 KB each: two fit in one call under tmux's 16 KB limit.
    let big = "x".repeat(6000);
    let specs: Vec<NewSession> = (1..=5)
        .map(|i| {
            let mut sp = spec(&s, &format!("p/big{i}"), &path, &["sleep", "3600"]);
            sp.env.push(("ORANGE_BIG".into(), big.clone()));
            sp
        })
        .collect();
    let made = t.new_sessions_unless_taken(&specs);
    let calls = crate::common::calls(&log);
    assert_eq!(calls.len(), 3, "{} calls", calls.len());
    assert!(
        calls.iter().all(|c| c.len() < 16_384),
        "{:?}",
        calls.iter().map(String::len).collect::<Vec<_>>()
    );
    let made: Vec<_> = made.into_iter().map(|m| m.unwrap().unwrap()).collect();
    let names: Vec<_> = made.iter().map(|m| m.info.name.clone()).collect();
    assert_eq!(names, ["p/big1", "p/big2", "p/big3", "p/big4", "p/big5"]);
    let ids: Vec<u32> = made.iter().map(|m| made_at(&m.info.id)).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    // Sessions of two PATHs (a session's panes get its client's): one call per run of
    // one PATH, in order, and each program sees its own.
    let other = format!("{path}:/orange-no-such-dir");
    let wrote = |i: usize| s.path(&format!("path{i}"));
    let paths = [&path, &path, &other, &path];
    let specs: Vec<NewSession> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let file = wrote(i);
            spec(
                &s,
                &format!("p/path{i}"),
                p,
                &[
                    "sh",
                    "-c",
                    "printf %s \"$PATH\" > \"$0\"; exec sleep 3600",
                    file.to_str().unwrap(),
                ],
            )
        })
        .collect();
    let before = crate::common::calls(&log).len();
    let made = t.new_sessions_unless_taken(&specs);
    assert_eq!(crate::common::calls(&log).len() - before, 3);
    assert!(made.iter().all(|m| matches!(m, Ok(Some(_)))), "{made:?}");
    for (i, p) in paths.iter().enumerate() {
        wait_until("the program wrote its PATH", WAIT, || {
            std::fs::read_to_string(wrote(i)).is_ok_and(|w| w == **p)
        });
    }
}
