//! Groups (best of N, `orange group`): one prompt fanned out to several agents on real git
//! and a real tmux server, with fake agents that make DIFFERENT changes (`fake-good`
//! commits the file the project's check looks for, `fake-complete` another one); judged
//! by the check, the diffs and a judge agent (a fake one here; the real Claude Code against
//! the stand-in API below); one picked, the rest cancelled.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use common::{wait_for, TaskEnv};
use serde_json::Value;

/// A TaskEnv with the group harnesses (`fake-good`, `fake-judge`) and a project whose
/// check passes only where `fake-good` worked.
fn env(pool: &str) -> TaskEnv {
    let env = TaskEnv::new();
    let agent = common::fixtures().join("fake-agent.sh");
    for mode in ["good", "judge"] {
        env.append_config(&format!(
            "[harness.fake-{mode}]\ncommand = \"sh {} {mode} {{prompt}}\"\n",
            agent.display()
        ));
    }
    env.add_project(&["--pool-size", pool]);
    env.ok(&[
        "project",
        "update",
        "--check-cmd",
        "test -f GOOD && echo checked",
    ]);
    env
}

/// The agents' sessions (not the test server's own).
fn agents(env: &TaskEnv) -> Vec<String> {
    let mut s = env.tmux.sessions();
    s.retain(|n| n.starts_with("app/"));
    s
}

/// `task create ARGS…` making a group: its id and what the command printed.
fn group(env: &TaskEnv, args: &[&str]) -> (String, Value) {
    let mut a = vec!["task", "create"];
    a.extend_from_slice(args);
    let v = env.ok(&a);
    (v["group"]["id"].as_str().unwrap().to_string(), v)
}

fn members(v: &Value) -> Vec<Value> {
    v["members"].as_array().unwrap().clone()
}

fn task_of(m: &Value) -> String {
    m["task"]["id"]
        .as_str()
        .or(m["task"].as_str())
        .unwrap()
        .to_string()
}

/// Wait until every member with a task is `status`.
fn wait_members(env: &TaskEnv, gid: &str, status: &str) -> Value {
    let mut g = Value::Null;
    wait_for(&format!("group {gid}'s members to be {status}"), 30, || {
        g = env.ok(&["group", "show", gid]);
        members(&g).iter().all(|m| m["state"] == status)
    });
    g
}

