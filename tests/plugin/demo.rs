//! `orange demo`: the plugin files built into the binary, three demo agents on their own
//! server with the plugin and a sidebar, and a directory it refuses.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{bin, wait_for};
use serde_json::Value;

use super::{plugin_dir, EVENTS};

/// `orange demo` writes the plugin out of its own binary: every file of tmux/ must be
/// built in (an `include_str!` of it somewhere in src/), or the demo's keys break.
#[test]
fn every_plugin_file_is_built_into_the_binary_for_the_demo() {
    fn text_of(dir: &Path, out: &mut String) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                text_of(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push_str(&std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    let mut src = String::new();
    text_of(&plugin_dir().join("src"), &mut src);
    let mut files = vec!["orange.tmux".to_string()];
    for e in std::fs::read_dir(plugin_dir().join("tmux"))
        .unwrap()
        .flatten()
    {
        files.push(format!("tmux/{}", e.file_name().to_string_lossy()));
    }
    let missing: Vec<&String> = files
        .iter()
        .filter(|f| !src.contains(&format!("/{f}\")")))
        .collect();
    assert!(missing.is_empty(), "not built into orange: {missing:?}");
}

/// Kills the demo's tmux server when the test ends, however it ends, then ends what still
/// runs of the demo's orange home (`.1`) before the test's temp directory goes.
struct DemoServer(String, PathBuf);

impl Drop for DemoServer {
    fn drop(&mut self) {
        let tmux = |args: &[&str]| {
            Command::new("tmux")
                .args(["-L", &self.0])
                .args(args)
                .output()
        };
        let path = tmux(&["display", "-p", "#{socket_path}"])
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        for e in EVENTS {
            let _ = tmux(&["set-hook", "-gu", e]);
        }
        let _ = tmux(&["kill-server"]);
        if !path.is_empty() {
            let _ = std::fs::remove_file(path);
        }
        common::end_processes_of(&self.1);
    }
}

#[test]
fn demo_starts_three_agents_with_the_plugin_and_a_sidebar() {
    let tmp = tempfile::Builder::new()
        .prefix("orange-demo-test-")
        .tempdir()
        .unwrap();
    let user_home = common::user_home(tmp.path());
    let socket = format!("orange-demo-t{}", std::process::id());
    let sandbox = tmp.path().join("demo");
    let _server = DemoServer(socket.clone(), sandbox.join("orange-home"));
    let start = Instant::now();
    let out = Command::new(bin())
        .args([
            "demo",
            "--no-attach",
            "--json",
            "--dir",
            sandbox.to_str().unwrap(),
        ])
        .env("ORANGE_TMUX_SOCKET", &socket)
        .env("ORANGE_DEMO_PACE", "0.2")
        .env("HOME", &user_home)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .env_remove("ORANGE_HOME")
        .output()
        .unwrap();
    let took = start.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "orange demo failed: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("orange demo took {took:?}");
    let demo: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(demo["socket"], socket.as_str());
    let tasks = demo["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 3, "{demo}");
    let server = |args: &[&str]| -> String {
        let o = Command::new("tmux")
            .args(["-L", &socket])
            .args(args)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).trim_end().to_string()
    };
    let sessions = server(&["list-sessions", "-F", "#{session_id} #{@orange_task}"]);
    for t in tasks {
        let line = format!(
            "{} {}",
            t["session_id"].as_str().unwrap(),
            t["id"].as_str().unwrap()
        );
        assert!(
            sessions.lines().any(|l| l == line),
            "{line} not in {sessions}"
        );
    }
    // The plugin is loaded on the demo server, the status token replaced.
    assert!(server(&["list-keys", "-T", "orange"]).lines().count() >= 6);
    assert!(server(&["show", "-gv", "status-right"]).contains("status --format tmux"));

    // The sidebar is open beside the first task's agent, which keeps the focus.
    assert_eq!(demo["sidebar"]["action"], "opened", "{demo}");
    let window = format!("{}:", tasks[0]["session_id"].as_str().unwrap());
    let panes = server(&[
        "list-panes",
        "-t",
        &window,
        "-F",
        "#{pane_id} #{pane_active} #{?@orange_sidebar,1,0}",
    ]);
    let rows: Vec<Vec<&str>> = panes.lines().map(|l| l.split(' ').collect()).collect();
    assert_eq!(rows.len(), 2, "{panes}");
    let sidebar = rows.iter().find(|r| r[2] == "1").expect("a sidebar pane");
    assert_eq!(sidebar[0], demo["sidebar"]["pane"].as_str().unwrap());
    assert!(
        rows.iter().any(|r| r[2] == "0" && r[1] == "1"),
        "focus not on the agent: {panes}"
    );
    let mut text = String::new();
    wait_for("the sidebar header", 10, || {
        text = server(&["capture-pane", "-p", "-t", sidebar[0]]);
        text.contains("shop/demo/dark-mode")
    });
    eprintln!("demo sidebar pane:\n{text}");

    // The demo agents work: one finishes, one asks a question, one keeps going.
    let home = demo["home"].as_str().unwrap();
    let task_list = || -> Value {
        let o = Command::new(bin())
            .args(["task", "list", "--all", "--json"])
            .env("ORANGE_HOME", home)
            .env("HOME", &user_home)
            .env("ORANGE_TMUX_SOCKET", &socket)
            .env_remove("TMUX")
            .output()
            .unwrap();
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let status_of = |branch: &str| -> String {
        task_list()
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["branch"] == branch)
            .map(|t| t["status"].as_str().unwrap().to_string())
            .unwrap_or_default()
    };
    wait_for("the dark-mode agent to finish", 30, || {
        status_of("demo/dark-mode") == "reviewing"
    });
    // Issue 15: its last words scroll in after it reported; the sidebar must not say
    // `Agent: working` beside `Status: reviewing` (seen after the report, by activity).
    std::thread::sleep(Duration::from_millis(1500));
    let agent_of = || -> Value {
        let o = Command::new(bin())
            .args([
                "sidebar",
                "--once",
                "--json",
                "--task",
                tasks[0]["id"].as_str().unwrap(),
            ])
            .env("ORANGE_HOME", home)
            .env("HOME", &user_home)
            .env("ORANGE_TMUX_SOCKET", &socket)
            .env_remove("TMUX")
            .output()
            .unwrap();
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let m = agent_of();
    assert_eq!(m["status"], "reviewing", "{m}");
    assert_ne!(m["agent"], "working", "{m}");
    wait_for("the lockout agent to ask", 30, || {
        status_of("demo/login-lockout") == "clarification"
    });
    assert_eq!(status_of("demo/search"), "working");
    let agent = server(&[
        "capture-pane",
        "-p",
        "-t",
        &format!("{}:", tasks[0]["session_id"].as_str().unwrap()),
    ]);
    eprintln!("demo agent pane:\n{agent}");
    assert!(agent.contains("committed: Dark palette"), "{agent}");
    let repo = demo["repo"].as_str().unwrap();
    let log = Command::new("git")
        .args(["-C", repo, "log", "--oneline", "demo/dark-mode"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&log.stdout).contains("Theme setting and toggle"));
    assert!(demo["attach"].as_str().unwrap().contains(&socket));
}

#[test]
fn demo_refuses_a_directory_that_is_not_empty() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("precious"), "x").unwrap();
    let out = Command::new(bin())
        .args([
            "demo",
            "--no-attach",
            "--json",
            "--dir",
            tmp.path().to_str().unwrap(),
        ])
        .env(
            "ORANGE_TMUX_SOCKET",
            format!("orange-demo-never-{}", std::process::id()),
        )
        .env_remove("TMUX")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error"]["code"], "invalid_argument", "{v}");
    assert!(tmp.path().join("precious").exists());
}
