//! Resource limits (`memory`, `cpu`, `pids`) per harness, per project and per task
//! (`task create --memory/--cpu/--pids`): recorded on the task, refused when bad before
//! anything is recorded, and enforced by the mechanism this machine has
//! (`orange doctor`'s `resources` line says which).

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common::{self, TaskEnv};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Wait until the hog in tmux session (or pane) `target` holds its 200M.
fn wait_holding(env: &TaskEnv, what: &str, target: &str) {
    common::wait_for(what, 30, || {
        env.tmux
            .ok(&["capture-pane", "-p", "-t", target])
            .contains("hog: holding 200M")
    });
}

/// Run `orange ARGS` (with the test's tmux server), which must succeed.
fn run_ok(env: &TaskEnv, args: &[&str]) {
    let out = env.cmd_in(&env.repo, args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The mechanism `orange doctor` names here (`cgroup-v1`, `prlimit`…).
fn mechanism(env: &TaskEnv) -> String {
    let v = env.ok(&["doctor", "--harness", "hog"]);
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "resources")
        .and_then(|c| c["detail"].as_str())
        .and_then(|d| d.split(':').next())
        .unwrap_or("")
        .to_string()
}

/// The mechanism this machine calls for: `cgroup-v1` where no cgroup v2 and no user
/// systemd are there but the v1 memory hierarchy is writable (root on a v1-only machine,
/// as here: told by the machine, not by orange), else what `orange doctor` names.
fn expected_mechanism(env: &TaskEnv) -> String {
    if v1_here() {
        "cgroup-v1".into()
    } else {
        mechanism(env)
    }
}

/// cgroup v1 is orange's mechanism here, as the machine tells (not orange): no cgroup v2,
/// no user systemd, and the v1 memory hierarchy writable.
pub(crate) fn v1_here() -> bool {
    !Path::new("/sys/fs/cgroup/cgroup.controllers").exists()
        && std::env::var_os("XDG_RUNTIME_DIR").is_none()
        && own_v1("memory").is_some_and(|d| {
            let probe = d.join(format!("orange-test-probe-{}", std::process::id()));
            let ok = std::fs::create_dir(&probe).is_ok();
            let _ = std::fs::remove_dir(&probe);
            ok
        })
}

/// This test process's own cgroup in the v1 hierarchy `controller` (orange's, as the
/// tests run it).
pub(crate) fn own_v1(controller: &str) -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = own.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, c, p) = (f.next()?, f.next()?, f.next()?);
        c.split(',').any(|x| x == controller).then_some(p)
    })?;
    Some(
        Path::new("/sys/fs/cgroup")
            .join(controller)
            .join(rel.trim_start_matches('/')),
    )
}

/// The agent cgroup of task `id` of `env` in the v1 hierarchy `controller`.
pub(crate) fn v1_dir(env: &TaskEnv, controller: &str, id: &str) -> Option<PathBuf> {
    let name = orange::execution::resources::cgroup_name(&env.home, id);
    own_v1(controller).map(|d| d.join("orange").join(name))
}

/// Removes every agent cgroup of its orange home when dropped — after a failure too:
/// what is left in one is killed, then each directory removed (waiting for the kill).
pub(crate) struct CgroupGuard(pub(crate) PathBuf);

impl Drop for CgroupGuard {
    fn drop(&mut self) {
        let suffix = orange::execution::resources::cgroup_name(&self.0, "");
        for c in ["memory", "cpu", "cpuacct", "pids"] {
            let Some(parent) = own_v1(c).map(|d| d.join("orange")) else {
                continue;
            };
            let Ok(rd) = std::fs::read_dir(&parent) else {
                continue;
            };
            for e in rd.flatten() {
                if !e.file_name().to_string_lossy().ends_with(&suffix) {
                    continue;
                }
                let dir = e.path();
                let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
                for pid in procs.split_whitespace() {
                    let _ = std::process::Command::new("kill")
                        .args(["-9", pid])
                        .status();
                }
                common::poll(std::time::Duration::from_secs(10), || {
                    (std::fs::remove_dir(&dir).is_ok() || !dir.exists()).then_some(())
                });
            }
            let _ = std::fs::remove_dir(&parent);
        }
    }
}

/// A project, and config.toml with `hog`: a fake agent that takes `MB` megabytes and
/// holds them (or says it could not).
fn setup(extra: &str) -> (TaskEnv, String) {
    let env = TaskEnv::new();
    let p = env.add_project(&[]);
    let name = p["name"].as_str().unwrap().to_string();
    let hog = env.root().join("hog.sh");
    std::fs::write(
        &hog,
        "python3 -c 'import sys,time\ntry:\n    x = b\"x\" * (200 << 20)\nexcept MemoryError:\n    print(\"hog: out of memory\"); sys.exit(3)\nprint(\"hog: holding 200M\"); time.sleep(600)'\n",
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
        ["systemd", "cgroup", "cgroup-v1", "prlimit", "none"].contains(&mechanism),
        "{detail}"
    );
    // This machine as it is here: no user systemd, no writable cgroup v2; as root, the
    // cgroup v1 memory hierarchy is writable.
    if !std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists()
        && std::env::var_os("XDG_RUNTIME_DIR").is_none()
    {
        assert!(detail.contains("no user systemd"), "{detail}");
        let want = match expected_mechanism(&env).as_str() {
            "cgroup-v1" => "cgroup-v1",
            _ => "prlimit",
        };
        assert_eq!(mechanism, want, "{detail}");
    }
}

