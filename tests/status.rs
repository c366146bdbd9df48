//! The status widgets and the tmux hooks, end to end: real git, a real tmux server on a
//! private socket with a hostile config, fake agents (tests/fixtures/fake-agent.sh).

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::path::PathBuf;
use std::process::Output;

use common::{calls, counting_tmux, id, make_repo, wait_for, TaskEnv, TmuxServer};
use serde_json::Value;

/// An agent that waits for one line, then exits 3: its exit is ours to trigger.
const SLOW_FAIL: &str = "[harness.slow-fail]\ncommand = \": {prompt}; read line; exit 3\"\n";

fn env_with_slow_fail() -> TaskEnv {
    let env = TaskEnv::new();
    let cfg = env.home.join("config.toml");
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    text.push_str(SLOW_FAIL);
    std::fs::write(cfg, text).unwrap();
    env
}

fn run(env: &TaskEnv, args: &[&str]) -> Output {
    env.cmd_in(&env.repo, args).output().unwrap()
}

/// `orange status --format F`: its stdout (it must succeed and say nothing on stderr).
fn status(env: &TaskEnv, format: &str) -> String {
    let out = run(env, &["status", "--format", format]);
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "orange status --format {format}: {out:?}"
    );
    String::from_utf8(out.stdout).unwrap()
}

fn status_json(env: &TaskEnv) -> Value {
    serde_json::from_str(&status(env, "json")).unwrap()
}

/// `orange hook ARGS…` as tmux runs it: exit 0 and not a byte of output, whatever happens.
fn hook(env: &TaskEnv, args: &[&str]) {
    let mut a = vec!["hook"];
    a.extend_from_slice(args);
    let out = run(env, &a);
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "orange {a:?} must be silent and succeed: {out:?}"
    );
}

fn summary_option(env: &TaskEnv) -> String {
    env.tmux.ok(&["show-options", "-gqv", "@orange_summary"])
}

fn session_option(env: &TaskEnv, session: &str) -> String {
    env.tmux.ok(&[
        "show-options",
        "-qv",
        "-t",
        &format!("={session}:"),
        "@orange_status",
    ])
}

fn history(env: &TaskEnv, id: &str) -> Vec<Value> {
    env.task(id)["history"].as_array().unwrap().clone()
}

fn events<'a>(h: &'a [Value], name: &str) -> Vec<&'a Value> {
    h.iter().filter(|e| e["event"] == name).collect()
}

fn item<'a>(s: &'a Value, id: &str) -> &'a Value {
    s["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == id)
        .unwrap_or_else(|| panic!("no item {id} in {s}"))
}

const WORKING_1: &str = "#[push-default]#[fg=yellow]⚙ 1#[default]#[pop-default]";

