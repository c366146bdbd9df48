//! Issue 15, a first hour that wins a newcomer: what a person types and reads at the
//! command line. Completions that a real bash uses, a task named the way a person names
//! it (a unique id prefix, its branch), and human output without glitches (`task show`
//! with TASK.md's text and history in words, `task cancel` of a task that never started,
//! `restore` with nothing to restore).

use crate::common::{self, TaskEnv};

fn text(env: &TaskEnv, args: &[&str]) -> String {
    let out = env.cmd_in(&env.repo, args).output().unwrap();
    assert!(
        out.status.success(),
        "orange {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn bash_completes_orange_from_the_generated_script() {
    let env = TaskEnv::new();
    let script = env.root().join("orange.bash");
    std::fs::write(&script, text(&env, &["completions", "bash"])).unwrap();
    // What bash offers after `orange ta<TAB>` and `orange task <TAB>`, in a real bash.
    let complete = |line: &str| {
        let words: Vec<&str> = line.split(' ').collect();
        let program = format!(
            "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}; _orange orange '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display(),
            words.iter().map(|w| format!("'{w}'")).collect::<Vec<_>>().join(" "),
            words.len() - 1,
            words[words.len() - 1],
            words[words.len() - 2],
        );
        let out = std::process::Command::new("bash")
            .args(["-c", &program])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let top = complete("orange ta");
    assert!(top.lines().any(|l| l == "task"), "{top}");
    let sub = complete("orange task ");
    for want in ["create", "list", "show", "cancel"] {
        assert!(sub.lines().any(|l| l == want), "{want} missing: {sub}");
    }
    for shell in ["zsh", "fish"] {
        let s = text(&env, &["completions", shell]);
        assert!(s.contains("orange") && s.len() > 1000, "{shell}: {s}");
    }
    let e = env.err(&["completions", "tcsh"], "invalid_argument");
    assert!(e.contains("tcsh"), "{e}");
}

#[test]
fn a_task_is_named_by_a_unique_id_prefix_or_its_branch() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let t = env.ok(&["task", "create", "fix-login", "Fix the login", "--no-spawn"]);
    let id = t["id"].as_str().unwrap().to_string();
    assert_eq!(env.ok(&["task", "show", &id[..4]])["id"], id.as_str());
    assert_eq!(env.ok(&["task", "show", "fix-login"])["id"], id.as_str());
    env.err(&["task", "show", "no-such-branch"], "task_not_found");
    // Wherever an id is taken: cancel by branch.
    let v = env.ok(&["task", "cancel", "fix-login", "--yes"]);
    assert_eq!(v["id"], id.as_str());
    assert_eq!(v["status"], "cancelled");
}

#[test]
fn task_show_cancel_and_restore_speak_in_words() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let summary = "Fix the \"login\" $(bug)\n\nThe form forgets the user.";
    let t = env.ok(&["task", "create", "words", summary, "--no-spawn"]);
    let id = t["id"].as_str().unwrap().to_string();
    // A task that never started made no branch: cancel says so instead of "kept".
    let cancelled = text(&env, &["task", "cancel", &id, "--yes"]);
    assert!(cancelled.contains("never started"), "{cancelled}");
    assert!(!cancelled.contains("kept"), "{cancelled}");
    assert!(!common::git(&env.repo, &["branch", "--list", "words"]).contains("words"));
    // task show: TASK.md's text (its help says it shows TASK.md), the history in words.
    let show = text(&env, &["task", "show", &id]);
    assert!(show.contains("The form forgets the user."), "{show}");
    assert!(show.contains("status pending → cancelled"), "{show}");
    assert!(show.contains("created on branch words"), "{show}");
    assert!(show.contains(" ago") || show.contains("now"), "{show}");
    // restore with nothing to restore: a sentence, not a dangling colon.
    let restore = text(&env, &["restore"]);
    assert!(restore.contains("nothing to restore"), "{restore}");
    assert!(!restore.trim_end().ends_with(':'), "{restore}");
}

/// The demo's own tmux server, killed when the test ends, and then the demo sandboxes
/// given to [`DemoServer::remove`] removed once nothing of theirs runs (an agent or a
/// monitor still running would write into a removed sandbox and leave it in /tmp).
struct DemoServer {
    socket: String,
    sandboxes: Vec<String>,
}

impl DemoServer {
    fn new(socket: &str) -> DemoServer {
        DemoServer {
            socket: socket.to_string(),
            sandboxes: vec![],
        }
    }

