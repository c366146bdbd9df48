//! Judging a group: by the check, the diffs and a judge agent (a fake one, then the real
//! Claude Code against the stand-in API), a check that hangs, judged by the monitor when
//! the last member is ready; one picked and merged, the rest cancelled.

use crate::common;

use common::wait_for;
use serde_json::Value;

use super::{agents, env, group, members, monitor, task_of, wait_members};

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