#[test]
fn n_members_each_in_their_own_workspace_and_session_the_last_queued_when_the_pool_is_short() {
    let env = env("2");
    let (gid, v) = group(
        &env,
        &[
            "api/fix",
            "fix the api",
            "--n",
            "3",
            "--harness",
            "fake-wait",
        ],
    );
    let ms = members(&v);
    let branches: Vec<&str> = ms.iter().map(|m| m["branch"].as_str().unwrap()).collect();
    assert_eq!(branches, ["api/fix/1", "api/fix/2", "api/fix/3"]);
    let outcomes: Vec<&str> = ms.iter().map(|m| m["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["spawned", "spawned", "queued"], "{v}");
    // Each its own workspace and session, the same prompt.
    let (a, b) = (task_of(&ms[0]), task_of(&ms[1]));
    let (ta, tb) = (env.task(&a), env.task(&b));
    assert_ne!(ta["workspace"], tb["workspace"]);
    assert_ne!(ta["tmux_session_id"], tb["tmux_session_id"]);
    // Started side by side, their sessions are made in member order (tmux numbers them
    // so; the picker lists them so, under their group).
    let made = |t: &Value| -> u64 { t["tmux_session_id"].as_str().unwrap()[1..].parse().unwrap() };
    assert!(made(&ta) < made(&tb), "{ta}\n{tb}");
    assert_eq!(ta["group"], gid.as_str());
    assert!(env.agent_log(&a, "prompt").starts_with("fix the api"));
    assert!(env.agent_log(&b, "prompt").starts_with("fix the api"));
    // The group record, found by id, prefix or base branch.
    assert!(env
        .home
        .join(format!("tasks/app/.groups/{gid}.json"))
        .exists());
    for typed in [gid.as_str(), &gid[..4], "api/fix"] {
        assert_eq!(env.ok(&["group", "show", typed])["id"], gid.as_str());
    }
    let list = env.ok(&["group", "list"]);
    assert_eq!(list.as_array().unwrap().len(), 1);
    let text = env.cmd_in(&env.repo, &["group", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("3: 2 working, 1 pending"), "{text}");
    // `task list`: one parent row, the members under it; the sidebar names the group.
    let out = env.cmd_in(&env.repo, &["task", "list"]).output().unwrap();
    let out = String::from_utf8_lossy(&out.stdout);
    let row = |id: &str| out.lines().position(|l| l.starts_with(id)).unwrap();
    let parent = out.lines().position(|l| l.starts_with(&gid)).unwrap();
    assert!(
        out.lines().nth(parent).unwrap().contains("3 members"),
        "{out}"
    );
    assert_eq!(row(&format!("└ {a}")), parent + 1, "{out}");
    assert_eq!(row(&format!("└ {b}")), parent + 2, "{out}");
    let side = env
        .cmd_in(
            &env.repo,
            &["sidebar", "--task", &b, "--once", "--width", "40"],
        )
        .output()
        .unwrap();
    let side = String::from_utf8_lossy(&side.stdout);
    assert!(
        side.contains("Group: api/fix") && side.contains("/2 working ◂"),
        "{side}"
    );
    // Cancel: every member, the queued one too; the pool is free again.
    let c = env.ok(&["group", "cancel", "api/fix", "--yes"]);
    assert_eq!(c["group"]["cancelled"], true);
    let g = env.ok(&["group", "show", &gid]);
    assert!(members(&g).iter().all(|m| m["state"] == "cancelled"), "{g}");
    assert!(agents(&env).is_empty(), "{:?}", env.tmux.sessions());
}

/// The members' sessions are made in one tmux call, in member order, with no call to ask
/// whether a name is taken or which server runs; a name another session holds falls back
/// to the name with the member's id after it (a call of its own), and that session is left
/// as it was.
#[test]
fn the_members_sessions_are_made_in_one_tmux_call_and_a_taken_name_falls_back() {
    let env = env("6");
    let create = |b: &str| {
        env.ok_counting_tmux(&[
            "task",
            "create",
            b,
            "x",
            "--n",
            "3",
            "--harness",
            "fake-wait",
        ])
    };
    let sessions_of = |v: &Value| -> Vec<(String, u64)> {
        members(v)
            .iter()
            .map(|m| {
                let t = &m["task"];
                let id = t["tmux_session_id"].as_str().unwrap()[1..].parse().unwrap();
                (t["tmux_session"].as_str().unwrap().to_string(), id)
            })
            .collect()
    };
    let (v, calls) = create("one");
    let made: Vec<&String> = calls.iter().filter(|c| c.contains("new-session")).collect();
    assert_eq!(made.len(), 1, "{calls:#?}");
    // Nothing asks whether a name is taken; which server runs is not asked per member
    // (`new-session` tells it; the monitor's check after the create asks it once).
    assert!(
        !calls.iter().any(|c| c.contains("has-session")),
        "{calls:#?}"
    );
    let identity = |c: &&String| {
        c.contains("display-message -p #{socket_path}\u{1f}#{pid}\u{1f}#{start_time}\u{1e}")
    };
    assert!(calls.iter().filter(identity).count() <= 1, "{calls:#?}");
    let s = sessions_of(&v);
    let names: Vec<&str> = s.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["app/one/1", "app/one/2", "app/one/3"]);
    assert!(s.windows(2).all(|w| w[0].1 < w[1].1), "{s:?}");
    for m in members(&v) {
        assert!(m["task"]["tmux_server"]["pid"].as_u64().is_some(), "{m}");
    }
    // Another's session holds the second member's name.
    env.tmux
        .ok(&["new-session", "-d", "-s", "app/two/2", "sleep", "3600"]);
    let (v, calls) = create("two");
    let second = task_of(&members(&v)[1]);
    let s = sessions_of(&v);
    let names: Vec<&str> = s.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "app/two/1".to_string(),
            format!("app/two/2-{second}"),
            "app/two/3".into()
        ]
    );
    // The first, then the third with the rest, then the second under its other name.
    let made = calls.iter().filter(|c| c.contains("new-session")).count();
    assert_eq!(made, 3, "{calls:#?}");
    assert_eq!(
        env.tmux
            .ok(&["show-options", "-qv", "-t", "=app/two/2:", "@orange_task"])
            .trim(),
        ""
    );
    assert!(env
        .tmux
        .ok(&[
            "list-panes",
            "-t",
            "=app/two/2:",
            "-F",
            "#{pane_start_command}"
        ])
        .contains("3600"));
    for id in [task_of(&members(&v)[0]), second] {
        env.wait_session(&id, "live");
    }
}

