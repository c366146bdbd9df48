//! Resource limits (`memory`, `cpu`, `pids`) per harness, per project and per task
//! (`task create --memory/--cpu/--pids`): recorded on the task, refused when bad before
//! anything is recorded, and enforced by the mechanism this machine has
//! (`orange doctor`'s `resources` line says which).

use crate::common::{self, TaskEnv};
use serde_json::Value;

/// A project, and config.toml with `hog`: a fake agent that takes `MB` megabytes and
/// holds them (or says it could not).
fn setup(extra: &str) -> (TaskEnv, String) {
    let env = TaskEnv::new();
    let p = env.add_project(&[]);
    let name = p["name"].as_str().unwrap().to_string();
    let hog = env.root().join("hog.sh");
    std::fs::write(
        &hog,
        "python3 -c 'import sys,time\ntry:\n    x = bytearray(200 << 20)\nexcept MemoryError:\n    print(\"hog: out of memory\"); sys.exit(3)\nprint(\"hog: holding 200M\"); time.sleep(600)'\n",
    )
    .unwrap();
    env.append_config(&format!(
        "[harness.hog]\ncommand = \"sh {} {{prompt}}\"\nmemory = \"1G\"\npids = 256\n{extra}",
        hog.display()
    ));
    (env, name)
}

#[test]
fn limits_from_flags_project_and_harness_are_recorded() {
    let (env, project) = setup("");
    env.append_config(&format!(
        "[project.{project}]\ncpu = 1.5\nmemory = \"2G\"\n"
    ));
    let t = env.create(&["lim", "x", "--harness", "hog", "--no-spawn"]);
    // The project's over the harness's; each field on its own.
    assert_eq!(t["limits"]["memory"], 2u64 << 30, "{t}");
    assert_eq!(t["limits"]["cpu"], 1.5, "{t}");
    assert_eq!(t["limits"]["pids"], 256, "{t}");
    let t = env.create(&[
        "lim2",
        "x",
        "--harness",
        "hog",
        "--no-spawn",
        "--memory",
        "512M",
        "--pids",
        "64",
    ]);
    assert_eq!(t["limits"]["memory"], 512u64 << 20, "{t}");
    assert_eq!(t["limits"]["pids"], 64, "{t}");
    assert_eq!(t["limits"]["cpu"], 1.5, "{t}");
    let created = env.history_events(&common::id(&t), "task.created");
    assert_eq!(created[0]["limits"]["memory"], 512u64 << 20, "{created:?}");
}

#[test]
fn bad_limits_are_refused_before_anything_is_recorded() {
    let (env, _) = setup("");
    for (flag, value, says) in [
        ("--memory", "4X", "unknown unit"),
        ("--memory", "1M", "at least 16M"),
        ("--cpu", "0", "cores above 0"),
        ("--pids", "2", "at least 8"),
    ] {
        let msg = env.err(
            &[
                "task",
                "create",
                "bad",
                "x",
                "--harness",
                "hog",
                flag,
                value,
            ],
            "invalid_argument",
        );
        assert!(msg.contains(says), "{flag} {value}: {msg}");
    }
    let list = env.ok(&["task", "list"]);
    assert_eq!(list.as_array().map(Vec::len), Some(0), "{list}");
    assert!(!env.tmux.has_session("bad"), "no agent started");
    // A bad value in config.toml: every command says where.
    env.append_config("[harness.other]\ncommand = \"true\"\nmemory = \"lots\"\n");
    let msg = env.err(&["task", "list"], "state_corrupt");
    assert!(msg.contains("[harness.other] memory \"lots\""), "{msg}");
}

#[test]
fn doctor_says_which_mechanism_is_in_force() {
    let (env, _) = setup("");
    let v = env.ok(&["doctor", "--harness", "hog"]);
    let c = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "resources")
        .cloned()
        .unwrap_or_else(|| panic!("no resources check: {v}"));
    let detail = c["detail"].as_str().unwrap();
    let mechanism = detail.split(':').next().unwrap();
    assert!(
        ["systemd", "cgroup", "prlimit", "none"].contains(&mechanism),
        "{detail}"
    );
    // This machine as it is here: no user systemd, no writable cgroup v2.
    if !std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists()
        && std::env::var_os("XDG_RUNTIME_DIR").is_none()
    {
        assert_eq!(mechanism, "prlimit", "{detail}");
        assert!(detail.contains("no user systemd"), "{detail}");
    }
}

/// The hog under a 64M memory limit cannot take its 200M: it says so and dies. Without
/// the limit the same hog holds them (the limit, not the machine, stopped it).
#[test]
fn an_agent_over_its_memory_limit_dies_at_the_limit() {
    let (env, _) = setup("");
    let t = env.create(&["big", "x", "--harness", "hog", "--memory", "64M"]);
    let id = common::id(&t);
    let mut last = Value::Null;
    common::wait_for("the hog to die at its limit", 30, || {
        env.ok(&["monitor", "--once"]);
        last = env.task(&id);
        last["agent"]["state"] == "dead"
    });
    // 3: the hog's MemoryError (its allocation refused at the limit).
    assert_eq!(last["agent"]["exit_status"], 3, "{last}");
    let pane = last["tmux_pane_id"].as_str().unwrap().to_string();
    let screen = env
        .tmux
        .ok(&["capture-pane", "-p", "-S", "-100", "-t", &pane]);
    assert!(screen.contains("hog: out of memory"), "{screen:?}");
    let free = env.create(&["free", "x", "--harness", "hog"]);
    let pane = free["tmux_session"].as_str().unwrap().to_string();
    common::wait_for("the unlimited hog to hold its memory", 30, || {
        env.tmux
            .ok(&["capture-pane", "-p", "-t", &pane])
            .contains("hog: holding 200M")
    });
}

/// The hog holding 200M: the monitor's pass reads its tree's memory from /proc, and
/// `task list` shows it in the agent's cell.
#[test]
fn live_memory_of_an_agent_shows_in_task_list() {
    let (env, _) = setup("");
    let t = env.create(&["held", "x", "--harness", "hog"]);
    let id = common::id(&t);
    let pane = t["tmux_session"].as_str().unwrap().to_string();
    common::wait_for("the hog to hold its memory", 30, || {
        env.tmux
            .ok(&["capture-pane", "-p", "-t", &pane])
            .contains("hog: holding 200M")
    });
    env.ok(&["monitor", "--once"]);
    let agent = env.task(&id)["agent"].clone();
    let memory = agent["usage"]["memory"].as_u64().unwrap_or(0);
    assert!(memory >= 200 << 20, "the tree's resident memory: {agent}");
    let status = env.ok(&["status", "--format", "json"]);
    assert!(
        status["fleet"]["memory"].as_u64().unwrap_or(0) >= 200 << 20,
        "the fleet's total: {status}"
    );
    let out = env.cmd(&["task", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text.lines().find(|l| l.contains("held")).unwrap_or("");
    assert!(
        regex_lite(row),
        "task list's agent cell shows its memory: {text}"
    );
}

/// `2xxM·N%` in a row.
fn regex_lite(row: &str) -> bool {
    row.split_whitespace()
        .any(|w| w.starts_with('2') && w.contains("M·") && w.ends_with('%'))
}