#[test]
fn counts_for_a_mix_of_tasks_across_two_projects() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "8"]);
    let (lib, _) = make_repo(&env.root(), "lib");
    env.add_project(&[lib.to_str().unwrap(), "--name", "lib", "--pool-size", "3"]);

    let working = env.create(&["feat/a", "A", "--harness", "fake-wait"]);
    let failed = env.create(&["feat/b", "B", "--harness", "fake-fail"]);
    let complete = env.create(&["feat/c", "C", "--harness", "fake-complete"]);
    let stuck = env.create(&["feat/d", "D", "--harness", "fake-stuck"]);
    let asks = env.create(&["feat/e", "E", "--harness", "fake-wait"]);
    let cancelled = env.create(&["feat/g", "G", "--harness", "fake-wait"]);
    let lib_working = env.create(&["feat/x", "X", "--harness", "fake-wait", "--project", "lib"]);
    let lib_exit0 = env.create(&["feat/y", "Y", "--harness", "fake-exit0", "--project", "lib"]);
    env.ok(&["task", "update", &id(&asks), "--status", "clarification"]);
    env.ok(&["task", "cancel", &id(&cancelled), "--yes"]);
    // After the cancel, which would start the oldest pending task.
    let queued = env.create(&["feat/f", "F", "--no-spawn"]);
    env.wait_status(&id(&complete), "reviewing");
    env.wait_status(&id(&stuck), "stuck");
    env.wait_session(&id(&failed), "dead");
    env.wait_session(&id(&lib_exit0), "dead");
    env.wait_session(&id(&working), "live");
    env.wait_session(&id(&lib_working), "live");

    let s = status_json(&env);
    assert_eq!(
        (
            &s["working"],
            &s["waiting"],
            &s["dead"],
            &s["review"],
            &s["queued"]
        ),
        (&2.into(), &2.into(), &2.into(), &1.into(), &1.into()),
        "{s:#}"
    );
    assert_eq!(s["unreadable"], 0);
    assert_eq!(
        s["projects"]["app"],
        serde_json::json!({"working": 1, "waiting": 2, "dead": 1, "review": 1, "queued": 1, "limited": 0})
    );
    assert_eq!(
        s["projects"]["lib"],
        serde_json::json!({"working": 1, "waiting": 0, "dead": 1, "review": 0, "queued": 0, "limited": 0})
    );
    assert_eq!(s["tasks"]["working"], 2);
    assert_eq!(s["lanes"]["working"], 0);
    assert_eq!(
        s["items"].as_array().unwrap().len(),
        8,
        "cancelled is not counted"
    );
    let reason = |v: &Value| item(&s, &id(v))["reason"].as_str().unwrap().to_string();
    assert_eq!(reason(&working), "working");
    assert_eq!(reason(&failed), "exited 3");
    assert_eq!(item(&s, &id(&failed))["exit_status"], 3);
    assert_eq!(reason(&complete), "review");
    assert_eq!(reason(&stuck), "stuck");
    assert_eq!(reason(&asks), "clarification");
    assert_eq!(reason(&queued), "queued");
    assert_eq!(reason(&lib_exit0), "exited 0");
    assert_eq!(item(&s, &id(&lib_exit0))["project"], "lib");

    assert_eq!(
        status(&env, "tmux"),
        "#[push-default]#[fg=yellow]⚙ 2#[default] #[fg=magenta,bold]⚑ 2#[default] \
         #[fg=red,bold]✗ 2#[default] #[fg=green]✓ 1#[default] #[dim]⏸ 1#[default]#[pop-default]\n"
    );
    assert_eq!(
        status(&env, "plain"),
        "working 2 · waiting 2 · dead 2 · review 1 · queued 1\n"
    );
    // The default format is plain; --json gives the same value as --format json.
    assert_eq!(
        String::from_utf8(run(&env, &["status"]).stdout).unwrap(),
        status(&env, "plain")
    );
    let (ok, j) = env.json(&["status"]);
    assert!(ok);
    assert_eq!(j, status_json(&env));
}

#[test]
fn nothing_open_renders_nothing_and_unreadable_files_are_counted_not_fatal() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    assert_eq!(status(&env, "tmux"), "\n");
    assert_eq!(
        status(&env, "plain"),
        "working 0 · waiting 0 · dead 0 · review 0\n"
    );
    let t = env.create(&["feat/q", "Q", "--no-spawn"]);
    // An open task whose file is damaged behind orange's back.
    let damaged = env.create(&["feat/damaged", "D", "--no-spawn"]);
    let bad = env.home.join("tasks/app").join(id(&damaged));
    std::fs::write(bad.join("task.json"), "{ half a file").unwrap();
    // Damage is no change orange made (nothing pokes): the next observation (a monitor
    // pass, a hook) sees it.
    hook(&env, &["refresh"]);
    let s = status_json(&env);
    assert_eq!(s["unreadable"], 1);
    assert_eq!(s["queued"], 1);
    assert_eq!(item(&s, &id(&t))["bucket"], "queued");
    assert_eq!(
        status(&env, "tmux"),
        "#[push-default]#[dim]⏸ 1#[default] #[fg=red]⚠ 1#[default]#[pop-default]\n"
    );
    hook(&env, &["refresh"]);
    assert_eq!(
        summary_option(&env),
        "#[push-default]#[dim]⏸ 1#[default] #[fg=red]⚠ 1#[default]#[pop-default]"
    );
}

