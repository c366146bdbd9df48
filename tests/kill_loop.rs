//! The kill loop: random commands (task create/spawn/merge/cancel/respawn/delete,
//! workspace acquire/release, lane create/close, group create/cancel/pick/judge) killed
//! with SIGKILL at random moments (the group commands also at their fault points) on a
//! real git repository and a real tmux server; after each, the next command must work and
//! the invariants must hold:
//! - every state file parses;
//! - no workspace is bound twice, and an active task's workspace is bound to it;
//! - no live agent session without a live record (its task active and pointing to it, its
//!   lane not closed, or — a group's judge agent — its group's judgement naming it);
//! - a task that holds nothing (pending, failed, done) holds no bound workspace;
//! - no more task agents run than the project's `max_running` (the cap's count and the
//!   start of an agent are under one lock; tests/fleet.rs kills a create at its fault
//!   point `cap.counted`).
//!
//! Bounded (100 operations by default, `KILL_LOOP_ITERATIONS`); `KILL_LOOP_SEED` replays a
//! run. `scripts/soak.sh` is the long version.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::TaskEnv;
use serde_json::Value;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> Option<&'a T> {
        (!v.is_empty()).then(|| &v[self.below(v.len())])
    }
}

fn read_json(path: &std::path::Path, violations: &mut Vec<String>) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    match serde_json::from_str(&text) {
        Ok(v) => Some(v),
        Err(e) => {
            violations.push(format!("{} does not parse: {e}", path.display()));
            None
        }
    }
}

/// Every task.json of the project `app`.
fn tasks(env: &TaskEnv, violations: &mut Vec<String>) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir(env.home.join("tasks/app")) else {
        return out;
    };
    for e in dir.flatten() {
        let p = e.path().join("task.json");
        if p.exists() {
            if let Some(t) = read_json(&p, violations) {
                out.insert(t["id"].as_str().unwrap_or_default().to_string(), t);
            }
        }
    }
    out
}

fn is_active(status: &str) -> bool {
    !matches!(status, "pending" | "failed" | "done" | "cancelled")
}

