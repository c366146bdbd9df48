//! A task's tmux session and what its agent gets: exact targets, a taken or dotted name,
//! the environment, port and harness, claude's flags, this orange, no UTF-8 locale, attach.

use crate::common;

use common::{git, id, wait_for, Env, TaskEnv};
use serde_json::Value;

use super::ws_of;

#[test]
fn exact_session_targets_never_touch_a_prefix_neighbour() {
    let env = TaskEnv::new();
    env.add_project(&["--name", "p"]);
    // A live session whose name starts with the task's.
    env.tmux.ok(&[
        "new-session",
        "-d",
        "-s",
        "p/feature-x",
        "sh",
        "-c",
        "echo neighbour; exec cat",
    ]);
    let t = env.create(&["feat", "small", "--harness", "fake-wait"]);
    assert_eq!(t["tmux_session"], "p/feat");
    env.wait_session(&id(&t), "live");
    // Typing into / peeking at the task never reaches the neighbour.
    let peek = env.ok(&["task", "peek", &id(&t)]);
    assert!(!peek["lines"].as_str().unwrap().contains("neighbour"));
    env.ok(&["task", "cancel", &id(&t), "--yes"]);
    assert!(!env.tmux.has_session("p/feat"));
    assert!(
        env.tmux.has_session("p/feature-x"),
        "cancel of p/feat killed p/feature-x"
    );
    // The neighbour's name is not mistaken for the task's session.
    let shown = env.task(&id(&t));
    assert_eq!(shown["session"]["state"], "none");
}

/// A task's session is made by one tmux call: no `has-session` first, and `new-session`
/// tells which server made it. A name another session holds gives the task its id after
/// it (a call of its own), and the other session is left as it was.
#[test]
fn a_taken_session_name_gives_the_task_its_id_after_it_and_leaves_the_other_alone() {
    let env = TaskEnv::new();
    env.add_project(&["--name", "p"]);
    let create =
        |b: &str| env.ok_counting_tmux(&["task", "create", b, "x", "--harness", "fake-wait"]);
    let (t, calls) = create("free");
    assert_eq!(t["tmux_session"], "p/free");
    assert!(t["tmux_server"]["pid"].as_u64().is_some(), "{t}");
    let made: Vec<&String> = calls.iter().filter(|c| c.contains("new-session")).collect();
    assert_eq!(made.len(), 1, "{calls:#?}");
    assert!(
        !calls.iter().any(|c| c.contains("has-session")),
        "{calls:#?}"
    );
    // Another's session holds the name.
    env.tmux
        .ok(&["new-session", "-d", "-s", "p/taken", "sleep", "3600"]);
    let (t, calls) = create("taken");
    assert_eq!(t["tmux_session"], format!("p/taken-{}", id(&t)).as_str());
    let made = calls.iter().filter(|c| c.contains("new-session")).count();
    assert_eq!(made, 2, "{calls:#?}");
    env.wait_session(&id(&t), "live");
    assert_eq!(
        env.tmux
            .ok(&["show-options", "-qv", "-t", "=p/taken:", "@orange_task"]),
        ""
    );
    assert!(env
        .tmux
        .ok(&[
            "list-panes",
            "-t",
            "=p/taken:",
            "-F",
            "#{pane_start_command}"
        ])
        .contains("3600"));
    // The task's own session is the one orange acts on.
    env.ok(&["task", "cancel", &id(&t), "--yes"]);
    assert!(env.tmux.has_session("p/taken"));
}

#[test]
fn dotted_project_and_branch_names_are_sanitized_and_seen_alive() {
    let tmp_env = Env::with_repo("my.app");
    let env = TaskEnv::from_env(tmp_env);
    env.add_project(&[]);
    let t = env.create(&["fix.1", "dots", "--harness", "fake-wait"]);
    assert_eq!(t["tmux_session"], "my.app/fix.1".replace('.', "_"));
    let shown = env.wait_session(&id(&t), "live");
    assert_eq!(shown["project"], "my.app");
    assert!(env.tmux.has_session("my_app/fix_1"));
}