#[test]
fn publish_sets_the_options_and_they_change_when_the_agent_exits() {
    let env = env_with_slow_fail();
    env.add_project(&[]);
    let t = env.create(&["feat/exit", "Exit later", "--harness", "slow-fail"]);
    let sess = t["tmux_session"].as_str().unwrap().to_string();
    assert_eq!(sess, "app/feat/exit");
    env.wait_session(&id(&t), "live");
    // A user's own status-right stays as it was.
    let right = env.tmux.ok(&["show-options", "-gv", "status-right"]);

    hook(&env, &["refresh"]);
    assert_eq!(summary_option(&env), WORKING_1);
    assert_eq!(
        session_option(&env, &sess),
        "#[push-default]#[fg=yellow]⚙ working#[default]#[pop-default]"
    );
    assert_eq!(
        session_option(&env, "keepalive"),
        "",
        "not an orange session"
    );

    // The agent exits 3; tmux would run the pane-died hook.
    let pane = env.tmux.ok(&[
        "display-message",
        "-p",
        "-t",
        &format!("={sess}:"),
        "#{pane_id}",
    ]);
    env.tmux
        .ok(&["send-keys", "-t", &format!("={sess}:"), "go", "Enter"]);
    env.wait_session(&id(&t), "dead");
    hook(&env, &["pane-died", "--pane", &pane, "--session", &sess]);
    assert_eq!(
        session_option(&env, &sess),
        "#[push-default]#[fg=red,bold]✗ exited 3#[default]#[pop-default]"
    );
    assert_eq!(
        summary_option(&env),
        "#[push-default]#[fg=red,bold]✗ 1#[default]#[pop-default]"
    );
    let h = history(&env, &id(&t));
    let exited = events(&h, "agent.exited");
    assert_eq!(exited.len(), 1, "{h:#?}");
    assert_eq!(exited[0]["exit_status"], 3);
    assert_eq!(exited[0]["via"], "hook:pane-died");
    assert_eq!(exited[0]["tmux_session"], sess.as_str());
    assert_eq!(exited[0]["pane_id"], pane.as_str());
    // Hooks repeat (pane-died, then a refresh): the history says it once.
    hook(&env, &["refresh"]);
    hook(&env, &["pane-died", &pane, &sess]);
    assert_eq!(events(&history(&env, &id(&t)), "agent.exited").len(), 1);

    // The session goes: session-closed records it and the status says so.
    env.tmux.ok(&["kill-session", "-t", &format!("={sess}")]);
    hook(&env, &["session-closed", "--session", &sess]);
    let h = history(&env, &id(&t));
    let closed = events(&h, "session.closed");
    assert_eq!(closed.len(), 1, "{h:#?}");
    assert_eq!(closed[0]["via"], "hook:session-closed");
    hook(&env, &["session-closed", "--session", &sess]);
    assert_eq!(events(&history(&env, &id(&t)), "session.closed").len(), 1);
    assert_eq!(item(&status_json(&env), &id(&t))["reason"], "no session");
    assert_eq!(
        env.tmux.ok(&["show-options", "-gv", "status-right"]),
        right,
        "publishing never touches the user's status line"
    );

    // Respawned: working again, and the option follows.
    env.ok(&["task", "respawn", &id(&t)]);
    env.wait_session(&id(&t), "live");
    hook(
        &env,
        &[
            "client-session-changed",
            "--session",
            &sess,
            "--client",
            "/dev/pts/9",
        ],
    );
    assert_eq!(summary_option(&env), WORKING_1);
    assert_eq!(
        session_option(&env, &sess),
        "#[push-default]#[fg=yellow]⚙ working#[default]#[pop-default]"
    );
}