    /// Remove `sandbox` after the server, however the test ends.
    fn remove(&mut self, sandbox: &str) {
        self.sandboxes.push(sandbox.to_string());
    }
}

impl Drop for DemoServer {
    fn drop(&mut self) {
        let socket = std::process::Command::new("tmux")
            .args(["-L", &self.socket, "display", "-p", "#{socket_path}"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
        // tmux 3.3a leaves its socket file behind after kill-server.
        if !socket.is_empty() {
            let _ = std::fs::remove_file(socket);
        }
        for dir in &self.sandboxes {
            let dir = std::path::Path::new(dir);
            common::end_processes_of(&dir.join("orange-home"));
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn run_demo(socket: &str, extra_env: &[(&str, &str)]) -> (serde_json::Value, String) {
    let mut c = std::process::Command::new(common::bin());
    c.args(["demo", "--json"])
        .env("ORANGE_TMUX_SOCKET", socket)
        .env("ORANGE_DEMO_PACE", "0.2")
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .env_remove("ORANGE_HOME");
    for (k, v) in extra_env {
        c.env(k, v);
    }
    let json_out = c.output().unwrap();
    assert!(
        json_out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&json_out.stdout),
        String::from_utf8_lossy(&json_out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&json_out.stdout).unwrap();
    (v, String::from_utf8_lossy(&json_out.stderr).into_owned())
}

/// The value of a line of the demo's text output (`  sandbox      /tmp/orange-demo-…`).
fn printed(text: &str, label: &str) -> String {
    text.lines()
        .find_map(|l| l.trim_start().strip_prefix(label))
        .unwrap_or_else(|| panic!("no {label} line in:\n{text}"))
        .trim()
        .to_string()
}

#[test]
fn a_second_demo_replaces_the_first_and_its_printed_commands_work() {
    // Declared first, removed last: after the demo's server is killed.
    let tmp = tempfile::tempdir().unwrap();
    let home = common::user_home(tmp.path());
    let home = home.to_str().unwrap();
    let socket = format!("orange-fh-demo-{}", std::process::id());
    let mut server = DemoServer::new(&socket);
    let (first, _) = run_demo(&socket, &[("HOME", home)]);
    let first_dir = first["sandbox"].as_str().unwrap().to_string();
    let first_home = first["home"].as_str().unwrap().to_string();
    // The person lands on the welcome session with its key guide.
    assert!(
        first["attach"].as_str().unwrap().contains("=demo"),
        "{first}"
    );
    let mut welcome = String::new();
    common::wait_for("the welcome text", 20, || {
        let o = std::process::Command::new("tmux")
            .args(["-L", &socket, "capture-pane", "-p", "-t", "=demo:"])
            .output()
            .unwrap();
        welcome = String::from_utf8_lossy(&o.stdout).into_owned();
        welcome.contains("Welcome to the orange demo")
    });
    assert!(welcome.contains("prefix O l"), "{welcome}");

    let (second, _) = run_demo(&socket, &[("HOME", home)]);
    assert_eq!(second["replaced"], first_dir.as_str(), "{second}");
    assert!(!std::path::Path::new(&first_dir).exists());
    common::wait_for("the first demo's monitor and agents to end", 20, || {
        orange::adapters::shell::pids_with_env("ORANGE_HOME", &first_home).is_empty()
    });

    // The text output's `tasks` line, run exactly as printed, lists live tasks.
    let out = std::process::Command::new(common::bin())
        .args(["demo", "--no-attach"])
        .env("HOME", home)
        .env("ORANGE_TMUX_SOCKET", &socket)
        .env("ORANGE_DEMO_PACE", "0.2")
        .env_remove("TMUX")
        .env_remove("ORANGE_HOME")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("replaced the previous demo"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = printed(&text, "tasks");
    let listed = std::process::Command::new("sh")
        .args(["-c", &line])
        .env_remove("TMUX")
        .env_remove("ORANGE_HOME")
        .env_remove("ORANGE_TMUX_SOCKET")
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home)
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains("demo/dark-mode"), "{line}\n{listed}");
    assert!(!listed.contains("dead"), "{line}\n{listed}");
    server.remove(&printed(&text, "sandbox"));
}

#[test]
fn inside_tmux_the_demo_opens_in_a_new_window_there() {
    let env = TaskEnv::new();
    let socket = format!("orange-fh-nest-{}", std::process::id());
    let mut server = DemoServer::new(&socket);
    let tmux_var = format!("{},1,0", env.tmux.socket_path);
    let out = std::process::Command::new(common::bin())
        .args(["demo"])
        .env("HOME", &env.user_home)
        .env("ORANGE_TMUX_SOCKET", &socket)
        .env("ORANGE_DEMO_PACE", "0.2")
        .env("TMUX", &tmux_var)
        .env_remove("TMUX_PANE")
        .env_remove("ORANGE_HOME")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("Opened in a new window here"), "{text}");
    let windows = env.tmux.ok(&["list-windows", "-a", "-F", "#{window_name}"]);
    assert!(windows.lines().any(|w| w == "orange-demo"), "{windows}");
    // What the person sees in it: the demo's welcome session, inside their tmux.
    let mut seen = String::new();
    common::wait_for("the demo in the new window", 20, || {
        seen = env.tmux.ok(&["capture-pane", "-p", "-t", ":orange-demo"]);
        seen.contains("Welcome to the orange demo")
    });
    server.remove(&printed(&text, "sandbox"));
}

/// Run from a pane of a real attached client (tmux sets `TMUX` and `TMUX_PANE` there, as
/// for a person): the demo opens its window in that session, right after the person's
/// window, made current; their other windows keep their ids, names and indexes, and no
/// option of their server changes. tmux 3.3a refused the pane id as `new-window -t`.
#[test]
fn from_a_pane_of_an_attached_client_the_demo_opens_beside_it() {
    let env = TaskEnv::new();
    let demo_socket = format!("orange-fh-pane-{}", std::process::id());
    let mut server = DemoServer::new(&demo_socket);
    // The person's session: two windows, the first one in use; `logs` sits right after it.
    env.tmux
        .ok(&["new-session", "-d", "-s", "work", "-n", "editor", "/bin/sh"]);
    env.tmux
        .ok(&["new-window", "-d", "-t", "=work:", "-n", "logs", "/bin/sh"]);
    env.tmux
        .ok(&["set-option", "-t", "=work:", "@mine", "kept"]);
    let windows = |env: &TaskEnv| {
        env.tmux.ok(&[
            "list-windows",
            "-t",
            "=work",
            "-F",
            "#{window_id} #{window_index} #{window_name}",
        ])
    };
    let options = |env: &TaskEnv| {
        (
            env.tmux.ok(&["show-options", "-g"]),
            env.tmux.ok(&["show-options", "-t", "=work:"]),
            env.tmux.ok(&["show-options", "-gw"]),
        )
    };
    let (windows_before, options_before) = (windows(&env), options(&env));
    let log = env.root().join("client.log");
    let _client = common::client::Client::attach(&env, "work", &log);
    env.tmux.ok(&["select-window", "-t", "=work:editor"]);

    // Typed at the person's prompt, as they would.
    let out = env.root().join("demo.out");
    let line = format!(
        "ORANGE_TMUX_SOCKET={} ORANGE_DEMO_PACE=0.2 {} demo > {} 2>&1; echo finished >> {}",
        demo_socket,
        common::bin().display(),
        out.display(),
        out.display()
    );
    env.tmux
        .ok(&["send-keys", "-t", "=work:editor", "-l", &line]);
    env.tmux.ok(&["send-keys", "-t", "=work:editor", "Enter"]);
    let mut text = String::new();
    common::wait_for("the demo to finish in the pane", 120, || {
        text = std::fs::read_to_string(&out).unwrap_or_default();
        text.contains("finished")
    });
    assert!(text.contains("Opened in a new window here"), "{text}");

    // Beside the person's window: `editor` is 1, `logs` 2, so the demo takes the first
    // free index (3); their windows are as they were.
    let after = windows(&env);
    let (theirs, demo): (Vec<&str>, Vec<&str>) =
        after.lines().partition(|l| !l.ends_with(" orange-demo"));
    assert_eq!(theirs.join("\n"), windows_before, "{after}");
    assert_eq!(demo.len(), 1, "{after}");
    assert!(demo[0].contains(" 3 orange-demo"), "{after}");
    assert_eq!(
        env.tmux
            .ok(&["display", "-p", "-t", "=work:", "#{window_name}"]),
        "orange-demo",
        "the demo's window is made current"
    );
    assert_eq!(options(&env), options_before);
    // What the person sees in it: the demo's welcome session (its key guide).
    let mut seen = String::new();
    let found = common::poll(std::time::Duration::from_secs(30), || {
        seen = env
            .tmux
            .ok(&["capture-pane", "-p", "-t", "=work:orange-demo"]);
        seen.contains("prefix O l   pick a task").then_some(())
    });
    assert!(
        found.is_some(),
        "the demo's window shows:\n{seen}\n(demo said:\n{text})"
    );
    server.remove(&printed(&text, "sandbox"));
}

/// Beside a window whose next index is free, the demo's window takes that index; nothing
/// else moves.
#[test]
fn the_demo_window_goes_right_after_the_pane_s_window_when_that_index_is_free() {
    let env = TaskEnv::new();
    env.tmux
        .ok(&["new-session", "-d", "-s", "work", "-n", "editor", "/bin/sh"]);
    env.tmux
        .ok(&["new-window", "-d", "-t", "=work:5", "-n", "far", "/bin/sh"]);
    let pane = env
        .tmux
        .ok(&["display", "-p", "-t", "=work:editor", "#{pane_id}"]);
    let tmux = orange::adapters::tmux::Tmux::new(orange::adapters::tmux::Tmux::server_from(
        Some(&env.tmux.socket),
        None,
    ));
    tmux.open_window("beside", &["sleep".into(), "60".into()], Some(&pane))
        .unwrap();
    assert_eq!(
        env.tmux.ok(&[
            "list-windows",
            "-t",
            "=work",
            "-F",
            "#{window_index} #{window_name}"
        ]),
        "1 editor\n2 beside\n5 far"
    );
}

/// The sidebar tells the truth: an agent that reported its task ready for review
/// is not shown `working` beside `Status: reviewing`; without gh, a PR is unknown, not
/// "none".
#[test]
fn the_sidebar_never_contradicts_the_status_and_says_when_the_pr_is_unknown() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let t = env.ok(&[
        "task",
        "create",
        "truth",
        "work then report",
        "--harness",
        "fake-wait",
    ]);
    let id = t["id"].as_str().unwrap().to_string();
    env.wait_session(&id, "live");
    // The monitor sees it busy (its screen just moved), then it reports.
    env.ok(&["monitor", "--once"]);
    assert_eq!(env.task(&id)["agent"]["state"], "working");
    env.ok(&["task", "update", &id, "--status", "reviewing"]);
    let (ok, m) = env.json(&["sidebar", "--once", "--task", &id]);
    assert!(ok, "{m}");
    assert_eq!(m["status"], "reviewing", "{m}");
    assert_eq!(m["agent"], "waiting", "{m}");
    // Seen again after the report, busy only by its screen's activity (its last words
    // scrolling in): still not `working` beside `reviewing`. The pass runs on a clock 2 s
    // ahead (`ORANGE_CLOCK_SKEW`): its observation falls in a later second than the
    // report, well inside the idle grace, with no sleep.
    let pane = t["tmux_pane_id"].as_str().unwrap().to_string();
    env.tmux.ok(&["send-keys", "-t", &pane, "-l", "last words"]);
    let out = env
        .cmd_in(&env.repo, &["monitor", "--once", "--json"])
        .env("ORANGE_CLOCK_SKEW", "2s")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let (_, m) = env.json(&["sidebar", "--once", "--task", &id]);
    assert_eq!(m["agent"], "waiting", "{m}\n{}", env.task(&id)["agent"]);
    // No gh on PATH: the PR is unknown.
    let out = env
        .cmd_in(&env.repo, &["sidebar", "--once", "--task", &id, "--json"])
        .env(
            "PATH",
            common::gh_standin::path_without_gh(&env.root(), &env.path),
        )
        .output()
        .unwrap();
    let m: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(m["pr"], "unknown (gh not installed)", "{m}");
    // With gh (the fixture's), and no PR recorded: none.
    let (_, m) = env.json(&["sidebar", "--once", "--task", &id]);
    assert_eq!(m["pr"], serde_json::Value::Null, "{m}");
}

/// The sidebar's footer names the keys really bound, as a person sees it in the pane.
#[test]
fn the_sidebar_footer_shows_the_keys_really_bound() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    // Set before any task, as a person's tmux.conf does (the observer reads them with
    // everything else; the sidebar asks tmux nothing).
    env.tmux.ok(&["set", "-g", "@orange-sidebar-key", "off"]);
    env.tmux.ok(&["set", "-g", "@orange-zoom-key", "M-z"]);
    let t = env.ok(&[
        "task",
        "create",
        "keys",
        "show keys",
        "--harness",
        "fake-wait",
    ]);
    let id = t["id"].as_str().unwrap().to_string();
    let session = t["tmux_session_id"].as_str().unwrap().to_string();
    let pane = env.tmux.ok(&[
        "split-window",
        "-h",
        "-d",
        "-P",
        "-F",
        "#{pane_id}",
        "-t",
        &format!("{session}:"),
        "-e",
        &format!("ORANGE_HOME={}", env.home.display()),
        &format!("{} sidebar --task {id}", common::bin().display()),
    ]);
    let mut seen = String::new();
    common::wait_for("the sidebar's footer", 20, || {
        seen = env.tmux.ok(&["capture-pane", "-p", "-t", &pane]);
        seen.contains("full screen")
    });
    assert!(seen.contains("M-z full screen"), "{seen}");
    assert!(
        !seen.contains("sidebar  ") && !seen.contains("Ctrl+\\"),
        "{seen}"
    );
}

/// After a TPM install with no binary yet, the plugin builds it in the background: the
/// status line says so until the build is over, and on failure names the log (it once
/// showed a message for 8 s, then nothing for minutes).
#[test]
fn a_plugin_building_its_binary_says_so_on_the_status_line_until_it_fails() {
    let tmp = tempfile::Builder::new()
        .prefix("orange-build-mark-")
        .tempdir()
        .unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let plugin = root.join("plugin");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in ["tmux", "scripts"] {
        std::fs::create_dir_all(plugin.join(dir)).unwrap();
        for e in std::fs::read_dir(src.join(dir)).unwrap().flatten() {
            std::fs::copy(e.path(), plugin.join(dir).join(e.file_name())).unwrap();
        }
    }
    std::fs::copy(src.join("orange.tmux"), plugin.join("orange.tmux")).unwrap();
    // A cargo that takes a moment, then fails as a broken toolchain would.
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let gate = root.join("let-it-fail");
    common::write_script(&bin.join("cargo"), format!(
            "#!/bin/sh\necho 'error: could not compile orange' >&2\nwhile [ ! -e '{}' ]; do sleep 0.1; done\nexit 101\n",
            gate.display()
        ));
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let server = common::TmuxServer::start(&root, &[("PATH", &path)]);
    server.ok(&["set", "-g", "status-right", "#{orange_status} | %H:%M"]);
    server.ok(&["run-shell", plugin.join("orange.tmux").to_str().unwrap()]);
    let right = server.ok(&["show", "-gv", "status-right"]);
    assert!(right.contains("#{@orange_build}"), "{right}");
    let mark = || server.ok(&["show", "-gqv", "@orange_build"]);
    common::wait_for("the building mark", 20, || mark().contains("building"));
    // What the status line shows, expanded as tmux draws it.
    let shown = server.ok(&["display", "-p", "#{E:@orange_build}"]);
    assert!(shown.contains("⏳ orange: building"), "{shown}");
    std::fs::write(&gate, "").unwrap();
    common::wait_for("the failure mark", 20, || mark().contains("failed"));
    let log = plugin.join("target/orange-build.log");
    assert!(mark().contains(log.to_str().unwrap()), "{}", mark());
    assert!(std::fs::read_to_string(&log)
        .unwrap()
        .contains("could not compile"));
    // Fixed another way (a binary given): loading the plugin again clears the mark.
    server.ok(&["set", "-g", "@orange-bin", common::bin().to_str().unwrap()]);
    server.ok(&["run-shell", plugin.join("orange.tmux").to_str().unwrap()]);
    common::wait_for("the mark to clear", 20, || mark().is_empty());
}

/// A demo's server that a person started using for more (a session of their own) is not
/// killed by the next demo, nor is its sandbox removed.
#[test]
fn a_demo_server_holding_other_sessions_is_left_alone() {
    // Declared first, removed last: after the demo's server is killed.
    let tmp = tempfile::tempdir().unwrap();
    let home = common::user_home(tmp.path());
    let home = home.to_str().unwrap();
    let socket = format!("orange-fh-keep-{}", std::process::id());
    let mut server = DemoServer::new(&socket);
    let (first, _) = run_demo(&socket, &[("HOME", home)]);
    let first_dir = first["sandbox"].as_str().unwrap().to_string();
    let tmux = |args: &[&str]| {
        std::process::Command::new("tmux")
            .args(["-L", &socket])
            .args(args)
            .output()
            .unwrap()
    };
    assert!(tmux(&["new-session", "-d", "-s", "mine"]).status.success());
    let (second, stderr) = run_demo(&socket, &[("HOME", home)]);
    assert!(second["replaced"].is_null(), "{second}");
    assert!(stderr.contains("left alone"), "{stderr}");
    assert!(tmux(&["has-session", "-t", "=mine"]).status.success());
    assert!(std::path::Path::new(&first_dir).exists());
    for d in [first_dir.as_str(), second["sandbox"].as_str().unwrap()] {
        server.remove(d);
    }
}
