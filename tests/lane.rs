//! Lanes (seed 001) against real git and a real tmux server with a hostile config
//! (base-index 1, pane-base-index 1, custom status-right); zellij when it is on PATH.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::sync::Arc;

use common::{git, wait_for, TaskEnv};
use serde_json::Value;

fn create(env: &TaskEnv, task: &str, harness: &str, extra: &[&str]) -> Value {
    let mut a = vec!["lane", "create", "--task-id", task, "--harness", harness];
    a.extend_from_slice(extra);
    env.ok(&a)
}

fn lane_id(v: &Value) -> String {
    v["lane"]["lane_id"].as_str().unwrap().to_string()
}

fn wait_state(env: &TaskEnv, id: &str, state: &str) -> Value {
    let mut last = Value::Null;
    wait_for(&format!("lane {id} to be {state}"), 20, || {
        last = env.ok(&["lane", "status", id]);
        last["state"] == state
    });
    last
}

/// Pretend a lane has been idle for `hours` (its last activity moved back).
fn backdate(env: &TaskEnv, id: &str, hours: i64) {
    let file = env.home.join("lanes/registry.json");
    let mut reg: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let t = chrono::Utc::now() - chrono::Duration::hours(hours);
    reg["lanes"][id]["last_activity_at"] =
        Value::String(t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    std::fs::write(&file, serde_json::to_string_pretty(&reg).unwrap()).unwrap();
}

#[test]
fn lanes_run_concurrently_in_separate_worktrees_with_hints() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let a = create(&env, "TASK-1 fix login", "fake-wait", &[]);
    let b = create(&env, "TASK-2", "fake-wait", &[]);
    for v in [&a, &b] {
        assert_eq!(v["lane"]["state"], "running");
        assert_eq!(v["lane"]["mux_backend"], "tmux");
        let id = lane_id(v);
        assert_eq!(v["lane"]["branch_name"], format!("lane/{id}"));
        assert_eq!(
            v["lane"]["session_id"].as_str().unwrap().len(),
            36,
            "a fresh session id"
        );
        let wt = std::path::PathBuf::from(v["lane"]["worktree_path"].as_str().unwrap());
        assert!(wt.join("README.md").exists());
        assert_eq!(
            git(&wt, &["rev-parse", "--abbrev-ref", "HEAD"]),
            format!("lane/{id}")
        );
        assert!(
            v["hints"]["attach"]
                .as_str()
                .unwrap()
                .contains("attach-session"),
            "{v}"
        );
        assert!(
            v["hints"]["attach"]
                .as_str()
                .unwrap()
                .contains(&env.tmux.socket),
            "the hint names our server: {v}"
        );
        assert_eq!(v["hints"]["status"], format!("orange lane status {id}"));
        assert_eq!(v["hints"]["close"], format!("orange lane close {id}"));
        assert!(v["hints"]["worktree"].as_str().unwrap().starts_with("cd "));
    }
    assert!(
        a["lane"]["worktree_path"]
            .as_str()
            .unwrap()
            .contains("task-1-fix-login-"),
        "{a}"
    );
    assert_ne!(a["lane"]["worktree_path"], b["lane"]["worktree_path"]);
    let list = env.ok(&["lane", "list"]);
    assert_eq!(list.as_array().unwrap().len(), 2);
    // Both agents really run (base-index 1 did not break the launch).
    for v in [&a, &b] {
        let s = env.ok(&["lane", "status", &lane_id(v)]);
        assert_eq!(s["backend"]["agent_running"], true, "{s}");
        env.agent_log(&lane_id(v), "cwd");
    }
    // The hint really attaches: run it from a terminal of an outer server.
    let outer = common::TmuxServer::start(&env.root(), &[]);
    let hint = a["hints"]["attach"].as_str().unwrap().to_string();
    outer.ok(&[
        "new-session",
        "-d",
        "-s",
        "term",
        "sh",
        "-c",
        &format!("unset TMUX; {hint}"),
    ]);
    let target = a["lane"]["mux_target"].as_str().unwrap().to_string();
    wait_for("a client on the lane's session", 10, || {
        env.tmux
            .ok(&["list-clients", "-F", "#{client_session}"])
            .lines()
            .any(|l| l == target)
    });
}