/// A project registered by an older orange lacks exclude entries; the members starting
/// side by side (each making sure) add them once and keep every line the user had.
#[test]
fn members_starting_together_add_a_projects_missing_excludes_once() {
    let env = env("4");
    let exclude = env.repo.join(".git/info/exclude");
    std::fs::write(&exclude, "# mine\n*.log\nbuild/\n").unwrap();
    let (gid, _) = group(&env, &["x", "x", "--n", "3", "--harness", "fake-wait"]);
    wait_members(&env, &gid, "working");
    let text = std::fs::read_to_string(&exclude).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[..3], ["# mine", "*.log", "build/"], "{text}");
    for l in ["# added by orange", "TASK.md", ".orange-outcome"] {
        assert_eq!(lines.iter().filter(|x| **x == l).count(), 1, "{l}: {text}");
    }
    // Replaced whole, its mode kept.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&exclude).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o644, "{mode:o}");
    // Taken out again: one task started alone makes sure too.
    std::fs::write(&exclude, "# mine\n").unwrap();
    let v = env.ok(&["task", "create", "y", "y", "--harness", "fake-wait"]);
    assert_eq!(v["outcome"], "spawned", "{v}");
    let text = std::fs::read_to_string(&exclude).unwrap();
    assert!(
        text.starts_with("# mine\n") && text.contains("\nTASK.md\n"),
        "{text}"
    );
}

