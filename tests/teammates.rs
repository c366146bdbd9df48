//! Claude Code's agent teams split the task's window into teammate panes (2.1.330:
//! `split-window -d -t <lead pane> -h -l 70%`, each titled with the teammate's name; see
//! docs/agents.md). The task stays bound to its lead pane by id — `task send` and nudges
//! type into the lead, never into a teammate, even when a teammate's pane is the active
//! one — and the teammates show under the task, each with the state its screen tells.
//! A real claude splits only when a model orchestrates a team, so the teammates here are
//! panes this test splits off the lead's window, running programs that draw what a
//! claude teammate shows (a turn in progress, an approval prompt).

use crate::common::{self, fixtures, TaskEnv};
use serde_json::Value;
use std::path::Path;

/// Start a teammate as Claude Code 2.1.330 does: split the lead's window with `cat` as a
/// placeholder (the new pane becomes the active one), title it `name`, then respawn it
/// with the teammate's command — here `script` in `cwd`, given claude's teammate flags
/// (`--agent-id`, `--agent-name`, `--team-name`); the new pane's id.
fn teammate(env: &TaskEnv, lead: &str, cwd: &Path, name: &str, script: &str) -> String {
    let pane = env.tmux.ok(&[
        "split-window",
        "-t",
        lead,
        "-c",
        cwd.to_str().unwrap(),
        "-P",
        "-F",
        "#{pane_id}",
        "--",
        "cat",
    ]);
    env.tmux.ok(&["select-pane", "-t", &pane, "-T", name]);
    let id = format!("{name}@team");
    env.tmux.ok(&[
        "respawn-pane",
        "-k",
        "-t",
        &pane,
        "-c",
        cwd.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        script,
        "sh",
        "--agent-id",
        &id,
        "--agent-name",
        name,
        "--team-name",
        "team",
    ]);
    pane
}