/// The invariants, read from the state files and the tmux server.
fn violations(env: &TaskEnv) -> Vec<String> {
    let mut v = vec![];
    read_json(&env.home.join("projects.json"), &mut v);
    let pool = read_json(&env.home.join("workspaces/.pool.json"), &mut v).unwrap_or_default();
    let lanes = read_json(&env.home.join("lanes/registry.json"), &mut v).unwrap_or_default();
    let tasks = tasks(env, &mut v);
    // Pool bindings: label per workspace (one each by construction of the file).
    let mut bound: HashMap<String, String> = HashMap::new();
    if let Some(ws) = pool["workspaces"].as_object() {
        for (name, slot) in ws {
            if slot["status"] == "bound" {
                bound.insert(
                    name.clone(),
                    slot["task"].as_str().unwrap_or("").to_string(),
                );
            }
        }
    }
    let mut holders: HashMap<String, String> = HashMap::new();
    for (id, t) in &tasks {
        let status = t["status"].as_str().unwrap_or("");
        if is_active(status) {
            if let Some(ws) = t["workspace"].as_str() {
                if let Some(other) = holders.insert(ws.to_string(), id.clone()) {
                    v.push(format!("workspace {ws} held by tasks {other} and {id}"));
                }
                if bound.get(ws).map(String::as_str) != Some(id.as_str()) {
                    v.push(format!(
                        "task {id} ({status}) says it holds {ws}; the pool binds it to {:?}",
                        bound.get(ws)
                    ));
                }
            }
        }
    }
    for (ws, label) in &bound {
        if let Some(t) = tasks.get(label) {
            let status = t["status"].as_str().unwrap_or("");
            if matches!(status, "pending" | "failed" | "done") {
                v.push(format!("{ws} is bound to task {label}, which is {status}"));
            }
        }
    }
    // No lane is left `creating` (its creator is gone: the next command settled it).
    if let Some(m) = lanes["lanes"].as_object() {
        for (id, l) in m {
            if l["state"] == "creating" {
                v.push(format!("lane {id} is left creating"));
            }
        }
    }
    // Live sessions and their records.
    let out = env.tmux.tmux(&[
        "list-sessions",
        "-F",
        "#{session_id}\t#{session_name}\t#{@orange_task}\t#{@orange_lane}",
    ]);
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let (sid, name, task, lane) = (f[0], f[1], f[2], f[3]);
        // A group's judge agent (its `@orange_task` is the group's id): its group's
        // record names it.
        let group = env.home.join(format!("tasks/app/.groups/{task}.json"));
        if !task.is_empty() && group.exists() {
            JUDGES_SEEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let g = read_json(&group, &mut v).unwrap_or_default();
            let run = &g["judgement"]["agent_run"];
            if run["session"] != name && run["session_id"] != sid {
                v.push(format!(
                    "judge session {name} ({sid}) runs for group {task}, whose record names {run}"
                ));
            }
        } else if !task.is_empty() {
            match tasks.get(task) {
                None => v.push(format!(
                    "session {name} runs for task {task}, which does not exist"
                )),
                Some(t) if !is_active(t["status"].as_str().unwrap_or("")) => v.push(format!(
                    "session {name} runs for task {task}, which is {}",
                    t["status"]
                )),
                Some(t) if t["tmux_session_id"] != sid => v.push(format!(
                    "session {name} ({sid}) runs for task {task}, whose record points to {}",
                    t["tmux_session_id"]
                )),
                _ => {}
            }
        }
        if !lane.is_empty() {
            match lanes["lanes"].get(lane) {
                None => v.push(format!(
                    "session {name} runs for lane {lane}, which does not exist"
                )),
                Some(l) if l["state"] == "closed" => v.push(format!(
                    "session {name} runs for lane {lane}, which is closed"
                )),
                _ => {}
            }
        }
    }
    // Never more running agents than the project's max_running (set to MAX_RUNNING).
    let out = env
        .tmux
        .tmux(&["list-panes", "-a", "-F", "#{@orange_task}\t#{pane_dead}"]);
    // (A group's judge agent is no task's: not counted.)
    let judge = |l: &str| {
        let owner = l.split('\t').next().unwrap_or("");
        env.home
            .join(format!("tasks/app/.groups/{owner}.json"))
            .exists()
    };
    let live = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with('\t') && l.ends_with("\t0") && !judge(l))
        .count();
    if live > MAX_RUNNING {
        v.push(format!(
            "{live} task agents run, over the project's max_running of {MAX_RUNNING}"
        ));
    }
    v
}

/// Live judge agents the invariants looked at (the summary says how many: the group
/// judge's invariant was put to the test).
static JUDGES_SEEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The project's cap on running agents in the loop (below its pool size of 3, so that
/// both queue).
const MAX_RUNNING: usize = 2;

/// Where a group command may be made to die (`ORANGE_CRASH_AT`; empty: a random kill
/// only), each a moment a random kill rarely hits. A create: checked, its record written,
/// its members recorded, their workspaces bound, their sessions started but not recorded.
/// A cancel or a pick: recorded; a pick: its members' histories told. A judging: its judge
/// agent's run recorded (no session yet), started, the judgement saved (not yet told).
fn fault_points(op: &str) -> &'static [&'static str] {
    match op {
        "group create" => &[
            "",
            "create.checked",
            "group.recorded",
            "group.members",
            "group.bound",
            "group.started",
        ],
        "group cancel" => &["", "group.cancel.recorded"],
        "group pick" => &["", "group.pick.recorded", "group.pick.told"],
        "group judge" => &[
            "",
            "group.judge.recorded",
            "group.judge.started",
            "group.judged",
        ],
        _ => &[""],
    }
}

#[derive(Default, Debug)]
struct Counts {
    iterations: usize,
    kills: usize,
    finished: usize,
    ops: BTreeMap<&'static str, usize>,
}