#[test]
fn real_tmux_hooks_update_the_options_when_the_agent_exits() {
    let env = env_with_slow_fail();
    env.add_project(&[]);
    // What orange.tmux installs, in short: tmux runs `orange hook` on its own.
    env.tmux.ok(&[
        "set-environment",
        "-g",
        "ORANGE_HOME",
        env.home.to_str().unwrap(),
    ]);
    env.tmux.ok(&[
        "set-hook",
        "-g",
        "pane-died",
        "run-shell -b 'orange hook pane-died --pane \"#{hook_pane}\" --session \"#{hook_session_name}\"'",
    ]);
    let t = env.create(&["feat/hooked", "Hooked", "--harness", "slow-fail"]);
    let sess = t["tmux_session"].as_str().unwrap().to_string();
    env.wait_session(&id(&t), "live");
    hook(&env, &["refresh"]);
    assert_eq!(summary_option(&env), WORKING_1);

    env.tmux
        .ok(&["send-keys", "-t", &format!("={sess}:"), "go", "Enter"]);
    // Done when both are there: the option published and the exit recorded (one may
    // come a moment after the other).
    let done = common::poll(std::time::Duration::from_secs(20), || {
        let done = session_option(&env, &sess).contains("✗ exited 3")
            && !events(&history(&env, &id(&t)), "agent.exited").is_empty();
        // The user's status line polls `orange status`. Debian's tmux sometimes never reaps
        // the agent, and then never runs pane-died: the poll sees the zombie, asks tmux,
        // which nudges its reaper, and tmux then runs the hook. It publishes nothing itself.
        if !done {
            status(&env, "tmux");
        }
        done.then_some(())
    });
    assert!(
        done.is_some(),
        "no pane-died hook effect after 20 s: option {:?}, panes {:?}, log {:?}, history {:?}",
        session_option(&env, &sess),
        env.tmux.ok(&[
            "list-panes",
            "-a",
            "-F",
            "#{session_name} #{pane_dead} #{pane_dead_status}"
        ]),
        std::fs::read_to_string(env.home.join("orange.log")).unwrap_or_default(),
        std::fs::read_to_string(
            env.home
                .join("tasks/app")
                .join(id(&t))
                .join("history.jsonl")
        )
        .unwrap_or_default(),
    );
    assert_eq!(
        summary_option(&env),
        "#[push-default]#[fg=red,bold]✗ 1#[default]#[pop-default]"
    );
    let h = history(&env, &id(&t));
    assert_eq!(events(&h, "agent.exited").len(), 1, "{h:#?}");
    assert!(env.home.join("run/poke").exists());
}

/// The status line as tmux draws it for a user: `#{@orange_summary}` appended to their own
/// status-right, and `#(orange status --format tmux)` in status-left, read from a client
/// attached inside another tmux server's pane.
#[test]
fn the_status_line_shows_the_counts_next_to_the_users_own_text() {
    let env = env_with_slow_fail();
    env.add_project(&[]);
    let t = env.create(&["feat/line", "Line", "--harness", "slow-fail"]);
    env.wait_session(&id(&t), "live");
    hook(&env, &["refresh"]);

    env.tmux
        .ok(&["set-option", "-ga", "status-right", " #{@orange_summary}"]);
    env.tmux
        .ok(&["set-option", "-g", "status-right-length", "120"]);
    // tmux's own expansion of the format, as for drawing (styles still in it).
    let expanded = env.tmux.ok(&[
        "display-message",
        "-p",
        "-t",
        "keepalive",
        "#{T:status-right}",
    ]);
    assert!(expanded.contains("keepalive custom"), "{expanded}");
    assert!(expanded.ends_with(&format!(" {WORKING_1}")), "{expanded}");

    // The polling variant: tmux runs the command (its environment needs ORANGE_HOME).
    env.tmux.ok(&[
        "set-environment",
        "-g",
        "ORANGE_HOME",
        env.home.to_str().unwrap(),
    ]);
    env.tmux.ok(&[
        "set-option",
        "-g",
        "status-left",
        "[#(orange status --format tmux)] ",
    ]);
    env.tmux
        .ok(&["set-option", "-g", "status-left-length", "60"]);
    env.tmux.ok(&["set-option", "-g", "status-interval", "1"]);

    let outer = TmuxServer::start(&env.root(), &[("PATH", env.path.as_str())]);
    outer.ok(&[
        "send-keys",
        "-t",
        "keepalive",
        &format!(
            "env -u TMUX tmux -L {} attach -t keepalive",
            env.tmux.socket
        ),
        "Enter",
    ]);
    let mut line = String::new();
    wait_for(
        "the attached client's status line to show both widgets",
        20,
        || {
            let screen = outer.ok(&["capture-pane", "-p", "-t", "keepalive"]);
            line = screen.lines().last().unwrap_or("").to_string();
            line.starts_with("[⚙ 1]") && line.contains("custom ⚙ 1")
        },
    );
    assert!(!line.contains('#'), "a style leaked as text: {line:?}");
    assert!(line.contains("keepalive custom"), "{line:?}");

    // The agent exits; publishing again changes what the user sees.
    let sess = t["tmux_session"].as_str().unwrap();
    env.tmux
        .ok(&["send-keys", "-t", &format!("={sess}:"), "go", "Enter"]);
    env.wait_session(&id(&t), "dead");
    hook(&env, &["pane-died"]);
    wait_for("the status line to show the dead agent", 20, || {
        let screen = outer.ok(&["capture-pane", "-p", "-t", "keepalive"]);
        line = screen.lines().last().unwrap_or("").to_string();
        line.starts_with("[✗ 1]") && line.contains("custom ✗ 1")
    });
    let _ = outer.tmux(&["detach-client", "-a"]);
}