#[test]
fn the_session_gets_orange_environment_and_the_agent_can_report_without_an_id() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let t = env.create(&["envy", "env check", "--harness", "fake-stuck"]);
    let tid = id(&t);
    let envs = env.agent_log(&tid, "env");
    let ws = ws_of(&env, &t);
    for want in [
        format!("ORANGE_TASK_ID={tid}"),
        "ORANGE_PROJECT=app".to_string(),
        format!("ORANGE_WORKSPACE={}", ws.display()),
        format!("ORANGE_HOME={}", env.home.display()),
        "ORANGE_WORKSPACE_NAME=app--1".to_string(),
        "ORANGE_WORKSPACE_INDEX=1".to_string(),
        "ORANGE_PORT=3101".to_string(),
    ] {
        assert!(
            envs.lines().any(|l| l == want),
            "missing {want} in:\n{envs}"
        );
    }
    // The session is marked as an orange task session (the plugin's keys rely on it).
    let sess = t["tmux_session_id"].as_str().unwrap();
    assert_eq!(
        env.tmux.ok(&["show", "-t", sess, "-v", "@orange_task"]),
        tid
    );
    // fake-stuck ran `orange task stuck` with no id: ORANGE_TASK_ID routed it.
    env.wait_status(&tid, "stuck");
    assert_eq!(
        std::fs::read_to_string(ws.join(".orange-outcome")).unwrap(),
        "stuck\n"
    );
    // From inside the workspace, without ORANGE_TASK_ID, the workspace names the task.
    let (ok, v) = env.json_in(&ws.join("src"), &["task", "update", "--status", "working"]);
    assert!(ok, "{v}");
    assert_eq!(v["id"], tid.as_str());
}

#[test]
fn builtin_claude_gets_its_flags_a_session_id_and_the_settings_sync() {
    let env = TaskEnv::new();
    std::fs::create_dir_all(env.repo.join(".claude")).unwrap();
    std::fs::write(env.repo.join(".claude/settings.json"), "{\"model\":\"x\"}").unwrap();
    env.add_project(&[]);
    let t = env.create(&["cl", "hello claude", "--harness", "claude"]);
    let argv = env.agent_log(&id(&t), "argv");
    let lines: Vec<&str> = argv.lines().collect();
    assert_eq!(lines[0], "--dangerously-skip-permissions", "{argv}");
    assert_eq!(lines[1], "--session-id");
    assert_eq!(lines[2].len(), 36, "a uuid: {argv}");
    // The prompt is an argument, never an option: `--` before it.
    assert_eq!(lines[3], "--", "{argv}");
    assert!(lines[4].starts_with("hello claude"));
    assert_eq!(env.task(&id(&t))["agent_session_id"], lines[2]);
    let ws = ws_of(&env, &t);
    // Seed 003's settings sync: the project's settings, plus orange's hooks.
    let local: Value = serde_json::from_str(
        &std::fs::read_to_string(ws.join(".claude/settings.local.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(local["model"], "x");
    assert!(local["hooks"]["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .ends_with("hook agent Stop"));
    // It is excluded from git: the workspace stays clean.
    assert_eq!(git(&ws, &["status", "--porcelain"]), "");
    // Not installed → backend_not_found before anything is touched. (codex may be
    // installed here: the command runs with a PATH that has only what orange needs.)
    let bare = env.root().join("bare-bin");
    std::fs::create_dir_all(&bare).unwrap();
    for tool in ["tmux", "git", "sh"] {
        let real = which(tool);
        std::os::unix::fs::symlink(real, bare.join(tool)).unwrap();
    }
    let mut c = env.cmd_in(
        &env.repo,
        &["task", "create", "cx", "x", "--harness", "codex", "--json"],
    );
    c.env(
        "PATH",
        format!(
            "{}:{}",
            common::bin().parent().unwrap().display(),
            bare.display()
        ),
    );
    let args = ["task", "create", "cx"];
    let m = common::expect_error(
        &args,
        common::parse_json_output(&args, &c.output().unwrap()),
        "backend_not_found",
    );
    assert!(m.contains("codex"), "{m}");
    // Checked before anything is recorded: no hidden pending task is left behind.
    let pending = env.ok(&["task", "list", "--status", "pending"]);
    assert_eq!(pending.as_array().unwrap().len(), 0, "{pending}");
}

#[test]
fn attach_switches_the_client_inside_tmux_and_attaches_outside() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let t = env.create(&["att", "attach me", "--harness", "fake-wait"]);
    let tid = id(&t);
    env.wait_session(&tid, "live");
    let orange = common::bin();
    let home = env.home.display().to_string();
    // Outside tmux: a terminal (a pane of a second, outer server) runs `orange task attach`
    // with TMUX unset, which execs `tmux attach-session` to our server.
    let outer = common::TmuxServer::start(&env.root(), &[]);
    let script = format!(
        "unset TMUX; ORANGE_HOME={home} ORANGE_TMUX_SOCKET={} {} task attach {tid}",
        env.tmux.socket,
        orange.display()
    );
    outer.sized_session("term", (120, 40), &["sh", "-c", &script]);
    wait_for("a client attached to the task session", 10, || {
        env.tmux
            .ok(&["list-clients", "-F", "#{client_session}"])
            .lines()
            .any(|l| l == "app/att")
    });
    // Inside tmux: from a pane of our server, switch-client moves that client.
    env.tmux
        .ok(&["new-session", "-d", "-s", "home", "sh", "-c", "exec cat"]);
    let client = env.tmux.ok(&["list-clients", "-F", "#{client_name}"]);
    env.tmux.ok(&[
        "switch-client",
        "-c",
        client.lines().next().unwrap(),
        "-t",
        "=home",
    ]);
    wait_for("the client to move home", 5, || {
        env.tmux.ok(&["list-clients", "-F", "#{client_session}"]) == "home"
    });
    let cmd = format!(
        "ORANGE_HOME={home} {} task attach {tid} > /tmp/orange-attach-{tid}.log 2>&1",
        orange.display()
    );
    env.tmux
        .ok(&["new-window", "-t", "=home:", "sh", "-c", &cmd]);
    wait_for("switch-client back to the task", 10, || {
        env.tmux.ok(&["list-clients", "-F", "#{client_session}"]) == "app/att"
    });
    let _ = std::fs::remove_file(format!("/tmp/orange-attach-{tid}.log"));
}

#[test]
fn user_harness_from_config_and_unknown_harness() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    env.err(
        &["task", "create", "h/x", "x", "--harness", "nope"],
        "invalid_argument",
    );
    std::fs::write(env.home.join("config.toml"), "[harness.broken\n").unwrap();
    let m = env.err(
        &["task", "create", "h/y", "x", "--harness", "fake-wait"],
        "state_corrupt",
    );
    assert!(m.contains("config.toml"), "{m}");
}

#[test]
fn each_workspace_gets_a_stable_port_from_its_slot_and_the_project_base() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "3", "--port-base", "8000"]);
    let a = env.create(&["p/a", "a", "--harness", "fake-wait"]);
    let b = env.create(&["p/b", "b", "--harness", "fake-wait"]);
    let port = |v: &Value| {
        env.agent_log(&id(v), "env")
            .lines()
            .find_map(|l| l.strip_prefix("ORANGE_PORT=").map(str::to_string))
            .unwrap()
    };
    assert_eq!(port(&a), "8001");
    assert_eq!(port(&b), "8002");
    // The same slot gives the same port to the next task.
    env.ok(&["task", "cancel", &id(&a), "--yes"]);
    let c = env.create(&["p/c", "c", "--harness", "fake-wait"]);
    assert_eq!(c["workspace"], "app--1");
    assert_eq!(port(&c), "8001");
}

