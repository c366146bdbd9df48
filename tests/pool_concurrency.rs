//! Many processes at once, and processes killed mid-operation.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::fs::OpenOptions;
use std::process::Stdio;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::{parse_json_output, wait_until, Env};

#[test]
fn sixteen_processes_racing_for_a_pool_of_four_bind_exactly_four() {
    let env = Arc::new(Env::new());
    env.add_project(&["--pool-size", "4"]);
    let n = 16;
    let barrier = Arc::new(Barrier::new(n));
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let env = env.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let label = format!("racer-{i}");
                let args = ["workspace", "acquire", "--task", label.as_str(), "--json"];
                let mut cmd = env.cmd(&args);
                barrier.wait();
                let out = cmd.output().unwrap();
                parse_json_output(&args, &out)
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let mut names: Vec<String> = results
        .iter()
        .filter(|(ok, _)| *ok)
        .map(|(_, v)| v["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["app--1", "app--2", "app--3", "app--4"],
        "{results:?}"
    );
    let failures: Vec<_> = results.iter().filter(|(ok, _)| !*ok).collect();
    assert_eq!(failures.len(), 12);
    for (_, v) in failures {
        assert_eq!(v["error"]["code"], "pool_exhausted", "{v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains("4/4"),
            "{v}"
        );
    }
    let pool = env.pool_json();
    let ws = pool["workspaces"].as_object().unwrap();
    assert_eq!(ws.len(), 4);
    let mut labels: Vec<&str> = ws.values().map(|s| s["task"].as_str().unwrap()).collect();
    labels.sort();
    labels.dedup();
    assert_eq!(
        labels.len(),
        4,
        "four distinct tasks hold the four workspaces"
    );
}

#[test]
fn parallel_acquire_release_loops_never_bind_one_workspace_twice() {
    let env = Arc::new(Env::new());
    env.add_project(&["--pool-size", "3"]);
    env.ok(&["workspace", "init"]);
    let leases = env.root().join("leases");
    std::fs::create_dir_all(&leases).unwrap();
    let workers = 6;
    let rounds = 6;
    let handles: Vec<_> = (0..workers)
        .map(|w| {
            let env = env.clone();
            let leases = leases.clone();
            std::thread::spawn(move || {
                let mut held = vec![];
                for r in 0..rounds {
                    let label = format!("w{w}-r{r}");
                    let (ok, v) =
                        env.json(&["workspace", "acquire", "--task", &label, "--wait", "120s"]);
                    assert!(ok, "{v}");
                    let name = v["name"].as_str().unwrap().to_string();
                    assert_eq!(v["task"], label.as_str());
                    // Exclusive lease: if another worker holds this workspace, create_new fails.
                    let lease = leases.join(&name);
                    OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(&lease)
                        .unwrap_or_else(|e| panic!("{name} bound twice ({label}): {e}"));
                    std::fs::write(env.ws_path(&name).join(format!("scratch-{w}.txt")), "work")
                        .unwrap();
                    std::thread::sleep(Duration::from_millis(5));
                    std::fs::remove_file(&lease).unwrap();
                    let (ok, v) = env.json(&["workspace", "release", &name, "--force"]);
                    assert!(ok, "{v}");
                    held.push(name);
                }
                held
            })
        })
        .collect();
    let mut total = 0;
    for h in handles {
        total += h.join().expect("worker panicked").len();
    }
    assert_eq!(total, workers * rounds);
    let pool = env.pool_json();
    let ws = pool["workspaces"].as_object().unwrap();
    assert_eq!(ws.len(), 3, "the pool never grew past its size");
    assert!(ws.values().all(|s| s["status"] == "available"));
    let acquires = env
        .audit_ops()
        .iter()
        .filter(|l| l["op"] == "workspace.acquire" && l["ok"] == true)
        .count();
    assert_eq!(acquires, workers * rounds);
}

#[test]
fn sigkill_during_a_slow_setup_leaves_a_usable_state_and_a_free_lock() {
    let env = Env::new();
    env.add_project(&[
        "--pool-size",
        "2",
        "--setup-cmd",
        "echo $$ > ../setup.pid; touch setup-started; exec sleep 30",
    ]);
    let mut child = env
        .cmd(&["workspace", "acquire", "--task", "doomed", "--json"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let marker = env.ws_path("app--1").join("setup-started");
    wait_until(
        "the setup command to start",
        Duration::from_secs(20),
        || marker.exists(),
    );
    assert_eq!(
        env.pool_json()["workspaces"]["app--1"]["status"],
        "creating"
    );
    // SIGKILL orange while it holds the pool lock, then its orphaned setup command.
    child.kill().unwrap();
    child.wait().unwrap();
    let setup_pid = std::fs::read_to_string(env.home.join("workspaces/setup.pid")).unwrap();
    let _ = std::process::Command::new("kill")
        .args(["-KILL", setup_pid.trim()])
        .status();

    // The next commands work at once: the lock is free (a short lock timeout proves it)
    // and the half-made slot is healed.
    env.ok(&["project", "update", "--setup-cmd", "true"]);
    let mut cmd = env.cmd(&["workspace", "acquire", "--task", "next", "--json"]);
    cmd.env("ORANGE_LOCK_TIMEOUT", "2s");
    let out = cmd.output().unwrap();
    let (ok, v) = parse_json_output(&["acquire"], &out);
    assert!(ok, "{v}");
    let pool = env.pool_json();
    assert!(
        pool["workspaces"]
            .as_object()
            .unwrap()
            .values()
            .all(|s| s["status"] != "creating"),
        "{pool}"
    );
    assert_eq!(v["task"], "next");
    let path = std::path::PathBuf::from(v["path"].as_str().unwrap());
    assert!(path.join("README.md").exists());
    assert_eq!(common::git(&path, &["status", "--porcelain"]), "");
    // No worktree record of the killed attempt survives in git.
    let listed = common::git(&env.repo, &["worktree", "list", "--porcelain"]);
    assert_eq!(listed.matches("worktree ").count(), 2, "{listed}");
}

#[test]
fn a_held_lock_times_out_with_lock_timeout() {
    let env = Env::new();
    env.add_project(&[]);
    env.ok(&["workspace", "init"]);
    let lock = OpenOptions::new()
        .write(true)
        .open(env.home.join("workspaces/.pool.lock"))
        .unwrap();
    lock.lock().unwrap();
    let mut cmd = env.cmd(&["workspace", "acquire", "--task", "x", "--json"]);
    cmd.env("ORANGE_LOCK_TIMEOUT", "300ms");
    let out = cmd.output().unwrap();
    let (ok, v) = parse_json_output(&["acquire"], &out);
    assert!(!ok);
    assert_eq!(v["error"]["code"], "lock_timeout", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains(".pool.lock"),
        "{v}"
    );
    lock.unlock().unwrap();
    env.ok(&["workspace", "acquire", "--task", "x"]);
}
