//! Claude beyond one local task: on a remote host over ssh, in the bwrap sandbox, its
//! token use (a sub-agent's too), and an agent team's teammate under its task.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::standin::Reply;
use common::{Env, TaskEnv};
use serde_json::{json, Value};

use super::{
    claude, claude_in_repo, claude_installed, claude_with, id_of, is_root, Home, PATIENCE,
};

/// Issue 13 with the real client: Claude Code runs in a task on a "remote host" (the rig's
/// home, tmux server and stand-in API, behind a real sshd on 127.0.0.1), started from this
/// machine's orange over ssh; what this machine's status shows follows what claude does
/// there, through the local monitor's one fetch per pass.
#[test]
fn a_remote_claude_started_over_ssh_is_seen_working_then_waiting_here() {
    if !claude_installed() {
        return;
    }
    let rig = claude(
        "remote",
        Home::SET_UP,
        vec![
            // Long enough for the passes here to see it while it is true (a pass is one
            // ssh call, well under a second).
            Reply::slow(
                Duration::from_secs(8),
                Reply::bash("echo remote > remote-was-here.txt"),
            ),
            Reply::text("Written."),
        ],
    );
    let local = TaskEnv::from_env(Env::with_repo("here"));
    let Some(sshd) = common::sshd::Sshd::start(&local.root()) else {
        return;
    };
    // The host's orange with the environment a person's remote profile would give it.
    let wrapper = local.root().join("orange-there");
    let mut script = String::from("#!/bin/sh\n");
    for (k, v) in &rig.env.extra {
        script.push_str(&format!("export {k}='{v}'\n"));
    }
    script.push_str(&format!(
        "export PATH='{}'\nexec '{}' \"$@\"\n",
        rig.env.path,
        common::bin().display()
    ));
    common::write_script(&wrapper, script);
    let mut add = sshd.host_add_args("box");
    add.extend([
        "--orange-bin".to_string(),
        wrapper.display().to_string(),
        "--remote-home".to_string(),
        rig.env.home.display().to_string(),
        "--remote-socket".to_string(),
        rig.env.tmux.socket.clone(),
    ]);
    local.ok(&add.iter().map(String::as_str).collect::<Vec<_>>());
    // The rig registered the repository there already: adopted, not added twice.
    let p = local.ok(&[
        "project",
        "add",
        "--host",
        "box",
        rig.env.repo.to_str().unwrap(),
    ]);
    assert_eq!(p["name"], "app", "{p}");
    let t = local.ok(&[
        "task",
        "create",
        "--project",
        "app",
        "real/remote",
        "Write remote-was-here.txt",
        "--harness",
        "claude",
    ]);
    assert_eq!(t["host"], "box", "{t}");
    let id = t["id"].as_str().unwrap().to_string();
    assert!(
        rig.api.wait_requests(1, PATIENCE),
        "claude never called the API"
    );
    // What this machine shows, from its own monitor passes (one ssh fetch each).
    let item_here = |want: &str| -> Value {
        let start = Instant::now();
        loop {
            local.ok(&["monitor", "--once"]);
            let st = local.ok(&["status", "--format", "json"]);
            let item = st["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|i| i["id"] == id.as_str())
                .cloned()
                .unwrap_or(Value::Null);
            if item["reason"].as_str().is_some_and(|r| r.contains(want)) {
                return item;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "waited for {want:?} here: {st}\nthere: {}\nscreen:\n{}",
                rig.task(&id),
                rig.screen(&id)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let working = item_here("working");
    assert_eq!(working["host"], "box", "{working}");
    assert_eq!(working["bucket"], "working");
    assert!(
        rig.api.sent_at(0).is_none(),
        "the slow reply was already sent"
    );
    rig.api
        .wait_sent(1, PATIENCE)
        .expect("the final text was sent");
    let waiting = item_here("waiting for input");
    assert_eq!(waiting["bucket"], "waiting", "{waiting}");
    // What claude really did, there: the tool ran in the task's worktree there.
    let ws = rig.workspace(&id);
    assert_eq!(
        std::fs::read_to_string(ws.join("remote-was-here.txt")).unwrap_or_default(),
        "remote\n"
    );
    // And the person here sees it in task list --all with its host.
    let all = local.ok(&["task", "list", "--all"]);
    let mine = all
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] == id.as_str())
        .unwrap();
    assert_eq!(mine["host"], "box", "{all}");
}

/// The real claude under `--sandbox bwrap`: it runs (as root too: orange tells
/// it it is sandboxed, which the test's own environment does not), its Bash tool works in
/// its worktree and cannot write $HOME, its hooks reach orange (the state comes from a
/// hook), and its own state (`~/.claude`, `~/.claude.json`) is written for real.
#[test]
fn a_sandboxed_claude_works_in_its_worktree_and_its_hooks_reach_orange() {
    if !claude_installed() || !crate::sandbox::bwrap_usable() {
        return;
    }
    let rig = claude_with(
        "sandbox",
        Home::SET_UP,
        vec![
            Reply::bash(
                "echo inside > sandboxed.txt; echo x > \"$HOME/notes/escaped.txt\"; echo rc=$?",
            ),
            Reply::text("Done, in the sandbox."),
        ],
        &[],
        // No IS_SANDBOX from here: as root, claude would refuse to start without it.
        false,
    );
    let home = rig.env.root().join("claude-home");
    std::fs::create_dir_all(home.join("notes")).unwrap();
    let config_before = std::fs::read_to_string(home.join(".claude.json")).unwrap();
    let v = rig.env.ok(&[
        "task",
        "create",
        "real/sandbox",
        "Write sandboxed.txt",
        "--harness",
        "claude",
        "--sandbox",
        "bwrap",
    ]);
    let id = v["id"].as_str().unwrap().to_string();
    assert_eq!(v["sandbox"], "bwrap", "{v}");
    assert!(rig.agent_under_bwrap(&id), "{:?}", rig.agent_argv(&id));
    rig.wait_turns(&id, 2);
    let sent = rig
        .api
        .wait_sent(1, PATIENCE)
        .expect("the final text was sent");
    rig.status_since("end of a sandboxed turn", &id, "waiting for input", sent);
    let t = rig.wait_task("a hook from inside the sandbox", &id, |t| {
        t["agent"]["state"] == "waiting" && t["agent"]["signal"] == "hook"
    });
    assert_eq!(t["sandbox"], "bwrap", "{t}");
    // What the agent really did.
    let ws = rig.workspace(&id);
    assert_eq!(
        std::fs::read_to_string(ws.join("sandboxed.txt")).unwrap_or_default(),
        "inside\n"
    );
    assert!(!home.join("notes/escaped.txt").exists());
    let result = rig.api.turns()[1].tool_results()[0].to_string();
    assert!(result.contains("Read-only file system"), "{result}");
    assert!(result.contains("rc=1"), "{result}");
    // Its own state was written where it lives: the conversation, and ~/.claude.json.
    let conv = rig.conversation(&id);
    let transcripts = walk(&home.join(".claude/projects"));
    assert!(
        transcripts
            .iter()
            .any(|p| p.ends_with(format!("{conv}.jsonl"))),
        "{transcripts:?}"
    );
    let config_after = std::fs::read_to_string(home.join(".claude.json")).unwrap();
    assert_ne!(
        config_before, config_after,
        "claude could not write ~/.claude.json"
    );
    serde_json::from_str::<Value>(&config_after).expect("~/.claude.json is still JSON");
}

/// Issue 14: token use from Claude Code's own transcript. One answer of two content blocks
/// (a text, then a tool call: two transcript lines with the same message id and usage)
/// and a final text: `task show` counts each answer once with its last usage, and
/// `orange status` sums the open tasks; a harness that reports nothing is unknown.
#[test]
fn token_use_is_what_the_api_reported_once_per_answer() {
    if !claude_installed() {
        return;
    }
    use common::standin::{CACHE_CREATION_TOKENS, CACHE_READ_TOKENS, INPUT_TOKENS, OUTPUT_TOKENS};
    // A project name with `_` (its workspaces `my_app--N`): Claude Code names the
    // transcript's directory with every such character as `-`.
    let rig = claude_in_repo(
        "tokens",
        "my_app",
        Home::SET_UP,
        vec![
            Reply::say_then_bash("I will write the file.", "echo tokens > tokens.txt"),
            Reply::text("Written. The task is done."),
        ],
        &[],
        is_root(),
    );
    std::fs::write(
        rig.env.home.join("config.toml"),
        "[harness.quiet]\ncommand = \": {prompt}; sleep 600\"\n",
    )
    .unwrap();
    let id = rig.create("real/tokens", "Write tokens.txt");
    let quiet = rig.env.ok(&[
        "task",
        "create",
        "real/quiet",
        "Nothing",
        "--harness",
        "quiet",
    ]);
    let quiet = id_of(&quiet).to_string();
    rig.api
        .wait_sent(1, PATIENCE)
        .expect("the final text was sent");
    rig.status_shows("end of turn", &id, "waiting for input");
    let answers = rig.api.turns().len() as u64;
    assert_eq!(answers, 2, "two answers, as scripted");
    let expected = json!({
        "input": answers * INPUT_TOKENS,
        "output": answers * OUTPUT_TOKENS,
        "cache_creation": answers * CACHE_CREATION_TOKENS,
        "cache_read": answers * CACHE_READ_TOKENS,
    });
    let conv = rig.conversation(&id);
    let log = orange::orchestration::agent::claude_log_path_in(
        &rig.env.root().join("claude-home/.claude"),
        &rig.workspace(&id),
        &conv,
    );
    // The first answer is two lines of one message: counted once. Claude may write its
    // last line after its Stop hook told the end of the turn: waited for.
    let mut transcript = String::new();
    let answer_lines = |t: &str| {
        t.lines()
            .filter(|l| l.contains("\"type\":\"assistant\"") && l.contains("msg_standin_"))
            .count()
    };
    let written = common::poll(PATIENCE, || {
        transcript = std::fs::read_to_string(&log).unwrap_or_default();
        (answer_lines(&transcript) >= 3).then_some(())
    });
    assert!(
        written.is_some(),
        "two lines for the first answer, one for the second:\n{transcript}"
    );
    let t = rig.wait_task("the tokens of both answers", &id, |t| {
        t["tokens"] == expected
    });
    assert_eq!(t["tokens"], expected, "{t}\ntranscript:\n{transcript}");
    let shown = rig.text(&["task", "show", &id]);
    assert!(
        shown.contains("tokens: 42 in (6 cached) · 10 out"),
        "{shown}"
    );
    // The harness that reports nothing: unknown, never zero.
    let q = rig.task(&quiet);
    assert!(q["tokens"].is_null(), "{q}");
    let shown = rig.text(&["task", "show", &quiet]);
    assert!(
        shown.contains("tokens: unknown (quiet does not report them)"),
        "{shown}"
    );
    let list = rig.env.ok(&["task", "list"]);
    let of = |tid: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|x| x["id"] == tid)
            .map(|x| x["tokens"].clone())
            .unwrap()
    };
    assert_eq!(of(&id), expected, "{list}");
    assert!(of(&quiet).is_null(), "{list}");
    // The status sums the open tasks' tokens and counts the unknown ones.
    let status = rig.env.ok(&["status", "--format", "json"]);
    let mut sum = expected.clone();
    sum["tasks"] = json!(1);
    sum["unknown"] = json!(1);
    assert_eq!(status["tokens"], sum, "{status}");
}