#[test]
fn state_follows_the_agent_exit() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let ok = create(&env, "ok", "fake-exit0", &[]);
    let bad = create(&env, "bad", "fake-fail", &[]);
    let fin = wait_state(&env, &lane_id(&ok), "finished");
    assert_eq!(fin["exit_status"], 0);
    assert!(fin.get("last_error").is_none(), "{fin}");
    let err = wait_state(&env, &lane_id(&bad), "error");
    assert_eq!(err["last_error"], "agent exited with status 3");
    assert_eq!(
        err["backend"]["session_exists"], true,
        "the pane stays for reading"
    );
    // A killed agent is an error too.
    let k = create(&env, "killed", "fake-wait", &[]);
    let target = k["lane"]["mux_target"].as_str().unwrap().to_string();
    wait_for("the agent to start", 10, || {
        env.ok(&["lane", "status", &lane_id(&k)])["backend"]["agent_running"] == true
    });
    let pid = env
        .tmux
        .ok(&["display", "-p", "-t", &format!("={target}:"), "#{pane_pid}"]);
    std::process::Command::new("kill")
        .args(["-9", &pid])
        .status()
        .unwrap();
    let e = wait_state(&env, &lane_id(&k), "error");
    assert!(
        e["last_error"].as_str().unwrap().contains("signal 9"),
        "{e}"
    );
}

#[test]
fn seed_context_with_quotes_and_newlines_reaches_the_agent_intact() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let seed = "Fix \"it\" and 'that'\n$(touch pwned) `id`; done;\nthird line";
    let v = create(&env, "seeded", "fake-wait", &["--seed-context", seed]);
    let id = lane_id(&v);
    assert_eq!(env.agent_log(&id, "prompt"), seed);
    let wt = std::path::PathBuf::from(v["lane"]["worktree_path"].as_str().unwrap());
    assert!(!wt.join("pwned").exists() && !env.repo.join("pwned").exists());
    let envs = env.agent_log(&id, "env");
    assert!(envs.contains(&format!("ORANGE_LANE_ID={id}")), "{envs}");
}

#[test]
fn a_missing_backend_is_reported_before_anything_is_created() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    // A PATH with git and sh but neither tmux nor zellij.
    let bin = env.root().join("bare-bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["git", "sh"] {
        let real = String::from_utf8(
            std::process::Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap();
        std::os::unix::fs::symlink(real.trim(), bin.join(tool)).unwrap();
    }
    for mux in ["tmux", "zellij"] {
        let mut c = env.cmd_in(
            &env.repo,
            &[
                "lane",
                "create",
                "--task-id",
                "t",
                "--mux",
                mux,
                "--harness",
                "fake-wait",
                "--json",
            ],
        );
        c.env("PATH", &bin);
        let out = c.output().unwrap();
        let (ok, v) = common::parse_json_output(&["lane create"], &out);
        assert!(!ok);
        assert_eq!(v["error"]["code"], "backend_not_found", "{mux}: {v}");
        assert!(v["error"]["message"].as_str().unwrap().contains(mux), "{v}");
    }
    assert!(
        !env.home.join("lanes/registry.json").exists(),
        "no registry record"
    );
    assert_eq!(
        git(&env.repo, &["branch", "--list", "lane/*"]),
        "",
        "no branch"
    );
    assert_eq!(
        git(&env.repo, &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1,
        "no worktree"
    );
    // A blank task id: nothing either.
    env.err(
        &[
            "lane",
            "create",
            "--task-id",
            "  ",
            "--harness",
            "fake-wait",
        ],
        "invalid_argument",
    );
    assert!(!env.home.join("lanes/registry.json").exists());
    let ops: Vec<Value> = env.audit_ops();
    assert!(ops
        .iter()
        .all(|l| l["op"] != "lane.create" || l["ok"] == false));
}

#[test]
fn close_guards_running_lanes_and_dirty_worktrees_and_is_idempotent() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let v = create(&env, "c", "fake-wait", &[]);
    let id = lane_id(&v);
    let wt = std::path::PathBuf::from(v["lane"]["worktree_path"].as_str().unwrap());
    env.err(&["lane", "close", &id], "lane_running");
    assert_eq!(env.ok(&["lane", "status", &id])["state"], "running");
    // Without --json, words (it once printed its backend as raw JSON with a Unix time).
    let out = env
        .cmd_in(&env.repo, &["lane", "status", &id])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("live, agent running"), "{text}");
    assert!(
        !text.contains('{') && !text.contains("last_activity"),
        "{text}"
    );
    std::fs::write(wt.join("wip.txt"), "unsaved").unwrap();
    env.tmux.ok(&[
        "send-keys",
        "-t",
        &format!("={}:", v["lane"]["mux_target"].as_str().unwrap()),
        "C-d",
    ]);
    wait_state(&env, &id, "finished");
    let m = env.err(&["lane", "close", &id], "worktree_dirty");
    assert!(m.contains("wip.txt"), "{m}");
    assert!(wt.join("wip.txt").exists());
    let closed = env.ok(&["lane", "close", &id, "--keep-worktree"]);
    assert_eq!(closed["state"], "closed");
    assert!(wt.join("wip.txt").exists(), "--keep-worktree keeps it");
    assert!(!env
        .tmux
        .has_session(v["lane"]["mux_target"].as_str().unwrap()));
    // Closing a closed lane returns it unchanged.
    let again = env.ok(&["lane", "close", &id]);
    assert_eq!(again, closed);
    assert_eq!(env.ok(&["lane", "list"]).as_array().unwrap().len(), 0);
    assert_eq!(
        env.ok(&["lane", "list", "--include-closed"])
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // A running lane with --force: session killed, clean worktree removed, branch kept.
    let f = create(&env, "forced", "fake-wait", &[]);
    let fid = lane_id(&f);
    let fwt = std::path::PathBuf::from(f["lane"]["worktree_path"].as_str().unwrap());
    let r = env.ok(&["lane", "close", &fid, "--force"]);
    assert_eq!(r["state"], "closed");
    assert_eq!(r["worktree_removed"], true);
    assert!(!fwt.exists());
    assert_eq!(
        git(&env.repo, &["branch", "--list", &format!("lane/{fid}")])
            .trim_start_matches("* ")
            .trim(),
        format!("lane/{fid}")
    );
    env.err(&["lane", "close", "nope"], "lane_not_found");
    env.err(&["lane", "status", "nope"], "lane_not_found");
    let ops: Vec<String> = env
        .audit_ops()
        .iter()
        .map(|l| l["op"].as_str().unwrap().to_string())
        .collect();
    assert!(
        ops.iter().filter(|o| *o == "lane.close").count() >= 4,
        "{ops:?}"
    );
}

