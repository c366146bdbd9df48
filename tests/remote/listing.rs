//! What this machine shows of a host's tasks: the status widget from the monitor's fetch
//! (no ssh of its own), a host fetched again after a command, an unreachable host's age,
//! and its tasks kept in every listing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::common::{id, poll, wait_for};

use super::{out_of, setup, ssh_counter, ssh_wrapper, state_files, Remote};

/// An `ssh` first on PATH that records that it ran, then fails.
fn ssh_tripwire(dir: &Path) -> (PathBuf, PathBuf) {
    ssh_wrapper(dir, "tripwire", "ssh-ran", "exit 255")
}

#[test]
fn the_status_widget_shows_remote_tasks_from_the_monitors_fetch_without_ssh() {
    let Some(r) = setup() else { return };
    r.add_project();
    let l = &r.local;
    let t = r.create("feat/w", "wait", "fake-wait");
    let tid = id(&t);
    r.remote.wait_session(&tid, "live");
    let more: Vec<String> = (0..2)
        .map(|i| id(&r.create(&format!("feat/w{i}"), "wait", "fake-wait")))
        .collect();
    for m in &more {
        r.remote.wait_session(m, "live");
    }
    // One monitor pass here fetches the host: one request to the host's `orange serve`,
    // which the commands above started (no ssh process of its own, never one per task).
    let (counting, log) = ssh_counter(&l.root());
    let pass_out = l
        .cmd_in(&l.repo, &["monitor", "--once", "--json"])
        .env("PATH", format!("{}:{}", counting.display(), l.path))
        .output()
        .unwrap();
    assert!(
        pass_out.status.success(),
        "{}",
        String::from_utf8_lossy(&pass_out.stderr)
    );
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(calls.lines().count(), 0, "ssh calls: {calls}");
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(l.home.join("run/hosts/box.json")).unwrap())
            .unwrap();
    assert_eq!(seen["reachable"], true, "{seen}");
    // The widget: no ssh on its path (an ssh that records any call is first on PATH).
    let (trip, mark) = ssh_tripwire(&l.root());
    let path = format!("{}:{}", trip.display(), l.path);
    let out = l
        .cmd_in(&l.repo, &["status", "--format", "json"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(out.status.success());
    let st: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!mark.exists(), "the status widget ran ssh");
    let item = st["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == tid.as_str())
        .unwrap_or_else(|| panic!("{st}"));
    assert_eq!(item["host"], "box");
    assert_eq!(item["bucket"], "working", "{st}");
    assert_eq!(st["working"], 3, "{st}");
    assert_eq!(st["hosts"][0]["name"], "box");
    assert_eq!(st["hosts"][0]["reachable"], true);
    // The tmux option the status line shows counts it.
    let summary = l.tmux.ok(&["show", "-gqv", "@orange_summary"]);
    assert!(summary.contains("⚙ 3"), "{summary}");
    // And the status line as a person sees it.
    let line = String::from_utf8_lossy(
        &l.cmd_in(&l.repo, &["status", "--format", "plain"])
            .env("PATH", &path)
            .output()
            .unwrap()
            .stdout,
    )
    .to_string();
    assert!(line.starts_with("working 3"), "{line}");
    assert!(!mark.exists(), "the status widget ran ssh");
}

#[test]
fn an_unreachable_host_shows_its_age_never_dead_agents_and_commands_fail_cleanly() {
    let Some(mut r) = setup() else { return };
    r.add_project();
    let t = r.create("feat/u", "wait", "fake-wait");
    let tid = id(&t);
    r.remote.wait_session(&tid, "live");
    r.local.ok(&["monitor", "--once"]);
    let before = state_files(&r.local.home);

    r.sshd.stop();
    let msg = r.local.err(&["task", "show", &tid], "host_unreachable");
    assert!(msg.contains("box"), "{msg}");
    r.local.err(
        &[
            "task",
            "create",
            "--project",
            "app",
            "feat/x",
            "x",
            "--harness",
            "fake-wait",
        ],
        "host_unreachable",
    );
    r.local
        .err(&["task", "cancel", &tid, "--yes"], "host_unreachable");
    r.local.err(&["host", "check", "box"], "host_unreachable");
    // Nothing here changed for it (the registry, the links, the tasks).
    assert_eq!(state_files(&r.local.home), before);
    // The monitor marks it unreachable; its agent stays as last seen, never dead.
    r.local.ok(&["monitor", "--once"]);
    let st = r.local.ok(&["status", "--format", "json"]);
    assert_eq!(st["hosts"][0]["reachable"], false, "{st}");
    assert!(st["hosts"][0]["age_s"].is_number(), "{st}");
    assert_eq!(st["dead"], 0, "{st}");
    assert_eq!(st["working"], 1, "{st}");
    let tmux = String::from_utf8_lossy(&out_of(&r.local, &["status", "--format", "tmux"]).stdout)
        .to_string();
    assert!(tmux.contains("⚠ box"), "{tmux}");
    // task list --all lists what it can and says which host it could not ask.
    let out = out_of(&r.local, &["task", "list", "--all"]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("host_unreachable"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The agent there never noticed.
    assert_eq!(r.remote.task(&tid)["session"]["state"], "live");

    // Back: the same commands work, and the host is reachable again.
    r.sshd.resume();
    assert_eq!(r.local.ok(&["task", "show", &tid])["host"], "box");
    r.local.ok(&["monitor", "--once"]);
    let st = r.local.ok(&["status", "--format", "json"]);
    assert_eq!(st["hosts"][0]["reachable"], true, "{st}");
}

#[test]
fn the_running_monitor_fetches_a_host_at_once_after_a_command_changed_it() {
    let Some(r) = setup() else { return };
    r.add_project();
    // A monitor here whose interval is far longer than the test.
    let mut monitor = r
        .local
        .cmd_in(&r.local.repo, &["monitor", "--interval", "120s"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the first fetch", 20, || {
        r.local.home.join("run/hosts/box.json").exists()
    });
    let t = r.create("feat/m", "wait", "fake-wait");
    let tid = id(&t);
    // The command poked run/hosts/poke: the monitor fetched the host and published.
    let seen = poll(Duration::from_secs(20), || {
        let summary = r.local.tmux.ok(&["show", "-gqv", "@orange_summary"]);
        summary.contains("⚙ 1").then_some(summary)
    });
    let st = r.local.ok(&["status", "--format", "json"]);
    let _ = monitor.kill();
    let _ = monitor.wait();
    assert!(
        seen.is_some(),
        "the status line never showed the remote task: {st}"
    );
    assert!(
        st["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["id"] == tid.as_str()),
        "{st}"
    );
}

// --- an unreachable host's tasks in every listing ------------------------------------------

#[test]
fn an_unreachable_hosts_tasks_stay_in_every_listing_marked_with_its_state() {
    let Some(mut r) = setup() else { return };
    r.add_project();
    let a = id(&r.create("feat/a", "first", "fake-wait"));
    let b = id(&r.create("feat/b", "second", "fake-wait"));
    r.remote.wait_session(&a, "live");
    r.remote.wait_session(&b, "live");
    // A listing while it is reachable, then a task it has not shown (the monitor's fetch
    // has), and a local task.
    let listed = r.local.ok(&["task", "list", "--all"]);
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("host_state").is_none()),
        "{listed}"
    );
    let c = id(&r.create("feat/c", "third", "fake-wait"));
    r.remote.wait_session(&c, "live");
    r.local.ok(&["monitor", "--once"]);
    r.local.add_project(&[r.local.repo.to_str().unwrap()]);
    let mine = id(&r.local.ok(&[
        "task",
        "create",
        "--project",
        "here",
        "feat/l",
        "l",
        "--no-spawn",
    ]));
    // A person attached to one of them: its local session, as `task attach` made it.
    let attached = format!("remote-box-{a}");
    r.local
        .tmux
        .ok(&["new-session", "-d", "-s", &attached, "sleep 600"]);
    for (k, v) in [
        ("@orange_task", a.as_str()),
        ("@orange_remote", "box"),
        ("@orange_status", "box: feat/a"),
    ] {
        r.local
            .tmux
            .ok(&["set-option", "-t", &format!("={attached}:"), k, v]);
    }

    r.sshd.stop();
    // JSON: the same list, the host's tasks still there, each with its host's state.
    let all = r.local.ok(&["task", "list", "--all"]);
    let rows = all.as_array().unwrap();
    assert_eq!(rows.len(), 4, "{all}");
    let local = rows.iter().find(|t| t["id"] == mine.as_str()).unwrap();
    assert!(local.get("host_state").is_none(), "{local}");
    for want in [&a, &b, &c] {
        let t = rows
            .iter()
            .find(|t| t["id"] == want.as_str())
            .unwrap_or_else(|| panic!("task {want} dropped: {all}"));
        assert_eq!(t["host"], "box", "{t}");
        assert_eq!(t["host_state"]["reachable"], false, "{t}");
        assert!(t["host_state"]["since"].is_string(), "{t}");
        assert!(t["host_state"]["last_seen"].is_string(), "{t}");
        assert_ne!(t["session"]["state"], "dead", "{t}");
        assert_ne!(t["status"], "failed", "{t}");
    }
    let first = rows.iter().find(|t| t["id"] == a.as_str()).unwrap();
    assert_eq!(first["summary"], "first", "{first}");
    assert_eq!(first["branch"], "feat/a", "{first}");
    // The project's own listing too, exit status 0.
    let app = r.local.ok(&["task", "list", "--project", "app"]);
    assert_eq!(app.as_array().unwrap().len(), 3, "{app}");
    assert!(app
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["host_state"]["reachable"] == false));
    // Text: every task listed, marked, never dead; exit status 0.
    for args in [
        vec!["task", "list", "--all"],
        vec!["task", "list", "--project", "app"],
    ] {
        let out = out_of(&r.local, &args);
        assert!(out.status.success(), "{args:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        for want in [&a, &b, &c] {
            let line = text
                .lines()
                .find(|l| l.contains(want.as_str()))
                .unwrap_or_else(|| panic!("{args:?}: task {want} dropped:\n{text}"));
            assert!(line.contains("? unreachable (last seen "), "{line}");
            assert!(!line.contains("dead"), "{line}");
        }
    }
    // The sidebar of one of them.
    let out = out_of(
        &r.local,
        &["sidebar", "--task", &a, "--once", "--width", "60"],
    );
    let side = String::from_utf8_lossy(&out.stdout);
    assert!(side.contains("? unreachable (last seen "), "{side}");
    assert!(!side.contains("dead"), "{side}");
    // The picker's label of the attached one (the monitor publishes it).
    r.local.ok(&["monitor", "--once"]);
    let label = |r: &Remote| {
        r.local.tmux.ok(&[
            "show",
            "-t",
            &format!("={attached}:"),
            "-qv",
            "@orange_status",
        ])
    };
    let shown = label(&r);
    assert!(
        shown.starts_with("box: feat/a · ? unreachable (last seen "),
        "{shown}"
    );

    // Back: live listings again, no state attached, the label as it was.
    r.sshd.resume();
    let all = r.local.ok(&["task", "list", "--all"]);
    assert_eq!(all.as_array().unwrap().len(), 4, "{all}");
    assert!(
        all.as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("host_state").is_none()),
        "{all}"
    );
    r.local.ok(&["monitor", "--once"]);
    assert_eq!(label(&r), "box: feat/a");
    let _ = Command::new("tmux")
        .args([
            "-L",
            &r.local.tmux.socket,
            "kill-session",
            "-t",
            &format!("={attached}"),
        ])
        .status();
}
