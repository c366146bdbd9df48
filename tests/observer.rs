//! One observer, many readers (DESIGN.md): the monitor asks tmux once per pass and writes
//! the snapshot; the status line, the sidebars and the picker read it; commands poke. Real
//! git, a real tmux server, fake agents; tmux calls counted by a wrapper first on PATH.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::process::{Child, Stdio};
use std::time::Duration;

use common::{calls, counting_tmux, holds_for, id, wait_for, TaskEnv};
use serde_json::Value;

/// The snapshot file the observer wrote for the test's tmux server.
fn snapshot(env: &TaskEnv) -> Option<Value> {
    let dir = std::fs::read_dir(env.home.join("run")).ok()?;
    let path = dir.flatten().map(|e| e.path()).find(|p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("snapshot-"))
    })?;
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// A background `orange monitor`, killed when dropped.
struct Background(Child);

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_monitor(env: &TaskEnv, interval: &str) -> Background {
    let child = env
        .cmd_in(&env.repo, &["monitor", "--interval", interval])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let monitor = Background(child);
    wait_for(
        "the monitor to hold its lock and write a snapshot",
        20,
        || {
            let locked = std::fs::read_dir(env.home.join("run")).is_ok_and(|d| {
                d.flatten().any(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    n.starts_with("monitor-") && n.ends_with(".json")
                })
            });
            locked && snapshot(env).is_some()
        },
    );
    monitor
}

#[test]
fn a_monitor_pass_asks_tmux_once() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "4"]);
    let mut ids = vec![];
    for b in ["one/a", "one/b", "one/c"] {
        let t = env.ok(&["task", "create", b, "Wait", "--harness", "fake-wait"]);
        ids.push(id(&t));
    }
    for i in &ids {
        env.wait_session(i, "live");
    }
    let (bin, log) = counting_tmux(&env.root());
    let path = format!("{}:{}", bin.display(), env.path);
    let pass = || {
        let before = calls(&log).len();
        let out = env
            .cmd_in(&env.repo, &["monitor", "--once", "--json"])
            .env("PATH", &path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        (v, calls(&log)[before..].to_vec())
    };
    // The first pass may publish what changed; the next one has nothing to change.
    let (first, _) = pass();
    assert_eq!(first["checked"], 3, "{first}");
    let (report, second) = pass();
    assert_eq!(report["checked"], 3, "{report}");
    assert_eq!(second.len(), 1, "one tmux call per pass: {second:?}");
    assert!(second[0].contains(" list-panes -a "), "{second:?}");
    // What it saw is in the snapshot the readers use.
    let snap = snapshot(&env).expect("the pass wrote the snapshot");
    assert_eq!(snap["summary"]["working"], 3, "{snap}");
}

#[test]
fn with_a_monitor_sidebars_and_the_status_line_never_ask_tmux() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let t = env.ok(&["task", "create", "side/a", "Wait", "--harness", "fake-wait"]);
    let tid = id(&t);
    env.wait_session(&tid, "live");
    let _monitor = start_monitor(&env, "1s");
    let (bin, log) = counting_tmux(&env.root());
    let path = format!("{}:{}", bin.display(), env.path);
    // Three sidebars on the task, as three panes would run them (no terminal here: the
    // size comes from COLUMNS/LINES).
    let sidebars: Vec<Background> = (0..3)
        .map(|_| {
            Background(
                env.cmd_in(&env.repo, &["sidebar", "--task", &tid])
                    .env("PATH", &path)
                    .env("COLUMNS", "40")
                    .env("LINES", "30")
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap(),
            )
        })
        .collect();
    // They watch the snapshot the monitor renews (a pass a second): no tmux call of theirs.
    holds_for(
        "sidebars that never call tmux",
        Duration::from_secs(3),
        || calls(&log).is_empty(),
    );
    drop(sidebars);
    // The status line reads the same snapshot.
    let out = env
        .cmd_in(&env.repo, &["status", "--format", "plain"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("working 1"),
        "{out:?}"
    );
    assert_eq!(calls(&log), Vec::<String>::new(), "no tmux call at all");
}