/// The absolute path of `tool` on this machine's PATH.
fn which(tool: &str) -> std::path::PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{tool} is not on PATH"))
}

/// Seen over ssh: without a UTF-8 locale tmux printed orange's field separators
/// (and any non-ASCII text) as `_`, so no task could start from cron, systemd or a remote
/// command. orange now passes tmux `-u`.
#[test]
fn tasks_start_and_show_without_a_utf8_locale() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let run = |args: &[&str]| {
        let mut a = args.to_vec();
        a.push("--json");
        let out = env
            .cmd_in(&env.repo, &a)
            .env_remove("LANG")
            .env_remove("LC_ALL")
            .env_remove("LC_CTYPE")
            .output()
            .unwrap();
        common::parse_json_output(&a, &out)
    };
    let (ok, t) = run(&[
        "task",
        "create",
        "c/locale",
        "café ✓",
        "--harness",
        "fake-wait",
    ]);
    assert!(ok, "{t}");
    let tid = id(&t);
    wait_for("the session without a UTF-8 locale", 20, || {
        run(&["task", "show", &tid]).1["session"]["state"] == "live"
    });
    let (ok, st) = run(&["status", "--format", "json"]);
    assert!(ok, "{st}");
    assert_eq!(st["working"], 1, "{st}");
    assert_eq!(st["items"][0]["branch"], "c/locale", "{st}");
}

/// Seen over ssh: an agent could not find `orange` when orange itself was run
/// with a PATH that does not hold it (by absolute path, from cron or over ssh): tmux gives
/// a new session's pane the PATH of the tmux client, whatever `new-session -e PATH=…` says.
#[test]
fn the_agent_finds_this_orange_when_orange_was_run_by_its_path() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let out = env
        .cmd_in(
            &env.repo,
            &[
                "task",
                "create",
                "c/path",
                "finish",
                "--harness",
                "fake-complete",
                "--json",
            ],
        )
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .output()
        .unwrap();
    let (ok, t) = common::parse_json_output(&[], &out);
    assert!(ok, "{t}");
    let done = env.wait_status(&id(&t), "reviewing");
    assert_eq!(done["status"], "reviewing");
    let log = env.agent_log(&id(&t), "env");
    assert!(log.contains("ORANGE_BIN="), "{log}");
}
