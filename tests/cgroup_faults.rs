//! A cgroup that cannot be made is a clear error before anything is recorded (issue 28,
//! part 5), on the real kernel's cgroups (v1 here, as root; skipped where orange's
//! mechanism is another). No test-only knob: `pids.max` above the kernel's PID_MAX_LIMIT
//! (4194304 on 64-bit) is refused by the kernel itself (EINVAL). Also: a probe left by a
//! kill is swept, a sweep never removes the cgroup of a task recorded after it read the
//! tasks, and a failed join (the agent never started) is told apart from an agent that
//! exits 125 itself.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use serde_json::Value;

use crate::common::{self, TaskEnv};
use crate::resources::{own_v1, v1_here, CgroupGuard};

/// Above the kernel's PID_MAX_LIMIT: the kernel refuses it as a `pids.max`.
const TOO_MANY: &str = "5000000";

/// A project, and what removes the home's cgroups at the end (`None`: no cgroup v1 here).
fn setup() -> Option<(TaskEnv, CgroupGuard)> {
    if !v1_here() {
        eprintln!("skipped: orange's mechanism here is not a writable cgroup v1");
        return None;
    }
    let env = TaskEnv::new();
    env.add_project(&[]);
    let guard = CgroupGuard(env.home.clone());
    Some((env, guard))
}

/// Every cgroup of `env`'s orange home in the v1 hierarchies (its tasks' and probes').
fn cgroups_of(env: &TaskEnv) -> Vec<PathBuf> {
    let suffix = orange::execution::resources::cgroup_name(&env.home, "");
    let mut out: Vec<PathBuf> = ["memory", "cpu", "cpuacct", "pids"]
        .iter()
        .filter_map(|c| own_v1(c))
        .flat_map(|d| std::fs::read_dir(d.join("orange")).into_iter().flatten())
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(&suffix))
        .map(|e| e.path())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The name of a cgroup directory.
fn name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

/// `orange ARGS` as text (no `--json`).
fn text(env: &TaskEnv, args: &[&str]) -> String {
    let out = env.cmd_in(&env.repo, args).output().unwrap();
    common::strip_styles(&String::from_utf8_lossy(&out.stdout))
}

/// `task create BRANCH` (fake-wait, `--pids 64`) paused once its task is recorded and its
/// cgroup made, before its agent starts (`pause`: the fault points' directory).
fn create_paused(env: &TaskEnv, branch: &str, pause: &Path) -> Child {
    let args = ["task", "create", branch, "x", "--harness", "fake-wait"];
    let creating = env
        .cmd_in(&env.repo, &args)
        .args(["--pids", "64", "--json"])
        .env("ORANGE_PAUSE_AT", "launch.cgroup_made")
        .env("ORANGE_PAUSE_DIR", pause)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    common::wait_for("the create to pause with its cgroup made", 20, || {
        pause.join("launch.cgroup_made.paused").exists()
    });
    creating
}