#[test]
fn a_change_wakes_the_monitor_at_once() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    // A minute between passes: only the poke of `task create` can make the next one.
    let _monitor = start_monitor(&env, "60s");
    let before = snapshot(&env).unwrap();
    assert_eq!(before["summary"]["queued"], 0, "{before}");
    env.ok(&["task", "create", "wake/a", "Queued", "--no-spawn"]);
    wait_for("the monitor to observe the new task", 20, || {
        snapshot(&env).is_some_and(|s| s["summary"]["queued"] == 1)
    });
    // And the widget it publishes follows.
    wait_for("@orange_summary to count it", 20, || {
        env.tmux
            .ok(&["show", "-gqv", "@orange_summary"])
            .contains("⏸ 1")
    });
}

#[test]
fn finished_tasks_are_never_read_on_the_hot_paths() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let mut done = vec![];
    for i in 0..5 {
        let t = env.ok(&["task", "create", &format!("old/{i}"), "Old", "--no-spawn"]);
        env.ok(&["task", "cancel", &id(&t), "--yes"]);
        done.push(id(&t));
    }
    // Damage every finished task's file: nothing on the hot paths may read them.
    for i in &done {
        std::fs::write(
            env.home.join("tasks/app").join(i).join("task.json"),
            "{ not json",
        )
        .unwrap();
    }
    let t = env.ok(&["task", "create", "new/a", "New", "--no-spawn"]);
    let (ok, s) = env.json(&["status"]);
    assert!(ok, "{s}");
    assert_eq!(
        (&s["queued"], &s["unreadable"]),
        (&1.into(), &0.into()),
        "{s}"
    );
    let (ok, r) = env.json(&["monitor", "--once"]);
    assert!(ok, "{r}");
    env.ok(&["task", "spawn", &id(&t)]);
    // A listing of every task does read them, and says which file is damaged.
    let err = env.err(&["task", "list"], "state_corrupt");
    assert!(err.contains("task.json"), "{err}");
}

#[test]
fn the_index_of_open_tasks_is_rebuilt_when_it_is_missing() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    env.ok(&["task", "create", "idx/a", "A", "--no-spawn"]);
    env.ok(&["task", "create", "idx/b", "B", "--no-spawn"]);
    // A data root from before the index (or one whose index was deleted).
    std::fs::remove_dir_all(env.home.join("tasks/app/.open")).unwrap();
    // The branch check reads open tasks through the index: it must still see idx/a.
    env.err(
        &["task", "create", "idx/a", "Again", "--no-spawn"],
        "invalid_argument",
    );
    env.ok(&["task", "create", "idx/c", "C", "--no-spawn"]);
    let (ok, s) = env.json(&["status"]);
    assert!(ok, "{s}");
    assert_eq!(s["queued"], 3, "{s}");
}

/// The snapshot file's inode: a new one each time it is written (replaced by rename).
fn snapshot_inode(env: &TaskEnv) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let dir = std::fs::read_dir(env.home.join("run")).ok()?;
    let path = dir.flatten().map(|e| e.path()).find(|p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("snapshot-"))
    })?;
    std::fs::metadata(path).ok().map(|m| m.ino())
}

/// `orange hook agent EVENT` as Claude Code runs it: in the workspace, the payload on stdin.
fn agent_hook(env: &TaskEnv, id: &str, event: &str, conversation: &str) {
    use std::io::Write;
    let t = env.task(id);
    let ws = env.ws_path(t["workspace"].as_str().unwrap());
    let mut child = env
        .cmd_in(&ws, &["hook", "agent", event, "--json"])
        .env("ORANGE_TASK_ID", id)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let payload = serde_json::json!({ "session_id": conversation }).to_string();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
}