/// The hog under a 64M memory limit cannot take its 200M. Under a cgroup the kernel's OOM
/// killer kills it there, and every surface says so — `✗ killed: memory limit 64M` — with
/// what to do, in the history too, and the task waits for the person (no respawn into the
/// same death). Under prlimit the allocation is refused: it says so and dies, a plain
/// exit (orange cannot tell it from a crash). Without the limit the same hog holds them.
#[test]
fn an_agent_over_its_memory_limit_dies_at_the_limit() {
    let (env, _) = setup("");
    let _cgroups = CgroupGuard(env.home.clone());
    let mechanism = expected_mechanism(&env);
    let t = env.create(&["big", "x", "--harness", "hog", "--memory", "64M"]);
    let id = common::id(&t);
    let mut last = Value::Null;
    // Recorded by the monitor (not merely seen dead by `task show`).
    common::wait_for("the monitor to record the hog's death", 30, || {
        env.ok(&["monitor", "--once"]);
        last = env.task(&id);
        !env.history_events(&id, "agent.exited").is_empty()
    });
    let pane = last["tmux_pane_id"].as_str().unwrap().to_string();
    let screen = env
        .tmux
        .ok(&["capture-pane", "-p", "-S", "-100", "-t", &pane]);
    if mechanism == "prlimit" {
        // 3: the hog's MemoryError (its allocation refused at the limit).
        assert_eq!(last["agent"]["exit_status"], 3, "{last}");
        assert!(screen.contains("hog: out of memory"), "{screen:?}");
        assert!(last["agent"].get("killed_at_limit").is_none(), "{last}");
    } else {
        killed_at_limit_everywhere(&env, &id, &last, &mechanism);
    }
    let free = env.create(&["free", "x", "--harness", "hog"]);
    let pane = free["tmux_session"].as_str().unwrap().to_string();
    wait_holding(&env, "the unlimited hog to hold its memory", &pane);
}

/// A task whose agent the kernel killed at its 64M limit, on every surface.
fn killed_at_limit_everywhere(env: &TaskEnv, id: &str, last: &Value, mechanism: &str) {
    const REASON: &str = "killed: memory limit 64M";
    assert_eq!(last["agent"]["killed_at_limit"], 64u64 << 20, "{last}");
    if mechanism == "cgroup-v1" {
        let mem = v1_dir(env, "memory", id).unwrap();
        let limit = std::fs::read_to_string(mem.join("memory.limit_in_bytes")).unwrap();
        assert_eq!(limit.trim(), (64u64 << 20).to_string());
        let oom = std::fs::read_to_string(mem.join("memory.oom_control")).unwrap();
        assert!(!oom.contains("oom_kill 0"), "{oom}");
    }
    let detail = last["agent"]["detail"].as_str().unwrap_or("");
    assert!(detail.starts_with(REASON), "{detail}");
    assert!(detail.contains("--memory"), "what to do: {detail}");
    // The history: the exit with its limit, and the escalation (no respawn).
    let exited = env.history_events(id, "agent.exited");
    assert_eq!(exited[0]["killed_at_limit"], 64u64 << 20, "{exited:?}");
    let escalated = env.history_events(id, "agent.escalated");
    assert!(
        escalated[0]["reason"]
            .as_str()
            .unwrap_or("")
            .starts_with(REASON),
        "{escalated:?}"
    );
    assert!(env.history_events(id, "agent.respawned").is_empty());
    // task list, task show, task explain, status, the sidebar.
    let text = |args: &[&str]| {
        let out = env.cmd_in(&env.repo, args).output().unwrap();
        common::strip_styles(&String::from_utf8_lossy(&out.stdout))
    };
    let list = text(&["task", "list"]);
    assert!(list.contains(REASON), "{list}");
    let show = text(&["task", "show", id]);
    assert!(show.contains(REASON), "{show}");
    let explain = text(&["task", "explain", id]);
    assert!(explain.contains(REASON), "{explain}");
    let status = env.ok(&["status", "--format", "json"]);
    assert!(status.to_string().contains(REASON), "{status}");
    let (_, m) = env.json(&["sidebar", "--once", "--task", id]);
    assert_eq!(m["agent"], REASON, "{m}");
    let frame = text(&["sidebar", "--once", "--task", id, "--width", "60"]);
    assert!(frame.contains(&format!("Agent: {REASON}")), "{frame}");
    // What to do, done: respawned with more memory, the hog holds its 200M.
    run_ok(env, &["task", "respawn", id, "--memory", "512M"]);
    assert_eq!(env.task(id)["limits"]["memory"], 512u64 << 20);
    let changed = env.history_events(id, "limits.changed");
    assert_eq!(changed[0]["to"]["memory"], 512u64 << 20, "{changed:?}");
    let session = env.task(id)["tmux_session"].as_str().unwrap().to_string();
    wait_holding(env, "the respawned hog to hold its memory", &session);
    env.ok(&["monitor", "--once"]);
    let list = text(&["task", "list"]);
    assert!(!list.contains(REASON), "a new agent, a new verdict: {list}");
    if let Some(mem) = v1_dir(env, "memory", id).filter(|_| mechanism == "cgroup-v1") {
        let limit = std::fs::read_to_string(mem.join("memory.limit_in_bytes")).unwrap();
        assert_eq!(limit.trim(), (512u64 << 20).to_string());
    }
    // Cancelled: its cgroup goes with it.
    env.ok(&["task", "cancel", id, "--yes"]);
    if let Some(mem) = v1_dir(env, "memory", id).filter(|_| mechanism == "cgroup-v1") {
        common::wait_for("the cancelled task's cgroup to go", 20, || {
            env.ok(&["monitor", "--once"]);
            !mem.exists()
        });
    }
}

