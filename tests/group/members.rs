//! A group's members: each in its own workspace and session (the last queued when the
//! pool is short), their sessions made in one tmux call, a project's missing excludes
//! added once; bad input, a member deleted, a member picked while still working.

use crate::common;

use common::wait_for;
use serde_json::Value;

use super::{agents, env, group, members, task_of, wait_members};

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