/// The running monitor keeps what it read between passes: a hook that changes an agent's
/// record (and pokes) is read at the next pass, every time.
#[test]
fn a_running_monitor_reads_again_what_a_hook_changed() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let id = env.create_id("kept/hook", "claude");
    env.wait_session(&id, "live");
    let conv = env.task(&id)["agent_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    // A minute between passes: only the hooks' pokes make the next one.
    let _monitor = start_monitor(&env, "60s");
    let counts = |env: &TaskEnv| {
        snapshot(env).map(|s| {
            (
                s["summary"]["working"].clone(),
                s["summary"]["waiting"].clone(),
            )
        })
    };
    for (event, want) in [
        ("Stop", (0, 1)),
        ("UserPromptSubmit", (1, 0)),
        ("Stop", (0, 1)),
    ] {
        agent_hook(&env, &id, event, &conv);
        wait_for(&format!("the monitor to see {event}"), 20, || {
            counts(&env) == Some((want.0.into(), want.1.into()))
        });
    }
}

/// config.toml changes without a poke (a person edits it): the running monitor reads it
/// again when its file changed, and its policies follow.
#[test]
fn a_running_monitor_reads_config_toml_again_when_it_changes() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    env.append_config("[policy]\nidle_grace = \"3600s\"\n");
    let id = env.create_id("kept/config", "fake-wait");
    env.agent_log(&id, "cwd");
    let _monitor = start_monitor(&env, "200ms");
    wait_for("the monitor to judge the agent", 20, || {
        snapshot(&env).is_some_and(|s| s["summary"]["working"] == 1)
    });
    assert!(
        env.input_lines(&id).is_empty(),
        "no nudge within the hour's grace"
    );
    let path = env.home.join("config.toml");
    let config = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, config.replace("\"3600s\"", "\"1s\"")).unwrap();
    wait_for("the nudge the new grace allows", 20, || {
        env.input_lines(&id).len() == 1
    });
}

/// The running monitor writes its snapshot again when what it saw changed, not every pass
/// (readers trust the file; sidebars read it again each time it is replaced).
#[test]
fn the_running_monitor_writes_its_snapshot_again_only_when_it_changed() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    env.ok(&["task", "create", "still/a", "Queued", "--no-spawn"]);
    let _monitor = start_monitor(&env, "200ms");
    // Settled: the monitor has seen the widget it published (its own change, seen once).
    wait_for("the monitor to see the widget it published", 20, || {
        let published = env.tmux.ok(&["show", "-gqv", "@orange_summary"]);
        snapshot(&env).is_some_and(|s| {
            s["summary"]["queued"] == 1
                && s["options"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|o| o[0] == "@orange_summary" && o[1] == published.trim_end())
        }) && published.contains("⏸ 1")
    });
    let written = snapshot_inode(&env);
    holds_for(
        "the snapshot not written again while nothing changes",
        Duration::from_secs(2),
        || snapshot_inode(&env) == written,
    );
    env.ok(&["task", "create", "still/b", "Queued", "--no-spawn"]);
    wait_for("the snapshot to show the new task", 20, || {
        snapshot(&env).is_some_and(|s| s["summary"]["queued"] == 2)
    });
    assert_ne!(snapshot_inode(&env), written);
}

/// The running monitor asks a session's marks once: a session that comes after its first
/// look has them asked then (its task known to the snapshot and to the crash repair).
#[test]
fn a_running_monitor_learns_the_marks_of_a_new_session() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let _monitor = start_monitor(&env, "60s");
    let id = env.create_id("marks/new", "fake-wait");
    let sid = env.wait_session(&id, "live")["tmux_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    wait_for("the monitor to see the new session's task mark", 20, || {
        snapshot(&env).is_some_and(|s| {
            s["sessions"].as_array().into_iter().flatten().any(|m| {
                m["id"] == sid.as_str()
                    && m["marks"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|kv| kv[0] == "@orange_task" && kv[1] == id.as_str())
            })
        })
    });
}