#[test]
fn teammates_show_under_the_task_and_keystrokes_reach_only_the_lead() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    std::fs::write(
        env.home.join("config.toml"),
        format!(
            "[harness.claude]\ncommand = \"sh {}\"\n",
            fixtures().join("lead-agent.sh").display()
        ),
    )
    .unwrap();
    let t = env.ok(&[
        "task",
        "create",
        "team",
        "lead the team",
        "--harness",
        "claude",
    ]);
    let id = t["id"].as_str().unwrap().to_string();
    let lead = t["tmux_pane_id"].as_str().unwrap().to_string();
    let ws = env.ws_path(t["workspace"].as_str().unwrap());
    common::wait_for("the lead's prompt", 20, || {
        env.tmux
            .ok(&["capture-pane", "-p", "-t", &lead])
            .contains("lead ready")
    });
    let busy = teammate(
        &env,
        &lead,
        &ws,
        "researcher",
        "printf '* Researching... (esc to interrupt)\\n'; exec cat > researcher.log",
    );
    let asks = teammate(
        &env,
        &lead,
        &ws,
        "tester",
        "printf 'Bash command\\n  rm -rf build\\nDo you want to proceed?\\n> 1. Yes\\n  2. No\\nEsc to cancel\\n'; exec cat > tester.log",
    );
    // A shell the person splits off beside them is no teammate.
    let shell = env.tmux.ok(&[
        "split-window",
        "-d",
        "-t",
        &lead,
        "-P",
        "-F",
        "#{pane_id}",
        "--",
        "sh",
        "-c",
        "printf '* Compiling... (esc to interrupt)\\n'; exec cat",
    ]);
    common::wait_for("the teammates' screens", 20, || {
        env.tmux
            .ok(&["capture-pane", "-p", "-t", &shell])
            .contains("esc to interrupt")
            && env
                .tmux
                .ok(&["capture-pane", "-p", "-t", &asks])
                .contains("Esc to cancel")
            && env
                .tmux
                .ok(&["capture-pane", "-p", "-t", &busy])
                .contains("esc to interrupt")
    });
    // A pass, on a clock a minute ahead: the lead has been quiet long enough to be waiting.
    let out = env
        .cmd_in(&env.repo, &["monitor", "--once"])
        .env("ORANGE_CLOCK_SKEW", "1m")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v = env.task(&id);
    let mates = v["teammates"].as_array().cloned().unwrap_or_default();
    assert_eq!(mates.len(), 2, "{v}");
    let by = |name: &str| -> Value {
        mates
            .iter()
            .find(|m| m["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no teammate {name}: {v}"))
    };
    assert_eq!(by("researcher")["state"], "working", "{v}");
    assert_eq!(by("researcher")["pane_id"], busy.as_str(), "{v}");
    assert_eq!(by("tester")["state"], "blocked", "{v}");
    assert_eq!(by("tester")["detail"], "approval", "{v}");
    // Still bound to its lead pane by id.
    assert_eq!(v["tmux_pane_id"], lead.as_str(), "{v}");
    // Text: child rows under the task.
    let show = env
        .cmd_in(&env.repo, &["task", "show", &id])
        .output()
        .unwrap();
    let show = String::from_utf8_lossy(&show.stdout).into_owned();
    assert!(show.contains("└ researcher: working"), "{show}");
    assert!(show.contains("└ tester: blocked (approval)"), "{show}");
    // The sidebar: a row each under the agent.
    let frame = env
        .cmd_in(
            &env.repo,
            &["sidebar", "--once", "--task", &id, "--width", "60"],
        )
        .output()
        .unwrap();
    let frame = String::from_utf8_lossy(&frame.stdout).into_owned();
    assert!(frame.contains("└ researcher: working"), "{frame}");
    assert!(frame.contains("└ tester: blocked (approval)"), "{frame}");
    // The teammate "tester" is the active pane: task send still types into the lead.
    let sent = env.ok(&["task", "send", &id, "hello lead"]);
    assert_eq!(sent["outcome"], "sent", "{sent}");
    common::wait_for("the lead to get the message", 20, || {
        std::fs::read_to_string(ws.join("lead.log"))
            .unwrap_or_default()
            .contains("hello lead")
    });
    env.ok(&["task", "nudge", &id]);
    common::wait_for("the lead to get the nudge", 20, || {
        std::fs::read_to_string(ws.join("lead.log"))
            .unwrap_or_default()
            .contains("Please continue")
    });
    // Each teammate's program reads what is typed into its pane (into its log, which it
    // made when it started): nothing reached them.
    for log in ["researcher.log", "tester.log"] {
        let got = std::fs::read_to_string(ws.join(log))
            .unwrap_or_else(|e| panic!("{log}: the teammate never started there: {e}"));
        assert!(got.is_empty(), "{log} got keystrokes: {got:?}");
    }
    // A teammate that leaves: its row goes on the next pass.
    env.tmux.ok(&["kill-pane", "-t", &busy]);
    env.ok(&["monitor", "--once"]);
    let v = env.task(&id);
    let mates = v["teammates"].as_array().cloned().unwrap_or_default();
    assert_eq!(mates.len(), 1, "{v}");
    assert_eq!(mates[0]["name"], "tester", "{v}");
}

/// A sidebar beside the agent is no teammate, and the running monitor learns it once: its
/// passes after the first make the one tmux call of a pass with nothing else in the
/// window.
#[test]
fn a_sidebar_is_no_teammate_and_costs_one_look_once() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let t = env.ok(&[
        "task",
        "create",
        "mates/side",
        "Wait",
        "--harness",
        "fake-wait",
    ]);
    let id = common::id(&t);
    env.wait_session(&id, "live");
    let lead = env.task(&id)["tmux_pane_id"].as_str().unwrap().to_string();
    // A pane marked as the plugin marks a sidebar.
    let side = env.tmux.ok(&[
        "split-window",
        "-d",
        "-t",
        &lead,
        "-P",
        "-F",
        "#{pane_id}",
        "sleep",
        "600",
    ]);
    env.tmux
        .ok(&["set-option", "-p", "-t", &side, "@orange_sidebar", "1"]);
    let (bin, log) = common::counting_tmux(&env.root());
    let out = env
        .cmd_in(&env.repo, &["monitor", "--passes", "4", "--json"])
        .env("PATH", format!("{}:{}", bin.display(), env.path))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let calls = common::calls(&log);
    let looks = calls
        .iter()
        .filter(|c| c.contains("#{@orange_sidebar}"))
        .count();
    assert_eq!(
        looks, 1,
        "one look at the window, the first pass: {calls:?}"
    );
    let t = env.task(&id);
    assert!(
        t.get("teammates")
            .is_none_or(|m| m.as_array().is_none_or(|a| a.is_empty())),
        "{t}"
    );
}