#[test]
fn mixed_harnesses_are_judged_by_the_check_the_diff_and_a_judge_and_one_is_picked() {
    let env = env("3");
    let (gid, v) = group(
        &env,
        &[
            "feat/x",
            "make it good",
            "--harness",
            "fake-complete:2",
            "--harness",
            "fake-good",
        ],
    );
    let labels: Vec<String> = members(&v)
        .iter()
        .map(|m| m["member"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(labels, ["fake-complete", "fake-complete-2", "fake-good"]);
    wait_members(&env, &gid, "reviewing");
    // The judge agent is started and the command returns: the checks and diffs are
    // judged, the agent's order comes when it has answered.
    let started = env.ok(&["group", "judge", &gid, "--agent", "fake-judge"]);
    let run = &started["judgement"]["agent_run"];
    let session = run["session"].as_str().unwrap().to_string();
    assert_eq!(session, "app/feat/x/judge", "{started}");
    assert_eq!(started["judgement"]["results"][0]["member"], "fake-good");
    // A child row of its group: in `task list`, in the sidebar of a member, and in the
    // picker (its session's row hangs under the members, the last of which says `├`).
    let out = env.cmd_in(&env.repo, &["task", "list"]).output().unwrap();
    let out = String::from_utf8_lossy(&out.stdout).into_owned();
    let judge_row = out.lines().rfind(|l| l.starts_with("└ ")).unwrap();
    assert!(
        judge_row.starts_with("└ judge") && judge_row.contains("judging"),
        "{out}"
    );
    let tree = |s: &str| {
        env.tmux
            .ok(&["show-options", "-v", "-t", s, "@orange_tree"])
            .trim_end()
            .to_string()
    };
    let lead = " ".repeat("group feat/x ".len());
    assert_eq!(tree(&session), format!("{lead}└ judge"), "{out}");
    assert_eq!(tree("app/feat/x/fake-good"), format!("{lead}├ /fake-good"));
    let side = env
        .cmd_in(
            &env.repo,
            &[
                "sidebar",
                "--task",
                &task_of(&members(&v)[0]),
                "--once",
                "--width",
                "40",
            ],
        )
        .output()
        .unwrap();
    let side = String::from_utf8_lossy(&side.stdout);
    assert!(side.contains("judge fake-judge: judging"), "{side}");
    // The monitor reads its answer once it has one (a pass starts `group judge G
    // --collect`), and stops it.
    let mut j = Value::Null;
    wait_for("the monitor to read the judge's ranking", 60, || {
        env.ok(&["monitor", "--once"]);
        j = env.ok(&["group", "show", &gid]);
        j["judgement"].get("agent_run").is_none()
    });
    assert!(j["judgement"].get("agent_error").is_none(), "{j}");
    // Its row is gone from the picker: the last member's says `└` again.
    assert_eq!(tree("app/feat/x/fake-good"), format!("{lead}└ /fake-good"));
    let results = j["judgement"]["results"].as_array().unwrap();
    // Passing checks first: the one that made GOOD.
    assert_eq!(results[0]["member"], "fake-good", "{j}");
    assert_eq!(results[0]["check"]["passed"], true);
    assert_eq!(results[0]["check"]["tail"][0], "checked");
    assert_eq!(results[0]["diff"]["files"], 1);
    assert_eq!(results[1]["check"]["passed"], false);
    // The fake judge ranks in reverse order of JUDGE.md: after the check, its order
    // decides between the two that fail.
    assert!(results
        .iter()
        .all(|r| r["judge_reason"] == "ranked by the fake judge"));
    assert_eq!(
        (results[1]["member"].as_str(), results[1]["rank"].as_u64()),
        (Some("fake-complete-2"), Some(2)),
        "{j}"
    );
    assert_eq!(results[2]["rank"], 3);
    // The judge's session and scratch worktree are gone.
    assert_eq!(agents(&env).len(), 3, "{:?}", env.tmux.sessions());
    assert!(!env
        .home
        .join(format!("tasks/app/.groups/{gid}/judge"))
        .exists());
    let shown = env
        .cmd_in(&env.repo, &["group", "show", &gid])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("MEMBER") && shown.contains("✓"), "{shown}");
    // Pick the winner and merge it: the others cancelled, each history says so.
    let p = env.ok(&["group", "pick", &gid, "/fake-good", "--merge"]);
    assert_eq!(p["group"]["picked"], "fake-good");
    let g = env.ok(&["group", "show", &gid]);
    let ms = members(&g);
    let state = |l: &str| {
        ms.iter().find(|m| m["label"] == l).unwrap()["state"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(state("fake-good"), "done");
    assert_eq!(state("fake-complete"), "cancelled");
    assert!(common::git(&env.repo, &["show", "main:GOOD"]).contains("good work"));
    let id = |l: &str| {
        ms.iter().find(|m| m["label"] == l).unwrap()["task"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let picked = env.history_events(&id("fake-good"), "group.picked");
    assert_eq!(picked[0]["note"], "picked");
    let lost = env.history_events(&id("fake-complete"), "group.not_picked");
    assert_eq!(lost[0]["note"], "not picked: /fake-good won");
    // The pool has its workspaces back.
    let pool = env.pool_json();
    let bound = pool["workspaces"]
        .as_object()
        .unwrap()
        .values()
        .filter(|w| w["status"] == "bound")
        .count();
    assert_eq!(bound, 0, "{pool}");
}

#[test]
fn a_hanging_check_is_killed_at_its_timeout_and_no_member_passing_is_said() {
    let env = env("2");
    // A check no other program on the machine runs (a benchmark's agents are `sleep 600`).
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let check = format!("sleep 600.{nanos:09}");
    env.ok(&[
        "project",
        "update",
        "--check-cmd",
        &check,
        "--check-timeout",
        "1s",
    ]);
    let (gid, _) = group(
        &env,
        &["slow", "anything", "--n", "2", "--harness", "fake-complete"],
    );
    wait_members(&env, &gid, "reviewing");
    let j = env.ok(&["group", "judge", &gid]);
    let results = j["judgement"]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for r in results {
        assert_eq!(r["check"]["timed_out"], true, "{r}");
        assert_eq!(r["check"]["passed"], false);
    }
    let notes = j["judgement"]["notes"].to_string();
    assert!(notes.contains("no member passes"), "{notes}");
    // Ranked anyway; equal diffs tie.
    assert!(notes.contains("tie at rank 1"), "{notes}");
    // The check is not left behind.
    let left = std::process::Command::new("pgrep")
        .args(["-f", &format!("^{}$", check.replace('.', "\\."))])
        .output()
        .unwrap();
    assert!(left.stdout.is_empty(), "a check outlived its timeout");
}

#[test]
fn bad_input_a_deleted_member_and_picking_a_member_still_working() {
    let env = env("3");
    let e = env.err(
        &[
            "task",
            "create",
            "big",
            "x",
            "--n",
            "11",
            "--harness",
            "fake-wait",
        ],
        "invalid_argument",
    );
    assert!(e.contains("--force"), "{e}");
    // A member whose program is missing: the group is refused whole, nothing recorded.
    env.append_config("[harness.missing]\ncommand = \"no-such-agent-xyz {prompt}\"\n");
    env.err(
        &[
            "task",
            "create",
            "mixed",
            "x",
            "--harness",
            "fake-wait",
            "--harness",
            "missing",
        ],
        "backend_not_found",
    );
    assert!(env.ok(&["task", "list"]).as_array().unwrap().is_empty());
    // --n 1 is an ordinary task: no group.
    let one = env.ok(&[
        "task",
        "create",
        "solo",
        "x",
        "--n",
        "1",
        "--harness",
        "fake-wait",
    ]);
    assert_eq!(one["branch"], "solo");
    assert!(one.get("group").is_none(), "{one}");
    assert!(env.ok(&["group", "list"]).as_array().unwrap().is_empty());
    env.ok(&["task", "cancel", "--yes", "solo"]);
    let (gid, v) = group(&env, &["w", "wait", "--n", "2", "--harness", "fake-wait"]);
    let ms = members(&v);
    // A member deleted behind orange's back is gone, not fatal.
    let gone = task_of(&ms[0]);
    env.ok(&["task", "cancel", "--yes", &gone]);
    std::fs::remove_dir_all(env.home.join("tasks/app").join(&gone)).unwrap();
    let g = env.ok(&["group", "show", &gid]);
    assert_eq!(members(&g)[0]["state"], "gone");
    let j = env.ok(&["group", "judge", &gid, "--now"]);
    assert_eq!(j["judgement"]["results"].as_array().unwrap().len(), 1);
    // Picking the member still working asks; without a terminal that is an error.
    let e = env.err(&["group", "pick", &gid, "2"], "invalid_argument");
    assert!(e.contains("still working") && e.contains("--yes"), "{e}");
    let p = env.ok(&["group", "pick", &gid, "2", "--yes"]);
    assert_eq!(p["group"]["picked"], "2");
    wait_for("the gone member not to break list", 5, || {
        env.json(&["group", "list"]).0
    });
}

/// A child process killed when the test ends, passed or not.
pub(crate) struct Killed(pub(crate) std::process::Child);

/// A monitor of `env`'s tmux server, looking every 300 ms, killed when the test ends.
pub(crate) fn monitor(env: &TaskEnv) -> Killed {
    Killed(
        env.cmd_in(&env.repo, &["monitor", "--interval", "300ms"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    )
}

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn judge_auto_judges_when_the_last_member_is_ready_and_tells_once() {
    let env = env("2");
    let _monitor = monitor(&env);
    let (gid, _) = group(
        &env,
        &[
            "api/auto",
            "do it",
            "--harness",
            "fake-complete",
            "--harness",
            "fake-good",
            "--judge",
            "auto",
        ],
    );
    let mut g = Value::Null;
    wait_for("the monitor to judge the group", 60, || {
        g = env.ok(&["group", "show", &gid]);
        g["notified"] == true
    });
    assert_eq!(g["judgement"]["results"][0]["member"], "fake-good", "{g}");
    // The group records that it told before it tells (at most once): the log line follows.
    let told = || {
        std::fs::read_to_string(env.home.join("orange.log"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("group api/auto judged: /fake-good wins (checks ✓"))
            .count()
    };
    wait_for("the judgement told", 10, || told() > 0);
    assert_eq!(told(), 1, "told once");
    // Later passes do not judge or tell again.
    common::holds_for(
        "no second judging",
        std::time::Duration::from_secs(2),
        || env.ok(&["group", "show", &gid])["judgement"]["at"] == g["judgement"]["at"],
    );
}

/// The judge is the REAL Claude Code, offline, against the stand-in Messages API: it is
/// started through the launcher in a scratch worktree, told to read JUDGE.md, and answers
/// with a ranking (its Bash tool writes RANKING.md) that orders the members after the
/// checks.
#[test]
fn the_real_claude_code_judges_a_group_against_the_stand_in_api() {
    use crate::real_claude::{claude_home, claude_installed, trust, Home};
    use common::standin::{Reply, StandIn};
    if !claude_installed() {
        return;
    }
    let base = common::Env::with_repo("app");
    let api = StandIn::start(vec![
        Reply::bash(
            "printf '/fake-complete-2: smaller of the two that fail\\n/fake-complete: fails its check\\n/fake-good: passes the check\\n' > RANKING.md",
        ),
        Reply::text("ranked"),
    ]);
    let dir = base.root().join("claude-home");
    let root = orange::adapters::shell::is_root();
    let extra = claude_home(&dir, &api.base_url(), Home::SET_UP, root);
    let env = common::rig::agent_env(base, &extra, &["--pool-size", "3"]);
    let agent = common::fixtures().join("fake-agent.sh");
    let cfg: String = ["complete", "good"]
        .iter()
        .map(|m| {
            format!(
                "[harness.fake-{m}]\ncommand = \"sh {} {m} {{prompt}}\"\n",
                agent.display()
            )
        })
        .collect();
    std::fs::write(env.home.join("config.toml"), cfg).unwrap();
    env.ok(&["project", "update", "--check-cmd", "test -f GOOD"]);
    trust(&env);
    let (gid, _) = group(
        &env,
        &[
            "judged",
            "make it good",
            "--harness",
            "fake-complete:2",
            "--harness",
            "fake-good",
        ],
    );
    wait_members(&env, &gid, "reviewing");
    let j = env.ok(&[
        "group",
        "judge",
        &gid,
        "--agent",
        "claude",
        "--timeout",
        "120s",
        "--wait",
    ]);
    let jd = &j["judgement"];
    assert!(jd.get("agent_error").is_none(), "{j}");
    let order: Vec<&str> = jd["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["member"].as_str().unwrap())
        .collect();
    // The check first (only fake-good passes), then the judge's order.
    assert_eq!(
        order,
        ["fake-good", "fake-complete-2", "fake-complete"],
        "{j}"
    );
    assert_eq!(
        jd["results"][1]["judge_reason"],
        "smaller of the two that fail"
    );
    assert_eq!(jd["results"][0]["judge_place"], 3);
    // What the judge was told: to read JUDGE.md, which held the prompt and the diffs.
    let turns = api.turns();
    assert!(
        turns[0].last_user_text().contains("JUDGE.md"),
        "{}",
        turns[0].last_user_text()
    );
    // Its session and scratch worktree are gone.
    assert_eq!(agents(&env).len(), 3, "{:?}", agents(&env));
    assert!(!env
        .home
        .join(format!("tasks/app/.groups/{gid}/judge"))
        .exists());
}

/// Each group command killed at each of its fault points (`ORANGE_CRASH_AT`): the next
/// command works, and running the command again finishes what the killed one began.
#[test]
fn group_commands_killed_at_their_fault_points_leave_state_the_next_command_finishes() {
    let env = env("4");
    let crash = |point: &str, args: &[&str]| {
        let out = env
            .cmd_in(&env.repo, args)
            .env("ORANGE_CRASH_AT", point)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} did not stop at {point}");
        assert!(env.json(&["group", "list"]).0, "group list after {point}");
        assert!(env.json(&["task", "list"]).0, "task list after {point}");
    };
    // Killed once the record is written: its members are not created, said so.
    crash(
        "group.recorded",
        &[
            "task",
            "create",
            "k1",
            "x",
            "--n",
            "2",
            "--harness",
            "fake-wait",
        ],
    );
    let g = env.ok(&["group", "show", "k1"]);
    assert!(
        members(&g).iter().all(|m| m["state"] == "not-created"),
        "{g}"
    );
    env.ok(&["group", "cancel", "k1", "--yes"]);
    // Killed once the members are recorded, before any starts: each is a member,
    // pending (`task spawn` starts it).
    let create = |b: &str| -> Vec<String> {
        [
            "task",
            "create",
            b,
            "x",
            "--n",
            "2",
            "--harness",
            "fake-wait",
        ]
        .map(String::from)
        .to_vec()
    };
    let states = |b: &str| -> Vec<String> {
        let g = env.ok(&["group", "show", b]);
        members(&g)
            .iter()
            .map(|m| m["state"].as_str().unwrap().to_string())
            .collect()
    };
    let a = create("k2");
    crash(
        "group.members",
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert_eq!(states("k2"), ["pending", "pending"]);
    let first = task_of(&members(&env.ok(&["group", "show", "k2"]))[0]);
    env.ok(&["task", "spawn", &first]);
    // Killed with the workspaces bound (no branch checked out, no session yet), or with
    // the sessions started but not recorded: the next command (`group list` in `crash`)
    // gives the workspaces back and the queue starts the members, or adopts their
    // sessions. Either way both work, each in its own workspace, one session each.
    for (b, point) in [("k5", "group.bound"), ("k6", "group.started")] {
        let a = create(b);
        crash(point, &a.iter().map(String::as_str).collect::<Vec<_>>());
        env.ok(&["task", "list"]);
        assert_eq!(states(b), ["working", "working"], "after {point}");
        let mut ws: Vec<String> = env
            .ok(&["task", "list"])
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["branch"].as_str().unwrap().starts_with(&format!("{b}/")))
            .map(|t| t["workspace"].as_str().unwrap().to_string())
            .collect();
        ws.dedup();
        assert_eq!(ws.len(), 2, "after {point}: {ws:?}");
        let sessions: Vec<String> = agents(&env)
            .into_iter()
            .filter(|s| s.starts_with(&format!("app/{b}/")))
            .collect();
        assert_eq!(sessions.len(), 2, "after {point}: {sessions:?}");
        env.ok(&["group", "cancel", b, "--yes"]);
    }
    // Cancel killed after it was recorded: run again, it cancels what is left.
    crash("group.cancel.recorded", &["group", "cancel", "k2", "--yes"]);
    assert_eq!(
        members(&env.ok(&["group", "show", "k2"]))[0]["state"],
        "working"
    );
    env.ok(&["group", "cancel", "k2", "--yes"]);
    assert_eq!(
        members(&env.ok(&["group", "show", "k2"]))[0]["state"],
        "cancelled"
    );
    // Pick killed after it was recorded, or after the histories: run again, it finishes
    // (and tells each member once).
    let v = env.ok(&[
        "task",
        "create",
        "k3",
        "x",
        "--n",
        "2",
        "--harness",
        "fake-wait",
    ]);
    let other = task_of(&members(&v)[1]);
    // Judge killed once its agent's run is recorded (no session yet), or once the agent
    // started: the next `group judge` reads what there is (no answer, said so; or the
    // agent's ranking) and nothing of the judge is left running.
    let judge = ["group", "judge", "k3", "--now", "--agent", "fake-judge"];
    crash("group.judge.recorded", &judge);
    let j = env.ok(&["group", "judge", "k3"]);
    assert!(j["judgement"].get("agent_run").is_none(), "{j}");
    assert!(
        j["judgement"]["agent_error"]
            .as_str()
            .is_some_and(|e| e.contains("without writing")),
        "{j}"
    );
    crash("group.judge.started", &judge);
    wait_for("the killed judge's ranking read", 30, || {
        let j = env.ok(&["group", "judge", "k3"]);
        j["judgement"].get("agent_run").is_none()
            && j["judgement"]["results"][0]["judge_reason"] == "ranked by the fake judge"
    });
    assert!(
        !env.tmux.sessions().iter().any(|s| s.ends_with("/judge")),
        "{:?}",
        env.tmux.sessions()
    );
    for point in ["group.pick.recorded", "group.pick.told"] {
        crash(point, &["group", "pick", "k3", "1", "--yes"]);
    }
    env.ok(&["group", "pick", "k3", "1", "--yes"]);
    let g = env.ok(&["group", "show", "k3"]);
    assert_eq!(members(&g)[1]["state"], "cancelled", "{g}");
    assert_eq!(env.history_events(&other, "group.not_picked").len(), 1);
    // Another member cannot be picked now.
    env.err(&["group", "pick", "k3", "2", "--yes"], "invalid_transition");
}