#[test]
fn commands_killed_at_random_moments_leave_state_the_next_command_repairs() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "3"]);
    env.ok(&[
        "project",
        "update",
        "--max-running",
        &MAX_RUNNING.to_string(),
    ]);
    // A check for `group judge` to run in every member's workspace.
    env.ok(&["project", "update", "--check-cmd", "true"]);
    let seed: u64 = std::env::var("KILL_LOOP_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    let iterations: usize = std::env::var("KILL_LOOP_ITERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    eprintln!("kill loop: KILL_LOOP_SEED={seed}");
    let mut rng = Rng(seed);
    let mut counts = Counts::default();
    let mut all_violations = vec![];
    let started = Instant::now();
    let mut n = 0;
    while counts.iterations < iterations && n < iterations * 5 {
        n += 1;
        let tasks = tasks(&env, &mut vec![]);
        let ids_with = |f: &dyn Fn(&str) -> bool| -> Vec<String> {
            tasks
                .iter()
                .filter(|(_, t)| f(t["status"].as_str().unwrap_or("")))
                .map(|(id, _)| id.clone())
                .collect()
        };
        let live = ids_with(&is_active);
        let pending = ids_with(&|s| s == "pending");
        let ended = ids_with(&|s| matches!(s, "done" | "cancelled" | "failed"));
        let lanes: Vec<String> = std::fs::read_to_string(env.home.join("lanes/registry.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|v| {
                v["lanes"].as_object().map(|m| {
                    m.iter()
                        .filter(|(_, l)| l["state"] != "closed")
                        .map(|(k, _)| k.clone())
                        .collect()
                })
            })
            .unwrap_or_default();
        let branch = format!("kl/{n}");
        let label = format!("outside-{}", rng.below(3));
        let ws = format!("app--{}", 1 + rng.below(3));
        let groups: Vec<String> = std::fs::read_dir(env.home.join("tasks/app/.groups"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.strip_suffix(".json").map(str::to_string)
            })
            .collect();
        let (op, args): (&'static str, Vec<String>) = match rng.below(14) {
            13 => match (rng.below(2), rng.pick(&groups)) {
                (_, None) => continue,
                (0, Some(g)) => (
                    "group judge",
                    ["group", "judge", "--now", g].map(String::from).to_vec(),
                ),
                (_, Some(g)) => (
                    "group judge",
                    [
                        "group",
                        "judge",
                        "--now",
                        "--agent",
                        "fake-wait",
                        "--timeout",
                        "10m",
                        g,
                    ]
                    .map(String::from)
                    .to_vec(),
                ),
            },
            11 => (
                "group create",
                ["task", "create", &branch, "best of two", "--n", "2"]
                    .into_iter()
                    .chain(["--harness", "fake-wait"])
                    .map(String::from)
                    .collect(),
            ),
            12 => match (rng.below(2), rng.pick(&groups)) {
                (0, Some(g)) => (
                    "group cancel",
                    ["group", "cancel", "--yes", g].map(String::from).to_vec(),
                ),
                (_, Some(g)) => (
                    "group pick",
                    ["group", "pick", "--yes", g, "1"]
                        .map(String::from)
                        .to_vec(),
                ),
                _ => continue,
            },
            0 | 1 => (
                "task create",
                vec![
                    "task",
                    "create",
                    &branch,
                    "kill loop",
                    "--harness",
                    "fake-wait",
                ]
                .into_iter()
                .map(String::from)
                .collect(),
            ),
            2 => (
                "task create --no-spawn",
                [
                    "task",
                    "create",
                    &branch,
                    "later",
                    "--harness",
                    "fake-wait",
                    "--no-spawn",
                ]
                .map(String::from)
                .to_vec(),
            ),
            3 => match rng.pick(&pending) {
                Some(id) => (
                    "task spawn",
                    vec!["task".into(), "spawn".into(), id.clone()],
                ),
                None => continue,
            },
            4 => match rng.pick(&live) {
                Some(id) => (
                    "task merge",
                    ["task", "merge", "--local", id].map(String::from).to_vec(),
                ),
                None => continue,
            },
            5 => match rng.pick(&live).or(rng.pick(&pending)) {
                Some(id) => (
                    "task cancel",
                    ["task", "cancel", "--yes", id].map(String::from).to_vec(),
                ),
                None => continue,
            },
            6 => match rng.pick(&live) {
                Some(id) => {
                    // Its agent dies first, so that respawn has work to do.
                    if let Some(sid) = tasks[id]["tmux_session_id"].as_str() {
                        let _ = env.tmux.tmux(&[
                            "respawn-pane",
                            "-k",
                            "-t",
                            &format!("{sid}:"),
                            "true",
                        ]);
                    }
                    (
                        "task respawn",
                        ["task", "respawn", id].map(String::from).to_vec(),
                    )
                }
                None => continue,
            },
            7 => match rng.pick(&ended) {
                Some(id) => (
                    "task delete",
                    ["task", "delete", "--yes", id].map(String::from).to_vec(),
                ),
                None => continue,
            },
            8 => (
                "workspace acquire",
                ["workspace", "acquire", "--task", &label]
                    .map(String::from)
                    .to_vec(),
            ),
            9 => (
                "workspace release",
                ["workspace", "release", &ws].map(String::from).to_vec(),
            ),
            _ => match (rng.below(2), rng.pick(&lanes)) {
                (0, Some(l)) => (
                    "lane close",
                    ["lane", "close", "--force", l].map(String::from).to_vec(),
                ),
                _ => (
                    "lane create",
                    [
                        "lane",
                        "create",
                        "--task-id",
                        &format!("K-{n}"),
                        "--harness",
                        "fake-wait",
                    ]
                    .map(String::from)
                    .to_vec(),
                ),
            },
        };
        counts.iterations += 1;
        *counts.ops.entry(op).or_default() += 1;
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut cmd = env.cmd_in(&env.repo, &argv);
        // A group command also dies at its fault points.
        if let Some(p) = rng.pick(fault_points(op)).filter(|p| !p.is_empty()) {
            cmd.env("ORANGE_CRASH_AT", p);
        }
        let mut child: Child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // A judging runs checks, diffs and a launch: given longer, it gets to its agent.
        let reach = if op == "group judge" { 800 } else { 70 };
        std::thread::sleep(Duration::from_millis(rng.below(reach) as u64));
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap(); // SIGKILL
            counts.kills += 1;
        } else {
            counts.finished += 1;
        }
        child.wait().unwrap();
        // The next command works (and repairs what the kill left).
        let (ok, out) = env.json(&["task", "list"]);
        if !ok {
            all_violations.push(format!(
                "after {op} ({argv:?}): the next command failed: {out}"
            ));
        }
        let (ok, out) = env.json(&["lane", "list"]);
        if !ok {
            all_violations.push(format!("after {op} ({argv:?}): lane list failed: {out}"));
        }
        let (ok, out) = env.json(&["group", "list"]);
        if !ok {
            all_violations.push(format!("after {op} ({argv:?}): group list failed: {out}"));
        }
        for v in violations(&env) {
            all_violations.push(format!("after {op} ({argv:?}): {v}"));
        }
    }
    eprintln!(
        "kill loop: {} iterations in {:.1}s, {} killed with SIGKILL, {} finished first, operations {:?}, judge agents seen live {}, {} invariant violations",
        counts.iterations,
        started.elapsed().as_secs_f64(),
        counts.kills,
        counts.finished,
        counts.ops,
        JUDGES_SEEN.load(std::sync::atomic::Ordering::Relaxed),
        all_violations.len()
    );
    assert!(
        all_violations.is_empty(),
        "KILL_LOOP_SEED={seed}:\n{}",
        all_violations.join("\n")
    );
    assert!(
        counts.kills > 0,
        "no command was killed: the loop tested nothing"
    );
}