/// The hog holding 200M: the monitor's pass reads its tree's memory from /proc, and
/// `task list` shows it in the agent's cell.
#[test]
fn live_memory_of_an_agent_shows_in_task_list() {
    let (env, _) = setup("");
    let _cgroups = CgroupGuard(env.home.clone());
    let t = env.create(&["held", "x", "--harness", "hog"]);
    let id = common::id(&t);
    let pane = t["tmux_session"].as_str().unwrap().to_string();
    wait_holding(&env, "the hog to hold its memory", &pane);
    env.ok(&["monitor", "--once"]);
    let agent = env.task(&id);
    let memory = agent["usage"]["memory"].as_u64().unwrap_or(0);
    assert!(memory >= 200 << 20, "the tree's resident memory: {agent}");
    // Its harness's 1G limit: read from its cgroup where it has one.
    let cgroup = !["prlimit", "none"].contains(&expected_mechanism(&env).as_str());
    assert_eq!(agent["usage"]["cgroup"], cgroup, "{agent}");
    // Not in the agent's record: that is rewritten only when what the agent does changes.
    assert!(agent["agent"].get("usage").is_none(), "{agent}");
    let (_, m) = env.json(&["sidebar", "--once", "--task", &id]);
    assert!(
        m["usage"]["memory"].as_u64().unwrap_or(0) >= 200 << 20,
        "{m}"
    );
    let status = env.ok(&["status", "--format", "json"]);
    assert!(
        status["fleet"]["memory"].as_u64().unwrap_or(0) >= 200 << 20,
        "the fleet's total: {status}"
    );
    let out = env.cmd_in(&env.repo, &["task", "list"]).output().unwrap();
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

/// Under a cgroup (cgroup v1 here, as root): the hog with 1G, 1.5 cores and 64 processes
/// runs in its own cgroup with each limit written, and what it uses is read from there.
#[test]
fn an_agent_under_limits_runs_in_its_own_cgroup() {
    let (env, _) = setup("");
    let _cgroups = CgroupGuard(env.home.clone());
    if expected_mechanism(&env) != "cgroup-v1" {
        eprintln!("skipped: no writable cgroup v1 here");
        return;
    }
    let t = env.create(&[
        "caged",
        "x",
        "--harness",
        "hog",
        "--memory",
        "1G",
        "--cpu",
        "1.5",
        "--pids",
        "64",
    ]);
    let id = common::id(&t);
    let pane = t["tmux_session"].as_str().unwrap().to_string();
    wait_holding(&env, "the hog to hold its memory", &pane);
    let read = |c: &str, f: &str| {
        std::fs::read_to_string(v1_dir(&env, c, &id).unwrap().join(f))
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    assert_eq!(
        read("memory", "memory.limit_in_bytes"),
        (1u64 << 30).to_string()
    );
    assert_eq!(read("cpu", "cpu.cfs_quota_us"), "150000");
    assert_eq!(read("cpu", "cpu.cfs_period_us"), "100000");
    assert_eq!(read("pids", "pids.max"), "64");
    // The agent's whole tree is in it: its pane's process, and the python under it.
    let procs = read("memory", "cgroup.procs");
    assert!(procs.split_whitespace().count() >= 2, "{procs:?}");
    env.ok(&["monitor", "--once"]);
    let v = env.task(&id);
    assert_eq!(v["usage"]["cgroup"], true, "{v}");
    assert!(
        v["usage"]["memory"].as_u64().unwrap_or(0) >= 200 << 20,
        "{v}"
    );
    // Respawned: a fresh cgroup (the old one removed first), the limits kept.
    run_ok(&env, &["task", "respawn", &id, "--force", "--yes"]);
    common::wait_for("the respawned hog to hold its memory", 30, || {
        read("memory", "cgroup.procs").split_whitespace().count() >= 2
    });
    assert_eq!(
        read("memory", "memory.limit_in_bytes"),
        (1u64 << 30).to_string()
    );
}