#[test]
fn unknown_events_and_missing_servers_are_silent_successes_logged_once() {
    let env = TaskEnv::new();
    hook(&env, &["no-such-event", "--weird", "x"]);
    let log = std::fs::read_to_string(env.home.join("orange.log")).unwrap();
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert_eq!(lines[0]["event"], "no-such-event");
    assert_eq!(lines[0]["level"], "warn");
    assert!(lines[0]["ts"].is_string());
    hook(&env, &[]);

    // No server at all: every event is still a quiet no-op.
    let mut c = env.cmd_in(&env.repo, &["hook", "pane-died", "--pane", "%1"]);
    c.env("ORANGE_TMUX_SOCKET", format!("{}-gone", env.tmux.socket));
    let out = c.output().unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "{out:?}"
    );
    // --json anywhere shows what it did.
    let out = run(&env, &["hook", "refresh", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["event"], "refresh");
    assert_eq!(v["published"], true);
}

#[test]
fn hooks_poke_the_sidebars() {
    let env = TaskEnv::new();
    let poke = env.home.join("run/poke");
    assert!(!poke.exists());
    hook(
        &env,
        &[
            "client-session-changed",
            "--session",
            "keepalive",
            "--client",
            "c",
        ],
    );
    let first = std::fs::metadata(&poke).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    hook(&env, &["refresh"]);
    assert!(std::fs::metadata(&poke).unwrap().modified().unwrap() > first);
}

