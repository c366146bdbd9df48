//! Groups against bad state and commands that meet: a pick of a member whose work is gone
//! or of a cancelled group, a judge agent at work when its group is cancelled or picked, a
//! plain judging beside one that starts a judge agent, a member whose record cannot be
//! read. Real git, a real tmux server, agents that wait (`fake-wait`).

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use crate::group::monitor;
use common::{wait_for, TaskEnv};
use serde_json::Value;

/// A group of `n` waiting agents on base branch `base` in a fresh environment (pool of
/// `n`): the environment, the group's id and its members' task ids.
fn group_of(n: usize, base: &str) -> (TaskEnv, String, Vec<String>) {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", &n.to_string()]);
    let v = env.ok(&[
        "task",
        "create",
        base,
        "do it",
        "--n",
        &n.to_string(),
        "--harness",
        "fake-wait",
    ]);
    let gid = v["group"]["id"].as_str().unwrap().to_string();
    let ids = v["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["task"]["id"].as_str().unwrap().to_string())
        .collect();
    (env, gid, ids)
}

fn show(env: &TaskEnv, gid: &str) -> Value {
    env.ok(&["group", "show", gid])
}

/// The project's check, for two judgings side by side: in the one run with `HOLD` set it
/// touches `held` and waits while `hold` exists, then says `by-plain`; in any other it
/// says `by-agent`. The paths of `hold` (made here) and `held`.
fn hold_checks(env: &TaskEnv) -> (std::path::PathBuf, std::path::PathBuf) {
    let root = env.root();
    let (hold, held) = (root.join("hold"), root.join("held"));
    std::fs::write(&hold, "").unwrap();
    let check = format!(
        "if [ -n \"$HOLD\" ]; then touch '{}'; while [ -e '{}' ]; do sleep 0.05; done; echo by-plain; else echo by-agent; fi",
        held.display(),
        hold.display()
    );
    env.ok(&["project", "update", "--check-cmd", &check]);
    (hold, held)
}

/// `group judge G --now --agent fake-wait`: a judge agent that never answers, at work
/// until its time (10 minutes) is up; its session's name.
fn judge_agent_at_work(env: &TaskEnv, gid: &str) -> String {
    let v = env.ok(&[
        "group",
        "judge",
        gid,
        "--now",
        "--agent",
        "fake-wait",
        "--timeout",
        "10m",
    ]);
    v["judgement"]["agent_run"]["session"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Wait for a command started in the background; it must have succeeded.
fn succeeds(child: std::process::Child) {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

fn alive(env: &TaskEnv, session: &str) -> bool {
    env.tmux.sessions().iter().any(|s| s == session)
}

#[test]
fn a_pick_of_a_cancelled_member_or_a_cancelled_group_is_refused_and_changes_nothing() {
    let (env, gid, ids) = group_of(3, "w");
    env.ok(&["task", "cancel", "--yes", &ids[0]]);
    let e = env.err(&["group", "pick", &gid, "1", "--yes"], "invalid_transition");
    assert!(e.contains("/1 is cancelled"), "{e}");
    // Nothing recorded, the others still at work.
    let g = show(&env, &gid);
    assert!(g["picked"].is_null(), "{g}");
    for s in ["app/w/2", "app/w/3"] {
        assert!(alive(&env, s), "{s} was stopped: {g}");
    }
    // A cancelled group: nothing to pick, and no pick recorded for a later look.
    env.ok(&["group", "cancel", &gid, "--yes"]);
    let e = env.err(
        &["group", "pick", &gid, "2", "--merge", "--yes"],
        "invalid_transition",
    );
    assert!(e.contains("was cancelled"), "{e}");
    let g = show(&env, &gid);
    assert!(g["picked"].is_null(), "{g}");
}

#[test]
fn cancelling_or_picking_a_group_stops_its_judge_agent_at_work() {
    for pick in [false, true] {
        let (env, gid, _) = group_of(2, "j");
        let session = judge_agent_at_work(&env, &gid);
        wait_for("the judge agent's session", 20, || alive(&env, &session));
        match pick {
            true => env.ok(&["group", "pick", &gid, "1", "--yes"]),
            false => env.ok(&["group", "cancel", &gid, "--yes"]),
        };
        assert!(
            !alive(&env, &session),
            "the judge of a group that is over runs on"
        );
        let g = show(&env, &gid);
        let j = &g["judgement"];
        assert!(j["agent_run"].is_null(), "{g}");
        assert!(
            j["agent_error"]
                .as_str()
                .is_some_and(|e| e.contains("stopped")),
            "{g}"
        );
    }
}

#[test]
fn a_plain_judging_beside_one_that_starts_a_judge_agent_keeps_the_agent_in_the_record() {
    let (env, gid, _) = group_of(2, "p");
    let (hold, held) = hold_checks(&env);
    let plain = env
        .cmd_in(&env.repo, &["group", "judge", &gid, "--now", "--json"])
        .env("HOLD", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the plain judging's check to start", 20, || held.exists());
    // Meanwhile a judging with a judge agent is recorded and started.
    let session = judge_agent_at_work(&env, &gid);
    std::fs::remove_file(&hold).unwrap();
    succeeds(plain);
    // The agent still at work is still in the record: collected or stopped later.
    let g = show(&env, &gid);
    assert_eq!(g["judgement"]["agent_run"]["session"], session, "{g}");
    assert!(alive(&env, &session));
    env.ok(&["group", "cancel", &gid, "--yes"]);
    assert!(!alive(&env, &session));
}

/// The other order: the plain judging saves while the judge agent's command is between
/// recording its run and starting it; the agent's start then keeps the plain judging's
/// results (the newer), not the ones it read before.
#[test]
fn a_judge_agent_started_after_a_plain_judging_saved_keeps_the_newer_results() {
    let (env, gid, _) = group_of(2, "q");
    let root = env.root();
    let (hold, held) = hold_checks(&env);
    let spawn = |args: &[&str], envs: &[(&str, &str)]| {
        let mut c = env.cmd_in(&env.repo, args);
        for (k, v) in envs {
            c.env(k, v);
        }
        c.stdout(std::process::Stdio::piped()).spawn().unwrap()
    };
    let plain = spawn(
        &["group", "judge", &gid, "--now", "--json"],
        &[("HOLD", "1")],
    );
    wait_for("the plain judging's check to start", 20, || held.exists());
    let pauses = root.join("pauses");
    std::fs::create_dir_all(&pauses).unwrap();
    let agent = spawn(
        &[
            "group",
            "judge",
            &gid,
            "--now",
            "--agent",
            "fake-wait",
            "--timeout",
            "10m",
            "--json",
        ],
        &[
            ("ORANGE_PAUSE_AT", "group.judge.recorded"),
            ("ORANGE_PAUSE_DIR", pauses.to_str().unwrap()),
        ],
    );
    wait_for("the judge agent's run recorded", 20, || {
        pauses.join("group.judge.recorded.paused").exists()
    });
    std::fs::remove_file(&hold).unwrap();
    succeeds(plain);
    std::fs::write(pauses.join("group.judge.recorded.go"), "").unwrap();
    succeeds(agent);
    let g = show(&env, &gid);
    let j = &g["judgement"];
    assert!(j["agent_run"]["session_id"].is_string(), "{g}");
    for r in j["results"].as_array().unwrap() {
        assert_eq!(r["check"]["tail"], serde_json::json!(["by-plain"]), "{g}");
    }
    env.ok(&["group", "cancel", &gid, "--yes"]);
}

/// A member the creating command never got to (killed when the group was recorded) is
/// `not-created`, whatever another task's record holds; the group cancels.
#[test]
fn a_member_not_created_stays_so_beside_another_tasks_corrupt_record() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "2"]);
    let t = env.ok(&["task", "create", "other", "x", "--harness", "fake-wait"]);
    let out = env
        .cmd_in(
            &env.repo,
            &[
                "task",
                "create",
                "k",
                "do it",
                "--n",
                "2",
                "--harness",
                "fake-wait",
            ],
        )
        .env("ORANGE_CRASH_AT", "group.recorded")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let json = env
        .home
        .join("tasks/app")
        .join(t["id"].as_str().unwrap())
        .join("task.json");
    std::fs::write(&json, "{").unwrap();
    let g = show(&env, "k");
    for m in g["members"].as_array().unwrap() {
        assert_eq!(m["state"], "not-created", "{g}");
    }
    env.ok(&["group", "cancel", "k", "--yes"]);
}

#[test]
fn a_member_whose_record_cannot_be_read_is_not_gone_and_cancel_passes_over_no_one() {
    let (env, gid, ids) = group_of(2, "c");
    let json = env.home.join("tasks/app").join(&ids[0]).join("task.json");
    let good = std::fs::read(&json).unwrap();
    std::fs::write(&json, "{\"id\":").unwrap();
    let g = show(&env, &gid);
    let m = &g["members"][0];
    assert_eq!(m["state"], "unreadable", "{g}");
    assert_eq!(m["task"], ids[0].as_str(), "{g}");
    assert!(m["error"].as_str().unwrap().contains("task.json"), "{g}");
    // Cancel and pick refuse with the record's own error; nothing is stopped.
    let e = env.err(&["group", "cancel", &gid, "--yes"], "state_corrupt");
    assert!(e.contains("task.json"), "{e}");
    env.err(&["group", "pick", &gid, "2", "--yes"], "state_corrupt");
    assert!(alive(&env, "app/c/1") && alive(&env, "app/c/2"));
    let g = show(&env, &gid);
    assert!(!g["cancelled"].as_bool().unwrap_or(false), "{g}");
    // Mended, the group cancels whole.
    std::fs::write(&json, good).unwrap();
    env.ok(&["group", "cancel", &gid, "--yes"]);
    wait_for("the members' sessions to end", 20, || {
        !alive(&env, "app/c/1") && !alive(&env, "app/c/2")
    });
}

#[test]
fn one_corrupt_group_record_hides_no_other_group() {
    let env = TaskEnv::new();
    let groups = env.home.join("tasks/app/.groups");
    std::fs::create_dir_all(&groups).unwrap();
    std::fs::write(groups.join("bad123.json"), "{").unwrap();
    let _monitor = monitor(&env);
    let gid = auto_group(&env, "true");
    // The monitor still judges the group that can be read.
    let mut g = Value::Null;
    wait_for("the monitor to judge the readable group", 60, || {
        g = env.ok(&["group", "show", "auto"]);
        g["notified"] == true
    });
    assert_eq!(g["id"], gid.as_str());
    // The corrupt one, named, is its error; listing them all says which file.
    let e = env.err(&["group", "show", "bad123"], "state_corrupt");
    assert!(e.contains("bad123.json"), "{e}");
    // A name that is no group's is that, not another record's corruption.
    let e = env.err(&["group", "show", "nosuch"], "invalid_argument");
    assert!(e.contains("no group"), "{e}");
    env.err(&["group", "list"], "state_corrupt");
    // `task list` still puts the members under their group's row.
    let list = || {
        let out = env.cmd_in(&env.repo, &["task", "list"]).output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        (String::from_utf8_lossy(&out.stdout).into_owned(), said)
    };
    let (out, said) = list();
    assert!(
        out.lines()
            .any(|l| l.starts_with(gid.as_str()) && l.contains(" group ")),
        "no parent row: {out}"
    );
    assert!(said.is_empty(), "no listed task is bad123's: {said}");
    // A group of listed tasks whose record breaks, with the record's own text in its error:
    // said on stderr, without its control characters.
    let other = env.ok(&[
        "task",
        "create",
        "other",
        "x",
        "--n",
        "2",
        "--harness",
        "fake-wait",
    ]);
    let other = other["group"]["id"].as_str().unwrap().to_string();
    std::fs::write(
        groups.join(format!("{other}.json")),
        r#"{"judge": "\u001b]0;PWNED\u0007x"}"#,
    )
    .unwrap();
    let (_, said) = list();
    assert!(
        said.contains(&format!("group {other} is not shown")) && said.contains(".json"),
        "{said}"
    );
    assert!(!said.contains("bad123"), "{said}");
    assert!(!said.trim_end().chars().any(char::is_control), "{said:?}");
}

/// A `--judge auto` group of two `fake-complete` members (ready for review at once), with
/// the project's check `check`; its id once both are ready.
fn auto_group(env: &TaskEnv, check: &str) -> String {
    env.add_project(&["--pool-size", "2"]);
    env.ok(&["project", "update", "--check-cmd", check]);
    let v = env.ok(&[
        "task",
        "create",
        "auto",
        "do it",
        "--n",
        "2",
        "--harness",
        "fake-complete",
        "--judge",
        "auto",
    ]);
    let gid = v["group"]["id"].as_str().unwrap().to_string();
    wait_for("both members ready for review", 30, || {
        show(env, &gid)["members"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["state"] == "reviewing")
    });
    gid
}

/// Monitor passes two minutes on (`ORANGE_CLOCK_SKEW`: a judging that died is taken for
/// one a minute after it began) until `done` says so.
fn passes_until(env: &TaskEnv, what: &str, done: impl Fn() -> bool) {
    wait_for(what, 60, || {
        skewed_pass(env);
        done()
    });
}

/// One monitor pass two minutes on.
fn skewed_pass(env: &TaskEnv) {
    pass_at(env, 2);
}

/// One monitor pass `minutes` on (a judging the monitor started at an earlier skew is
/// stamped on its clock then).
fn pass_at(env: &TaskEnv, minutes: u32) {
    let out = env
        .cmd_in(&env.repo, &["monitor", "--once", "--json"])
        .env("ORANGE_CLOCK_SKEW", format!("{minutes}m"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// How many times orange.log says the group was judged and told.
fn told(env: &TaskEnv) -> usize {
    std::fs::read_to_string(env.home.join("orange.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("group auto judged:"))
        .count()
}

#[test]
fn an_automatic_judging_killed_before_its_judgement_is_started_again() {
    let env = TaskEnv::new();
    let killed = env.root().join("killed");
    // The first judging's check kills its `group judge` as SIGKILL would; later ones pass.
    let check = format!(
        "if [ ! -e '{k}' ]; then touch '{k}'; kill -9 $PPID; fi; true",
        k = killed.display()
    );
    let gid = auto_group(&env, &check);
    env.ok(&["monitor", "--once"]);
    wait_for("the first judging to be killed", 30, || killed.exists());
    passes_until(&env, "a later pass to judge the group again", || {
        show(&env, &gid)["notified"] == true
    });
    let g = show(&env, &gid);
    assert!(
        g["judgement"]["results"]
            .as_array()
            .is_some_and(|r| r.len() == 2),
        "{g}"
    );
    let log = std::fs::read_to_string(env.home.join("orange.log")).unwrap();
    assert!(log.contains("judging again"), "{log}");
    wait_for("the judgement told", 10, || told(&env) > 0);
    assert_eq!(told(&env), 1);
}

#[test]
fn an_automatic_judging_killed_before_it_told_is_told_once_later() {
    let env = TaskEnv::new();
    let gid = auto_group(&env, "true");
    // Its judgement saved, then killed before it tells (the judge inherits the fault).
    let out = env
        .cmd_in(&env.repo, &["monitor", "--once", "--json"])
        .env("ORANGE_CRASH_AT", "group.judged")
        .output()
        .unwrap();
    assert!(out.status.success());
    wait_for("the judgement recorded", 30, || {
        show(&env, &gid)["judgement"].is_object()
    });
    assert_eq!(told(&env), 0);
    passes_until(&env, "a later pass to tell it", || told(&env) > 0);
    assert_eq!(show(&env, &gid)["notified"], true);
    // Told once: later passes, as late, say nothing more.
    for _ in 0..2 {
        skewed_pass(&env);
    }
    assert_eq!(told(&env), 1);
}

#[test]
fn a_judge_agent_asked_after_an_automatic_verdict_is_told_too() {
    let env = TaskEnv::new();
    let agent = common::fixtures().join("fake-agent.sh");
    env.append_config(&format!(
        "[harness.fake-judge]\ncommand = \"sh {} judge {{prompt}}\"\n",
        agent.display()
    ));
    let _monitor = monitor(&env);
    let gid = auto_group(&env, "true");
    wait_for("the automatic verdict told", 60, || told(&env) == 1);
    // A judge agent asked for afterwards: the monitor reads its answer and tells it.
    env.ok(&["group", "judge", &gid, "--agent", "fake-judge"]);
    wait_for("the judge agent's verdict told", 60, || told(&env) == 2);
    let g = show(&env, &gid);
    assert!(g["judgement"]["agent_run"].is_null(), "{g}");
    assert!(
        g["judgement"]["results"][0]["judge_reason"]
            .as_str()
            .is_some_and(|r| r.contains("fake judge")),
        "{g}"
    );
    let log = std::fs::read_to_string(env.home.join("orange.log")).unwrap();
    let last = log
        .lines()
        .rfind(|l| l.contains("group auto judged:"))
        .unwrap();
    assert!(last.contains("judge:"), "{last}");
}

#[test]
fn an_automatic_judging_that_always_dies_is_started_three_times_then_left_to_a_person() {
    let env = TaskEnv::new();
    let runs = env.root().join("runs");
    // Every judging's check kills its `group judge`, and counts it.
    let check = format!("echo >> '{}'; kill -9 $PPID", runs.display());
    let gid = auto_group(&env, &check);
    let attempts = || show(&env, &gid)["auto_attempts"].as_u64().unwrap_or(0);
    // Each pass two minutes after the one before: every judging started is long dead.
    let mut minutes = 0;
    wait_for("three attempts", 60, || {
        minutes += 2;
        pass_at(&env, minutes);
        attempts() == 3
    });
    let count = || std::fs::read_to_string(&runs).map_or(0, |s| s.lines().count());
    wait_for("the third judging's check", 30, || count() >= 3);
    for _ in 0..3 {
        minutes += 2;
        pass_at(&env, minutes);
    }
    assert_eq!(attempts(), 3);
    let g = show(&env, &gid);
    assert!(g["judgement"].is_null(), "{g}");
    let log = std::fs::read_to_string(env.home.join("orange.log")).unwrap();
    assert_eq!(log.matches("judging again").count(), 2, "{log}");
}

#[test]
fn a_judging_killed_leaves_no_check_at_work() {
    let (env, gid, _) = group_of(2, "w");
    let pids = env.root().join("pids");
    std::fs::create_dir(&pids).unwrap();
    // Each member's check starts a long test run and waits for it.
    let check = format!("sleep 300 & echo $! > '{}'/$$; wait", pids.display());
    env.ok(&["project", "update", "--check-cmd", &check]);
    let mut judge = env.cmd(&["group", "judge", &gid, "--now"]).spawn().unwrap();
    let started = || {
        std::fs::read_dir(&pids)
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .filter_map(|s| s.trim().parse::<i32>().ok())
            .collect::<Vec<_>>()
    };
    wait_for("both checks at work", 30, || started().len() == 2);
    judge.kill().unwrap();
    judge.wait().unwrap();
    // Killed with their judge (reaped by init, or zombies for a moment).
    let ended = |pid: &i32| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        stat.is_empty() || stat.contains(") Z")
    };
    wait_for("the checks to end with their judge", 10, || {
        started().iter().all(ended)
    });
}