/// A create [`create_paused`] goes on: the task it made.
fn go_on(creating: Child, pause: &Path) -> Value {
    std::fs::write(pause.join("launch.cgroup_made.go"), "").unwrap();
    let out = creating.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_limit_the_kernel_refuses_is_an_error_before_anything_is_recorded() {
    let Some((env, _cgroups)) = setup() else {
        return;
    };
    let branches = || common::git(&env.repo, &["branch", "--list"]);
    let pool = || std::fs::read(env.home.join("workspaces/.pool.json")).ok();
    let (branches_before, pool_before) = (branches(), pool());
    for no_spawn in [false, true] {
        let mut args = vec!["task", "create", "refused", "x", "--harness", "fake-wait"];
        args.extend(["--pids", TOO_MANY]);
        if no_spawn {
            args.push("--no-spawn");
        }
        let msg = env.err(&args, "cgroup_failed");
        assert!(
            msg.starts_with("the agent's cgroup cannot be made: writing 5000000 to ")
                && msg.contains("/pids.max: Invalid argument"),
            "{msg}"
        );
        assert!(msg.contains("lower or remove the limit"), "{msg}");
        assert!(msg.contains("`orange doctor`'s resources line"), "{msg}");
    }
    // A group (`--n 2`) is refused whole: no record, no member.
    env.err(
        &[
            "task",
            "create",
            "grp",
            "x",
            "--n",
            "2",
            "--harness",
            "fake-wait",
            "--pids",
            TOO_MANY,
        ],
        "cgroup_failed",
    );
    let list = env.ok(&["task", "list"]);
    assert_eq!(list.as_array().map(Vec::len), Some(0), "{list}");
    let groups = std::fs::read_dir(env.home.join("tasks/app/.groups"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(groups, 0, "no group recorded");
    assert_eq!(branches(), branches_before, "no branch made");
    assert_eq!(pool(), pool_before, "the pool unchanged");
    assert_eq!(env.tmux.sessions(), ["keepalive"], "no session");
    assert_eq!(cgroups_of(&env), Vec::<PathBuf>::new(), "no cgroup left");

    // A respawn with such a limit: refused before anything changed, its agent left alive.
    let t = env.create(&["kept", "x", "--harness", "fake-wait", "--pids", "64"]);
    let id = common::id(&t);
    let before = env.wait_session(&id, "live");
    env.err(
        &[
            "task", "respawn", &id, "--pids", TOO_MANY, "--force", "--yes",
        ],
        "cgroup_failed",
    );
    let after = env.task(&id);
    assert_eq!(after["limits"]["pids"], 64, "{after}");
    assert_eq!(after["session"]["state"], "live", "{after}");
    assert_eq!(after["tmux_session_id"], before["tmux_session_id"]);
    assert_eq!(after["history"], before["history"], "nothing recorded");
    let own = orange::execution::resources::cgroup_name(&env.home, &id);
    let left: Vec<String> = cgroups_of(&env).iter().map(|p| name(p)).collect();
    assert!(left.iter().all(|n| *n == own), "no probe left: {left:?}");
}

#[test]
fn a_cgroup_left_by_a_kill_before_recording_is_swept() {
    let Some((env, _cgroups)) = setup() else {
        return;
    };
    // Killed once the probe is made with the limits, before it is removed.
    let out = env
        .cmd_in(
            &env.repo,
            &[
                "task",
                "create",
                "killed",
                "x",
                "--harness",
                "fake-wait",
                "--pids",
                "64",
                "--no-spawn",
            ],
        )
        .env("ORANGE_CRASH_AT", "cgroup.proved")
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    let list = env.ok(&["task", "list"]);
    assert_eq!(
        list.as_array().map(Vec::len),
        Some(0),
        "nothing recorded: {list}"
    );
    let left = cgroups_of(&env);
    assert!(
        !left.is_empty() && left.iter().all(|p| name(p).starts_with("probe-")),
        "the probe is left: {left:?}"
    );
    let pids = own_v1("pids").unwrap();
    let probe = left.iter().find(|p| p.starts_with(&pids)).unwrap();
    let max = std::fs::read_to_string(probe.join("pids.max")).unwrap();
    assert_eq!(max.trim(), "64", "made with its limit");
    // A probe whose process still lives (this test's own pid) is a create at work: left.
    let live =
        own_v1("memory")
            .unwrap()
            .join("orange")
            .join(orange::execution::resources::cgroup_name(
                &env.home,
                &format!("probe-{}", std::process::id()),
            ));
    std::fs::create_dir(&live).unwrap();
    env.ok(&["monitor", "--once"]);
    assert_eq!(cgroups_of(&env), [live], "the dead create's probe swept");
    let log = std::fs::read_to_string(env.home.join("orange.log")).unwrap_or_default();
    assert!(log.contains("agent cgroup removed"), "{log}");
}

#[test]
fn a_sweep_never_removes_the_cgroup_of_a_task_recorded_after_it_read_the_tasks() {
    let Some((env, _cgroups)) = setup() else {
        return;
    };
    let pause = tempfile::tempdir().unwrap();
    // A monitor pass has read the open tasks (none) and stops before its sweep.
    let monitor = env
        .cmd_in(&env.repo, &["monitor", "--once", "--json"])
        .env("ORANGE_PAUSE_AT", "monitor.sweeping")
        .env("ORANGE_PAUSE_DIR", pause.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    common::wait_for("the pass to pause before its sweep", 20, || {
        pause.path().join("monitor.sweeping.paused").exists()
    });
    // A task is recorded and its cgroup made; its agent has not joined it yet.
    let creating = create_paused(&env, "young", pause.path());
    assert!(!cgroups_of(&env).is_empty());
    std::fs::write(pause.path().join("monitor.sweeping.go"), "").unwrap();
    assert!(monitor.wait_with_output().unwrap().status.success());
    let created = go_on(creating, pause.path());
    let (id, session) = (
        common::id(&created),
        created["tmux_session"].as_str().unwrap(),
    );
    // Its agent joined the cgroup and runs (its step did not find the cgroup gone).
    let mut t = Value::Null;
    common::wait_for("the agent to run, or its session to end", 20, || {
        t = env.task(&id);
        t["session"]["state"] == "dead"
            || env
                .tmux
                .ok(&["capture-pane", "-p", "-t", session])
                .contains("waiting for input")
    });
    assert!(t.get("never_started").is_none(), "{t}");
    assert_eq!(t["session"]["state"], "live", "{t}");
    let dir = crate::resources::v1_dir(&env, "pids", &id).unwrap();
    let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap();
    assert!(!procs.trim().is_empty(), "the agent is in its cgroup");
}

#[test]
fn a_failed_cgroup_join_is_told_apart_from_an_agent_exiting_125() {
    let Some((env, _cgroups)) = setup() else {
        return;
    };
    let pause = tempfile::tempdir().unwrap();
    let creating = create_paused(&env, "unjoined", pause.path());
    // Its cgroup removed from under it before the agent joins (a person, a sweep).
    for d in cgroups_of(&env) {
        std::fs::remove_dir(&d).unwrap();
    }
    let id = common::id(&go_on(creating, pause.path()));
    let t = env.wait_session(&id, "dead");
    assert_eq!(t["session"]["exit_status"], 125, "{t}");
    let why = t["never_started"].as_str().unwrap_or_default().to_string();
    assert!(
        why.starts_with("the agent never started: joining its cgroup failed (writing its pid to ")
            && why.contains("/cgroup.procs: "),
        "{t}"
    );
    let explain = text(&env, &["task", "explain", &id]);
    assert!(explain.contains(&why), "{explain}");
    assert!(explain.contains("orange doctor"), "{explain}");
    assert_eq!(env.ok(&["task", "explain", &id])["never_started"], why);
    // The monitor: no crash counted, no respawn into the same failure; escalated once,
    // with what to do.
    common::wait_for("the monitor to record the death", 30, || {
        env.ok(&["monitor", "--once"]);
        !env.history_events(&id, "agent.exited").is_empty()
    });
    env.ok(&["monitor", "--once"]);
    let t = env.task(&id);
    assert_eq!(t["agent"]["detail"], why, "{t}");
    assert_eq!(t["crash_count"], 0, "{t}");
    assert!(env.history_events(&id, "agent.crashed").is_empty(), "{t}");
    assert!(env.history_events(&id, "agent.respawned").is_empty(), "{t}");
    let escalated = env.history_events(&id, "agent.escalated");
    assert_eq!(escalated.len(), 1, "{escalated:?}");
    let reason = escalated[0]["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with(&why), "{reason}");
    assert!(
        reason.contains("`orange doctor`'s resources line"),
        "{reason}"
    );
    assert!(
        reason.contains(&format!("orange task respawn {id}")),
        "{reason}"
    );

    // An agent that exits 125 itself, under the same limit: a plain exit and one crash,
    // even with a marker left from before in its directory.
    let quits = env.root().join("quits.sh");
    std::fs::write(&quits, "exit 125\n").unwrap();
    env.append_config(&format!(
        "[harness.quits]\ncommand = \"sh {} {{prompt}}\"\n",
        quits.display()
    ));
    let t = env.create(&[
        "quits",
        "x",
        "--harness",
        "quits",
        "--pids",
        "64",
        "--no-spawn",
    ]);
    let own = common::id(&t);
    let agent_dir = env.home.join("tasks/app").join(&own).join("agent");
    std::fs::create_dir_all(&agent_dir).unwrap();
    let stale = agent_dir.join("cgroup-join-failed");
    std::fs::write(&stale, "writing its pid to /old: left from before\n").unwrap();
    env.ok(&["task", "spawn", &own]);
    let t = env.wait_session(&own, "dead");
    assert_eq!(t["session"]["exit_status"], 125, "{t}");
    assert!(t.get("never_started").is_none(), "{t}");
    assert!(!stale.exists(), "the step removed the old marker");
    common::wait_for("the monitor to record the exit", 30, || {
        env.ok(&["monitor", "--once"]);
        !env.history_events(&own, "agent.exited").is_empty()
    });
    let t = env.task(&own);
    assert_eq!(t["crash_count"], 1, "{t}");
    assert_eq!(env.history_events(&own, "agent.crashed").len(), 1, "{t}");
    let detail = t["agent"]["detail"].as_str().unwrap_or_default();
    assert!(detail.starts_with("exited with status 125"), "{t}");
}