#[test]
fn gc_closes_exactly_the_stale_finished_and_error_lanes() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let running = lane_id(&create(&env, "running", "fake-wait", &[]));
    let fresh = lane_id(&create(&env, "fresh-finished", "fake-exit0", &[]));
    let stale_fin = lane_id(&create(&env, "stale-finished", "fake-exit0", &[]));
    let stale_err = lane_id(&create(&env, "stale-error", "fake-fail", &[]));
    let closed = lane_id(&create(&env, "closed", "fake-exit0", &[]));
    for id in [&fresh, &stale_fin, &closed] {
        wait_state(&env, id, "finished");
    }
    wait_state(&env, &stale_err, "error");
    env.ok(&["lane", "close", &closed]);
    backdate(&env, &stale_fin, 5);
    backdate(&env, &stale_err, 5);
    backdate(&env, &running, 5); // idle for long, but running: never touched
    let r = env.ok(&["lane", "gc", "--idle-ttl", "1h"]);
    assert_eq!(r["checked"], 4, "{r}");
    let mut closed_ids: Vec<String> = r["closed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    closed_ids.sort();
    let mut want = vec![stale_fin.clone(), stale_err.clone()];
    want.sort();
    assert_eq!(closed_ids, want);
    assert_eq!(r["skipped"].as_array().unwrap().len(), 2);
    assert_eq!(r["errors"].as_array().unwrap().len(), 0);
    assert_eq!(env.ok(&["lane", "status", &running])["state"], "running");
    assert_eq!(env.ok(&["lane", "status", &fresh])["state"], "finished");
    // Worktrees are kept unless asked.
    let s = env.ok(&["lane", "status", &stale_fin]);
    assert!(std::path::Path::new(s["worktree_path"].as_str().unwrap()).exists());
    assert_eq!(s["worktree_removed"], false);
    env.err(&["lane", "gc", "--idle-ttl", "soon"], "invalid_argument");
    // --force never closes a running lane, and its help says so.
    let forced = env.ok(&["lane", "gc", "--idle-ttl", "1h", "--force"]);
    assert_eq!(forced["closed"].as_array().unwrap().len(), 0, "{forced}");
    assert_eq!(env.ok(&["lane", "status", &running])["state"], "running");
    let help = env.cmd(&["lane", "gc", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(!help.contains("running lanes too"), "{help}");
    assert!(help.contains("never closes a running lane"), "{help}");
}

#[test]
fn gc_with_remove_worktree_reports_a_dirty_lane_and_still_processes_the_others() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let dirty = create(&env, "dirty", "fake-exit0", &[]);
    let clean = create(&env, "clean", "fake-exit0", &[]);
    let (d, c) = (lane_id(&dirty), lane_id(&clean));
    wait_state(&env, &d, "finished");
    wait_state(&env, &c, "finished");
    let dwt = std::path::PathBuf::from(dirty["lane"]["worktree_path"].as_str().unwrap());
    let cwt = std::path::PathBuf::from(clean["lane"]["worktree_path"].as_str().unwrap());
    std::fs::write(dwt.join("unsaved.txt"), "keep me").unwrap();
    backdate(&env, &d, 3);
    backdate(&env, &c, 3);
    let r = env.ok(&["lane", "gc", "--idle-ttl", "2h", "--remove-worktree"]);
    assert_eq!(r["closed"], serde_json::json!([c]));
    assert_eq!(r["errors"][0]["lane_id"], d.as_str());
    assert_eq!(r["errors"][0]["code"], "worktree_dirty");
    assert_eq!(
        std::fs::read_to_string(dwt.join("unsaved.txt")).unwrap(),
        "keep me"
    );
    assert!(!cwt.exists(), "the clean one's worktree was removed");
    // Forced: the dirty one goes too.
    let r = env.ok(&[
        "lane",
        "gc",
        "--idle-ttl",
        "2h",
        "--remove-worktree",
        "--force",
    ]);
    assert_eq!(r["closed"], serde_json::json!([d]));
    assert!(!dwt.exists());
    let gcs = env
        .audit_ops()
        .iter()
        .filter(|l| l["op"] == "lane.gc")
        .count();
    assert_eq!(gcs, 2);
}

#[test]
fn concurrent_creates_keep_every_record() {
    let env = Arc::new(TaskEnv::new());
    env.add_project(&[]);
    let handles: Vec<_> = (0..6)
        .map(|i| {
            let env = env.clone();
            std::thread::spawn(move || {
                let task = format!("par-{i}");
                let (ok, v) = env.json(&[
                    "lane",
                    "create",
                    "--task-id",
                    &task,
                    "--harness",
                    "fake-exit0",
                ]);
                assert!(ok, "{v}");
                lane_id(&v)
            })
        })
        .collect();
    let mut ids: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 6);
    let reg: Value = serde_json::from_str(
        &std::fs::read_to_string(env.home.join("lanes/registry.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(reg["lanes"].as_object().unwrap().len(), 6);
}

#[test]
fn a_corrupt_registry_is_reported_and_kept() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    create(&env, "x", "fake-exit0", &[]);
    let file = env.home.join("lanes/registry.json");
    std::fs::write(&file, "{\"lanes\": [").unwrap();
    let m = env.err(&["lane", "list"], "state_corrupt");
    assert!(m.contains(file.to_str().unwrap()), "{m}");
    env.err(
        &[
            "lane",
            "create",
            "--task-id",
            "y",
            "--harness",
            "fake-exit0",
        ],
        "state_corrupt",
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{\"lanes\": [");
}

#[test]
fn a_zellij_lane_runs_reports_its_exit_and_closes() {
    if !common::require(
        "zellij",
        orange::adapters::zellij::Zellij::default().is_available(),
        "a lane with --mux zellij runs in a real zellij",
    ) {
        return;
    }
    let env = TaskEnv::new();
    env.add_project(&[]);
    let v = create(
        &env,
        "zj",
        "fake-fail",
        &["--mux", "zellij", "--seed-context", "seed \"q\""],
    );
    let id = lane_id(&v);
    assert_eq!(v["lane"]["mux_backend"], "zellij");
    assert!(
        v["hints"]["attach"]
            .as_str()
            .unwrap()
            .contains("zellij attach"),
        "{v}"
    );
    assert_eq!(env.agent_log(&id, "prompt"), "seed \"q\"");
    let e = wait_state(&env, &id, "error");
    assert_eq!(e["last_error"], "agent exited with status 3");
    let c = env.ok(&["lane", "close", &id, "--force"]);
    assert_eq!(c["state"], "closed");
    assert!(!orange::adapters::zellij::Zellij::default()
        .exists(v["lane"]["mux_target"].as_str().unwrap())
        .unwrap());
}

#[test]
fn gc_never_removes_a_worktree_with_unpushed_commits_or_a_process_in_it_unless_forced() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let committed = create(&env, "committed", "fake-fail", &[]); // commits, never pushes
    let busy = create(&env, "busy", "fake-exit0", &[]);
    let (c, b) = (lane_id(&committed), lane_id(&busy));
    wait_state(&env, &c, "error");
    wait_state(&env, &b, "finished");
    let bwt = std::path::PathBuf::from(busy["lane"]["worktree_path"].as_str().unwrap());
    let cwt = std::path::PathBuf::from(committed["lane"]["worktree_path"].as_str().unwrap());
    // A user's shell (any process) working in the lane's worktree.
    let mut sleeper = std::process::Command::new("sleep")
        .arg("60")
        .current_dir(&bwt)
        .spawn()
        .unwrap();
    backdate(&env, &c, 3);
    backdate(&env, &b, 3);
    let dry = env.ok(&[
        "lane",
        "gc",
        "--idle-ttl",
        "1h",
        "--remove-worktree",
        "--dry-run",
    ]);
    assert_eq!(dry["closed"].as_array().unwrap().len(), 0, "{dry}");
    let r = env.ok(&["lane", "gc", "--idle-ttl", "1h", "--remove-worktree"]);
    assert_eq!(r["closed"].as_array().unwrap().len(), 0, "{r}");
    let reasons: Vec<String> = r["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["reason"].as_str().unwrap().to_string())
        .collect();
    assert!(
        reasons.iter().any(|r| r.contains("not pushed")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains(&format!("pid {}", sleeper.id()))),
        "{reasons:?}"
    );
    assert!(bwt.exists() && cwt.exists());
    // Without --remove-worktree the lanes close and the worktrees stay: nothing at risk.
    let dry = env.ok(&["lane", "gc", "--idle-ttl", "1h", "--dry-run"]);
    assert_eq!(dry["closed"].as_array().unwrap().len(), 2, "{dry}");
    assert_eq!(
        env.ok(&["lane", "status", &c])["state"],
        "error",
        "a dry run changes nothing"
    );
    let forced = env.ok(&[
        "lane",
        "gc",
        "--idle-ttl",
        "1h",
        "--remove-worktree",
        "--force",
    ]);
    assert_eq!(forced["closed"].as_array().unwrap().len(), 2, "{forced}");
    assert!(!cwt.exists());
    let _ = sleeper.kill();
    let _ = sleeper.wait();
}

#[test]
fn lanes_appear_in_the_status_counts() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let run = create(&env, "counted-running", "fake-wait", &[]);
    let fin = create(&env, "counted-finished", "fake-exit0", &[]);
    wait_state(&env, &lane_id(&fin), "finished");
    wait_for("the running lane's agent", 10, || {
        env.ok(&["lane", "status", &lane_id(&run)])["backend"]["agent_running"] == true
    });
    let s = env.ok(&["status", "--format", "json"]);
    assert_eq!(s["lanes"]["working"], 1, "{s}");
    assert_eq!(s["lanes"]["review"], 1, "{s}");
    let items: Vec<&Value> = s["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "lane")
        .collect();
    assert_eq!(items.len(), 2, "{s}");
    env.ok(&["lane", "close", &lane_id(&fin)]);
    let s = env.ok(&["status", "--format", "json"]);
    assert_eq!(s["lanes"]["review"], 0, "a closed lane is not counted: {s}");
}

#[test]
fn a_lane_is_viewed_with_the_sidebar_like_a_task() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let v = create(&env, "viewed", "fake-fail", &[]); // commits work-<lane>.txt, exits 3
    let id = lane_id(&v);
    wait_state(&env, &id, "error");
    let wt = std::path::PathBuf::from(v["lane"]["worktree_path"].as_str().unwrap());
    std::fs::write(wt.join("uncommitted.txt"), "u").unwrap();
    let out = env
        .cmd_in(
            &env.repo,
            &["sidebar", "--lane", &id, "--once", "--width", "40"],
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let frame = String::from_utf8(out.stdout).unwrap();
    assert!(frame.starts_with(&format!("app/lane/{id}")), "{frame}");
    assert!(
        frame.contains(&format!("work-{id}.txt")),
        "the committed file: {frame}"
    );
    assert!(
        frame.contains("uncommitted.txt"),
        "the worktree's own changes: {frame}"
    );
    assert!(frame.contains("✗"), "the agent exited: {frame}");
    env.err(&["sidebar", "--lane", "nope", "--once"], "lane_not_found");
}

/// An agent that writes the environment it was started with to `.agent-env` in its
/// worktree, and whether it could write into the main checkout (`$1`) to `.agent-escape`,
/// then waits. Committed in the repository: a sandbox shows it to the agent.
const ENVDUMP: &str = r#"#!/bin/sh
env | sort > .agent-env.tmp && mv .agent-env.tmp .agent-env
if (echo x > "$1/escape.txt") 2>/dev/null; then echo escaped; else echo refused; fi > .agent-escape.tmp
mv .agent-escape.tmp .agent-escape
exec sleep 600
"#;

/// The `envdump` harness (see [`ENVDUMP`]) in the repository and config.toml, with `more`
/// lines in its table.
fn envdump_harness(env: &TaskEnv, more: &str) {
    std::fs::write(env.repo.join("envdump.sh"), ENVDUMP).unwrap();
    git(&env.repo, &["add", "envdump.sh"]);
    git(&env.repo, &["commit", "-qm", "envdump"]);
    git(&env.repo, &["push", "-q", "origin", "HEAD"]);
    env.append_config(&format!(
        "[harness.envdump]\ncommand = \"sh ./envdump.sh '{}'\"\n{more}",
        env.repo.display()
    ));
}

/// The environment an `envdump` agent in `dir` was started with.
fn agent_env(dir: &std::path::Path) -> std::collections::BTreeMap<String, String> {
    let file = dir.join(".agent-env");
    wait_for(&format!("{}", file.display()), 20, || file.exists());
    std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_lane_agent_gets_the_environment_of_a_task_agent() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    envdump_harness(&env, "");
    let task = env.create(&["env-task", "x", "--harness", "envdump"]);
    let t = agent_env(&env.ws_path(task["workspace"].as_str().unwrap()));
    let v = create(&env, "env-lane", "envdump", &[]);
    let id = lane_id(&v);
    let l = agent_env(std::path::Path::new(
        v["lane"]["worktree_path"].as_str().unwrap(),
    ));
    let get = |k: &str| l.get(k).cloned().unwrap_or_default();
    assert_eq!(get("ORANGE_LANE_ID"), id);
    assert!(!l.contains_key("ORANGE_TASK_ID"), "{l:?}");
    assert_eq!(get("ORANGE_BRANCH"), format!("lane/{id}"), "{l:?}");
    assert_eq!(get("ORANGE_TMUX_SOCKET"), env.tmux.socket, "{l:?}");
    // Every ORANGE_ variable a task's agent gets, a lane's gets too, but those that name
    // a task or its pooled workspace (a lane's worktree is its own).
    let task_only = [
        "ORANGE_TASK_ID",
        "ORANGE_WORKSPACE_NAME",
        "ORANGE_WORKSPACE_INDEX",
        "ORANGE_PORT",
    ];
    for k in t.keys().filter(|k| k.starts_with("ORANGE_")) {
        if !task_only.contains(&k.as_str()) {
            assert!(l.contains_key(k), "the lane's agent lacks {k}: {l:?}");
        }
    }
    // This very orange comes first on both agents' PATH (their hooks call it).
    for e in [&t, &l] {
        let bin_dir = std::path::Path::new(&e["ORANGE_BIN"]).parent().unwrap();
        assert!(
            e["PATH"].starts_with(&format!("{}:", bin_dir.display())),
            "{e:?}"
        );
    }
}

#[test]
fn a_lane_agent_runs_in_the_sandbox_a_task_agent_would() {
    if !crate::sandbox::bwrap_usable() {
        return;
    }
    let env = TaskEnv::new();
    env.add_project(&[]);
    envdump_harness(&env, "sandbox = \"bwrap\"\n");
    let v = create(&env, "boxed-lane", "envdump", &[]);
    let wt = std::path::PathBuf::from(v["lane"]["worktree_path"].as_str().unwrap());
    let l = agent_env(&wt);
    assert_eq!(l.get("ORANGE_SANDBOX").map(String::as_str), Some("bwrap"));
    let escape = wt.join(".agent-escape");
    wait_for("the agent's escape attempt", 20, || escape.exists());
    assert_eq!(std::fs::read_to_string(&escape).unwrap().trim(), "refused");
    assert!(!env.repo.join("escape.txt").exists());
}