/// Issue 14: a sub-agent's answers (Claude Code 2.1 writes its transcript apart, under
/// `<conversation>/subagents/agent-*.jsonl`) count in its task's tokens too.
#[test]
fn a_sub_agents_tokens_count_in_its_task() {
    if !claude_installed() {
        return;
    }
    use common::standin::{CACHE_CREATION_TOKENS, CACHE_READ_TOKENS, INPUT_TOKENS, OUTPUT_TOKENS};
    // Claude Code 2.1.330 runs the sub-agent in the background: the main agent answers the
    // launch (turn 2) while the sub-agent asks (turn 2 or 3), and answers its notification
    // (turn 4). Which text goes to which does not matter here: every answer counts once.
    let rig = claude(
        "subagent-tokens",
        Home::SET_UP,
        vec![
            Reply::tool(
                "Agent",
                json!({"description": "Look around", "prompt": "Say hello.", "subagent_type": "general-purpose"}),
            ),
            Reply::text("Waiting for the sub-agent."),
            Reply::text("Hello."),
            Reply::text("The sub-agent said hello. Done."),
        ],
    );
    let id = rig.create("real/subagent", "Ask a sub-agent");
    rig.api
        .wait_sent(3, PATIENCE)
        .expect("four answers were sent");
    let expected = |answers: u64| {
        json!({
            "input": answers * INPUT_TOKENS,
            "output": answers * OUTPUT_TOKENS,
            "cache_creation": answers * CACHE_CREATION_TOKENS,
            "cache_read": answers * CACHE_READ_TOKENS,
        })
    };
    let t = rig.wait_task("the tokens of every answer", &id, |t| {
        t["tokens"] == expected(rig.api.turns().len() as u64)
    });
    let turns = rig.api.turns();
    assert_eq!(t["tokens"], expected(turns.len() as u64), "{t}");
    assert_eq!(turns.iter().filter(|r| r.is_subagent()).count(), 1);
    // Where they were: the sub-agent's answer in its own transcript.
    let conv = rig.conversation(&id);
    let dir = rig.env.root().join("claude-home/.claude/projects").join(
        rig.workspace(&id)
            .canonicalize()
            .unwrap()
            .to_string_lossy()
            .replace(['/', '.'], "-"),
    );
    let sub: Vec<PathBuf> = walk(&dir.join(&conv).join("subagents"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(sub.len(), 1, "{:?}", walk(&dir));
    let text = std::fs::read_to_string(&sub[0]).unwrap();
    assert!(
        text.lines()
            .any(|l| l.contains("\"isSidechain\":true") && l.contains("\"usage\"")),
        "{text}"
    );
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Claude Code's agent teams (`CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1`, `teammateMode:
/// "tmux"`): the lead's Agent call with a `name` splits the task's window and starts the
/// teammate there. The teammate shows under the task with its state; what orange types
/// goes to the lead, even with the teammate's pane active.
#[test]
fn a_real_teammate_shows_under_its_task_and_keystrokes_reach_only_the_lead() {
    if !claude_installed() {
        return;
    }
    let rig = claude_with(
        "teams",
        Home::SET_UP,
        vec![
            Reply::tool(
                "Agent",
                json!({"description": "research it", "name": "researcher", "prompt": "Look around and report.", "subagent_type": "general-purpose"}),
            ),
            Reply::text("On it."),
            Reply::text("Reported."),
            Reply::text("Hello back."),
        ],
        &[("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS", "1")],
        is_root(),
    );
    let home = PathBuf::from(&rig.env.extra.iter().find(|(k, _)| k == "HOME").unwrap().1);
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::write(
        home.join(".claude/settings.json"),
        r#"{"teammateMode":"tmux"}"#,
    )
    .unwrap();
    let id = rig.create("real/teams", "Research with a teammate");
    let lead = rig.pane(&id);
    let conv = rig.conversation(&id);
    let t = rig.wait_task("a teammate row", &id, |t| {
        t["teammates"].as_array().is_some_and(|a| !a.is_empty())
    });
    let mate = t["teammates"][0].clone();
    let mate_pane = mate["pane_id"].as_str().unwrap().to_string();
    assert_ne!(mate_pane, lead, "{t}");
    assert!(!mate["name"].as_str().unwrap_or("").is_empty(), "{t}");
    // claude split the lead's own window.
    let window = |p: &str| rig.env.tmux.ok(&["display", "-p", "-t", p, "#{window_id}"]);
    assert_eq!(window(&mate_pane), window(&lead));
    assert_eq!(rig.pane(&id), lead, "still bound to the lead pane");
    // Both turns end (the lead's and the teammate's): three turns sent.
    rig.wait_turns(&id, 3);
    let t = rig.wait_task("the lead and its teammate waiting", &id, |t| {
        t["agent"]["state"] == "waiting" && t["teammates"][0]["state"] == "waiting"
    });
    let show = rig.text(&["task", "show", &id]);
    assert!(show.contains("teammates ("), "{show}\n{t}");
    // The teammate's pane is the active one: task send still types into the lead.
    rig.env.tmux.ok(&["select-pane", "-t", &mate_pane]);
    let sent = rig.env.ok(&["task", "send", &id, "hello lead"]);
    assert_eq!(sent["outcome"], "sent", "{sent}");
    assert!(
        rig.api.wait_until(PATIENCE, |reqs| reqs
            .iter()
            .any(|r| r.last_user_text().contains("hello lead"))),
        "the message was never sent to the API"
    );
    let got: Vec<_> = rig
        .api
        .turns()
        .into_iter()
        .filter(|r| r.last_user_text().contains("hello lead"))
        .collect();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].session_id(), Some(conv.as_str()), "the lead got it");
}