#[test]
fn status_asks_tmux_only_when_something_may_have_changed_and_publish_writes_only_changes() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let t = env.create(&["feat/cache", "Cache", "--harness", "fake-wait"]);
    env.wait_session(&id(&t), "live");
    let (bin, log) = counting_tmux(&env.root());
    let path = format!("{}:{}", bin.display(), env.path);
    let counted = |args: &[&str]| {
        let before = calls(&log).len();
        let out = env
            .cmd_in(&env.repo, args)
            .env("PATH", &path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        (
            String::from_utf8(out.stdout).unwrap(),
            calls(&log)[before..].to_vec(),
        )
    };
    // Past the slack after the last task change: a snapshot from now on is trusted.
    std::thread::sleep(std::time::Duration::from_millis(100));
    let (text, first) = counted(&["status", "--format", "tmux"]);
    assert_eq!(text, format!("{WORKING_1}\n"));
    assert!(first.len() <= 1, "{first:?}");
    let (again, none) = counted(&["status", "--format", "tmux"]);
    assert_eq!(again, text);
    assert_eq!(none, Vec::<String>::new(), "nothing changed: no tmux call");

    // publish: `task create` already published (lifecycle publishes after every change),
    // so a refresh is one call that reads and finds nothing to change.
    assert_eq!(env.tmux.ok(&["show", "-gv", "@orange_summary"]), WORKING_1);
    let (_, publish1) = counted(&["hook", "refresh"]);
    assert_eq!(publish1.len(), 1, "only the snapshot: {publish1:?}");
    let (_, publish2) = counted(&["hook", "refresh"]);
    assert_eq!(
        publish2.len(),
        1,
        "nothing changed: only the snapshot: {publish2:?}"
    );
    let (_, after_publish) = counted(&["status", "--format", "tmux"]);
    assert_eq!(after_publish.len(), 0, "publish refreshed the cache");

    // The agent dies without any hook: the cache notices its pid is gone.
    let sess = t["tmux_session"].as_str().unwrap();
    let pid = env.tmux.ok(&[
        "display-message",
        "-p",
        "-t",
        &format!("={sess}:"),
        "#{pane_pid}",
    ]);
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    env.wait_session(&id(&t), "dead");
    let (text, one) = counted(&["status", "--format", "tmux"]);
    assert_eq!(
        text,
        "#[push-default]#[fg=red,bold]✗ 1#[default]#[pop-default]\n"
    );
    assert_eq!(one.len(), 1, "{one:?}");
    let (_, none) = counted(&["status", "--format", "tmux"]);
    assert_eq!(none.len(), 0);
    let s = status_json(&env);
    assert_eq!(item(&s, &id(&t))["reason"], "killed (signal 9)");
    // The observer's snapshot, one file per tmux server.
    let snapshots: Vec<_> = std::fs::read_dir(env.home.join("run"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("snapshot-"))
        .collect();
    assert_eq!(snapshots.len(), 1, "{snapshots:?}");

    // A new task (a task file changed) is seen at once.
    let t2 = env.create(&["feat/cache2", "Cache 2", "--harness", "fake-wait"]);
    env.wait_session(&id(&t2), "live");
    let s = status_json(&env);
    assert_eq!((&s["working"], &s["dead"]), (&1.into(), &1.into()), "{s:#}");
}

#[test]
fn the_socket_path_is_the_one_tmux_uses() {
    let env = TaskEnv::new();
    let ours = orange::adapters::tmux::Tmux::new(orange::adapters::tmux::Server::Name(
        env.tmux.socket.clone(),
    ))
    .socket_path()
    .unwrap();
    let theirs = env.tmux.ok(&["display-message", "-p", "#{socket_path}"]);
    assert_eq!(ours, PathBuf::from(theirs));
}

#[test]
fn a_pane_split_in_front_of_the_agent_never_stands_in_for_it() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let t = env.create(&["split/x", "split", "--harness", "fake-wait"]);
    let tid = id(&t);
    env.wait_session(&tid, "live");
    let agent = t["tmux_pane_id"].as_str().unwrap();
    // A pane split before the agent (as a left sidebar is): now the session's first pane.
    env.tmux.ok(&[
        "split-window",
        "-d",
        "-b",
        "-h",
        "-t",
        agent,
        "sleep",
        "600",
    ]);
    let first = env.tmux.ok(&[
        "list-panes",
        "-t",
        t["tmux_session_id"].as_str().unwrap(),
        "-F",
        "#{pane_id}",
    ]);
    assert_ne!(first.lines().next().unwrap(), agent, "{first}");
    let pid = env.tmux.ok(&["display", "-p", "-t", agent, "#{pane_pid}"]);
    std::process::Command::new("kill")
        .args(["-9", &pid])
        .status()
        .unwrap();
    // The hook's own snapshot may see the pane alive a moment longer than the status
    // widget's: wait until the hook recorded the exit too.
    wait_for(
        "the agent to be seen dead and its exit recorded",
        10,
        || {
            hook(&env, &["refresh"]);
            item(&status_json(&env), &tid)["bucket"] == "dead"
                && !events(&history(&env, &tid), "agent.exited").is_empty()
        },
    );
    assert_eq!(env.task(&tid)["session"]["state"], "dead");
    hook(&env, &["refresh"]);
    assert_eq!(events(&history(&env, &tid), "agent.exited").len(), 1);
}
