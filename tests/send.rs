//! Session control by hand (issue 24): `task send` types a message into an agent as one
//! message, submitted once — now when it waits, held until its turn ends while it works
//! (the monitor types it in), refused while a dialog is on its screen or when it is dead;
//! `task nudge` sends the policy's nudge the same way; `task respawn --force` stops a live
//! agent's whole process tree and starts it again. Real tmux, fake agents: `fake-raw`
//! keeps every byte typed into its pane (it asked for bracketed paste, as agents do), the
//! agent's state comes from its hooks (`orange hook agent EVENT`, as Claude Code's).

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::{id, wait_for, TaskEnv};
use serde_json::{json, Value};

/// An env with the `fake-raw` and `fake-tree` agents (tests/fixtures/fake-agent.sh).
pub(crate) fn env() -> TaskEnv {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let agent = common::fixtures().join("fake-agent.sh");
    for mode in ["raw", "tree"] {
        env.append_config(&format!(
            "[harness.fake-{mode}]\ncommand = \"sh {} {mode} {{prompt}}\"\n",
            agent.display()
        ));
    }
    env
}

/// A `fake-raw` agent, started and ready for input.
pub(crate) fn raw_agent(env: &TaskEnv, branch: &str) -> String {
    let id = env.create_id(branch, "fake-raw");
    let pane = env.task(&id)["tmux_pane_id"].as_str().unwrap().to_string();
    wait_for("the raw agent to be ready", 20, || {
        env.tmux
            .ok(&["capture-pane", "-p", "-t", &pane])
            .contains("raw agent ready")
    });
    id
}

/// Every byte typed into the raw agent's pane.
pub(crate) fn raw(env: &TaskEnv, id: &str) -> Vec<u8> {
    std::fs::read(env.home.join("agent-log").join(id).join("raw")).unwrap_or_default()
}

const PASTE_START: &[u8] = b"\x1b[200~";
const PASTE_END: &[u8] = b"\x1b[201~";

/// What the agent received, as the submissions it saw: each Enter (a `\r` outside a
/// bracketed paste) ends one; a paste's text (newlines and all) is part of the one it is in.
fn submissions(bytes: &[u8]) -> Vec<String> {
    let mut out = vec![];
    let mut cur = Vec::new();
    let mut i = 0;
    let mut pasting = false;
    while i < bytes.len() {
        if bytes[i..].starts_with(PASTE_START) {
            pasting = true;
            i += PASTE_START.len();
        } else if bytes[i..].starts_with(PASTE_END) {
            pasting = false;
            i += PASTE_END.len();
        } else if bytes[i] == b'\r' && !pasting {
            out.push(String::from_utf8_lossy(&cur).into_owned());
            cur.clear();
            i += 1;
        } else {
            cur.push(bytes[i]);
            i += 1;
        }
    }
    assert!(
        cur.is_empty() && !pasting,
        "typed but never submitted: {:?}",
        String::from_utf8_lossy(bytes)
    );
    out
}

/// Wait until the raw agent saw `n` submissions; they.
pub(crate) fn wait_submissions(env: &TaskEnv, id: &str, n: usize) -> Vec<String> {
    let mut seen = vec![];
    wait_for(
        &format!("{n} submission(s) to task {id}'s agent"),
        20,
        || {
            let bytes = raw(env, id);
            // A paste or a line still arriving is not looked at yet.
            seen = match bytes.last() {
                Some(b'\r') => submissions(&bytes),
                _ => vec![],
            };
            seen.len() >= n
        },
    );
    seen
}

/// `orange ARGS` in text (what a person reads): stdout, stderr, success.
pub(crate) fn text(env: &TaskEnv, args: &[&str]) -> (String, String, bool) {
    let out = env.cmd_in(&env.repo, args).output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}

fn events(env: &TaskEnv, id: &str, event: &str) -> Vec<Value> {
    env.history_events(id, event)
}

#[test]
fn a_waiting_agent_gets_a_message_as_one_submission_literally_and_without_controls() {
    let env = env();
    let id = raw_agent(&env, "send/now");
    env.hook(&id, "Stop", json!({}));
    let pwned = env.root().join("PWNED");
    let p = pwned.display();
    // Several lines, quotes, substitutions, tmux's and the shell's syntax, and controls: a
    // window-title escape, a bell, a carriage return, a C1 CSI, a bidi override.
    let message = format!(
        "first line: it's \"quoted\"; $(touch {p}) `touch {p}` #{{session_name}} %1 %% ~ \\ end;\nsecond\x1b]0;PWNED\x07 line\r\nthird\u{9b}31m\u{202e} line\t(tab)"
    );
    let v = env.ok(&["task", "send", &id, &message]);
    assert_eq!(v["outcome"], "sent", "{v}");
    assert_eq!(v["agent_state"], "waiting", "{v}");
    let got = wait_submissions(&env, &id, 1);
    let want = format!(
        "first line: it's \"quoted\"; $(touch {p}) `touch {p}` #{{session_name}} %1 %% ~ \\ end;\nsecond]0;PWNED line\nthird31m line\t(tab)"
    );
    assert_eq!(got, vec![want.clone()]);
    // One bracketed paste, one Enter after it: never a submission per line.
    let bytes = raw(&env, &id);
    assert!(bytes.starts_with(PASTE_START), "{bytes:?}");
    assert!(bytes.ends_with(b"\x1b[201~\r"), "{bytes:?}");
    assert!(!String::from_utf8_lossy(&bytes)
        .chars()
        .any(|c| c == '\x07' || c == '\u{9b}' || c == '\u{202e}'));
    assert!(!pwned.exists());
    // The history says it was sent, by its first line; --json keeps the whole text.
    let sent = events(&env, &id, "message.sent");
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["text"], want.as_str());
    let (show, _, _) = text(&env, &["task", "show", &id]);
    assert!(show.contains("sent: first line: it's \"quoted\""), "{show}");
    // A one-line message is typed (no paste) and submitted once too; from stdin and from a
    // file as well.
    let out = common::output_with_stdin(
        env.cmd_in(&env.repo, &["task", "send", &id, "-"]),
        b"from stdin\n",
    );
    assert!(out.status.success(), "{out:?}");
    let file = env.root().join("message.txt");
    std::fs::write(&file, "from a file").unwrap();
    env.ok(&["task", "send", &id, "--file", file.to_str().unwrap()]);
    let got = wait_submissions(&env, &id, 3);
    assert_eq!(got[1..], ["from stdin", "from a file"]);
    // Nothing to send is refused.
    env.err(&["task", "send", &id, "\x1b\x07  "], "invalid_argument");
}

#[test]
fn a_working_agent_gets_its_messages_when_its_turn_ends_as_one() {
    let env = env();
    let id = raw_agent(&env, "send/held");
    env.hook(&id, "UserPromptSubmit", json!({"prompt": "work"}));
    let v = env.ok(&["task", "send", &id, "look at the tests too"]);
    assert_eq!(v["outcome"], "held", "{v}");
    assert_eq!(v["agent_state"], "working", "{v}");
    let v = env.ok(&["task", "send", &id, "and the docs\nplease"]);
    assert_eq!(v["held"], 2, "{v}");
    // Held in the task's record (a crash loses nothing), shown by `task show`.
    let t = env.task(&id);
    let held: Vec<&str> = t["held"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["text"].as_str().unwrap())
        .collect();
    assert_eq!(held, ["look at the tests too", "and the docs\nplease"]);
    let (show, _, _) = text(&env, &["task", "show", &id]);
    assert!(show.contains("held for the agent"), "{show}");
    assert!(show.contains("held: look at the tests too"), "{show}");
    // While it works, a monitor pass types nothing.
    let r = env.ok(&["monitor", "--once"]);
    assert!(!r.to_string().contains("held message"), "{r}");
    common::holds_for(
        "nothing typed while the agent works",
        Duration::from_millis(300),
        || raw(&env, &id).is_empty(),
    );
    // Its turn ends: the next pass types both, as one message, submitted once.
    env.hook(&id, "Stop", json!({}));
    let r = env.ok(&["monitor", "--once"]);
    assert!(
        r["actions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["action"] == "sent" && a["task"] == id.as_str()),
        "{r}"
    );
    let got = wait_submissions(&env, &id, 1);
    assert_eq!(got, ["look at the tests too\n\nand the docs\nplease"]);
    assert!(env.task(&id).get("held").is_none(), "{}", env.task(&id));
    let sent = events(&env, &id, "message.sent");
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert!(sent
        .iter()
        .all(|e| e["via"] == "monitor" && e["held_since"].is_string()));
    // Another pass: nothing typed twice.
    env.ok(&["monitor", "--once"]);
    common::holds_for("no second delivery", Duration::from_millis(300), || {
        submissions(&raw(&env, &id)).len() == 1
    });
    // --force types it now, working or not.
    env.hook(&id, "UserPromptSubmit", json!({"prompt": "more"}));
    let v = env.ok(&["task", "send", &id, "now, please", "--force"]);
    assert_eq!(v["outcome"], "sent", "{v}");
    assert_eq!(wait_submissions(&env, &id, 2)[1], "now, please");
}

#[test]
fn a_blocked_agent_refuses_text_unless_forced_and_a_dead_one_names_respawn() {
    let env = env();
    let id = raw_agent(&env, "send/blocked");
    env.hook(&id, "PermissionRequest", json!({"tool_name": "Bash"}));
    let msg = env.err(&["task", "send", &id, "yes"], "agent_not_ready");
    assert!(msg.contains("blocked"), "{msg}");
    assert!(msg.contains("--force"), "{msg}");
    let (_, stderr, ok) = text(&env, &["task", "send", &id, "yes"]);
    assert!(!ok && stderr.contains("--force"), "{stderr}");
    let msg = env.err(&["task", "nudge", &id], "agent_not_ready");
    assert!(msg.contains("blocked"), "{msg}");
    common::holds_for(
        "nothing typed into the dialog",
        Duration::from_millis(300),
        || raw(&env, &id).is_empty(),
    );
    assert!(env.task(&id).get("held").is_none());
    let v = env.ok(&["task", "send", &id, "1", "--force"]);
    assert_eq!(v["forced"], true, "{v}");
    assert_eq!(wait_submissions(&env, &id, 1), ["1"]);
    assert_eq!(events(&env, &id, "message.sent")[0]["forced"], true);

    // A dead agent: the next step is named.
    let dead = env.create_id("send/dead", "fake-exit0");
    env.wait_session(&dead, "dead");
    let msg = env.err(&["task", "send", &dead, "hello"], "agent_not_ready");
    assert!(msg.contains("dead"), "{msg}");
    assert!(
        msg.contains(&format!("orange task respawn {dead}")),
        "{msg}"
    );
    env.err(
        &["task", "send", &dead, "hello", "--force"],
        "agent_not_ready",
    );
    // A task with no agent yet.
    let pending = id_of(&env.create(&["send/pending", "x", "--harness", "fake-raw", "--no-spawn"]));
    let msg = env.err(&["task", "send", &pending, "hello"], "invalid_transition");
    assert!(msg.contains("task spawn"), "{msg}");
}

fn id_of(v: &Value) -> String {
    id(v)
}

#[test]
fn nudge_sends_the_policy_s_message_now_the_way_send_does() {
    let env = env();
    env.append_config(
        "[policy]\non_idle = { action = \"nudge\", message = \"Keep at it; run the tests.\" }\n",
    );
    let id = raw_agent(&env, "send/nudge");
    env.hook(&id, "Stop", json!({}));
    let v = env.ok(&["task", "nudge", &id]);
    assert_eq!(v["kind"], "nudge", "{v}");
    assert_eq!(v["outcome"], "sent", "{v}");
    assert_eq!(
        wait_submissions(&env, &id, 1),
        ["Keep at it; run the tests."]
    );
    let nudged = events(&env, &id, "agent.nudged");
    assert_eq!(nudged.len(), 1, "{nudged:?}");
    assert_eq!(nudged[0]["via"], "task nudge");
    assert_eq!(nudged[0]["message"], "Keep at it; run the tests.");
    // While it works: held like any message, typed when its turn ends.
    env.hook(&id, "UserPromptSubmit", json!({"prompt": "x"}));
    assert_eq!(env.ok(&["task", "nudge", &id])["outcome"], "held");
    env.hook(&id, "Stop", json!({}));
    env.ok(&["monitor", "--once"]);
    assert_eq!(
        wait_submissions(&env, &id, 2)[1],
        "Keep at it; run the tests."
    );
    assert_eq!(events(&env, &id, "agent.nudged").len(), 2);
}

/// The pids of a process and all its descendants (from /proc).
fn tree(root: u32) -> Vec<u32> {
    let mut all = vec![root];
    loop {
        let mut more = vec![];
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            let rest = &stat[stat.rfind(')').unwrap() + 1..];
            let ppid: u32 = rest.split_whitespace().nth(1).unwrap().parse().unwrap();
            if all.contains(&ppid) && !all.contains(&pid) {
                more.push(pid);
            }
        }
        if more.is_empty() {
            return all;
        }
        all.extend(more);
    }
}

/// Is `pid` running (not gone, not a zombie)?
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            let state = s[s.rfind(')').unwrap() + 1..]
                .split_whitespace()
                .next()
                .unwrap()
                .to_string();
            state != "Z" && state != "X"
        })
        .unwrap_or(false)
}

fn log_file(env: &TaskEnv, id: &str, name: &str) -> PathBuf {
    env.home.join("agent-log").join(id).join(name)
}

#[test]
fn respawn_force_stops_a_live_agent_s_whole_tree_and_starts_it_again() {
    let env = env();
    let id = env.create_id("respawn/hung", "fake-tree");
    let child: u32 = env.agent_log(&id, "child").trim().parse().unwrap();
    let t = env.task(&id);
    let old_session = t["tmux_session_id"].as_str().unwrap().to_string();
    let pane_pid: u32 = env.pane_pid(&id).parse().unwrap();
    let mut pids = vec![];
    wait_for("the agent's tree (with its child)", 10, || {
        pids = tree(pane_pid);
        pids.contains(&child)
    });
    // Without --force: refused, naming --force.
    let msg = env.err(&["task", "respawn", &id], "invalid_transition");
    assert!(msg.contains("still running"), "{msg}");
    assert!(
        msg.contains(&format!("orange task respawn {id} --force")),
        "{msg}"
    );
    // --force asks first; with no terminal to ask on, --yes is needed.
    let msg = env.err(&["task", "respawn", &id, "--force"], "invalid_argument");
    assert!(msg.contains("--yes"), "{msg}");
    assert!(pids.iter().all(|p| running(*p)), "nothing was stopped yet");
    std::fs::remove_file(log_file(&env, &id, "child")).unwrap();
    let v = env.ok(&[
        "task",
        "respawn",
        &id,
        "--force",
        "--yes",
        "--reason",
        "hung in a tool call",
    ]);
    assert_eq!(v["forced"], true, "{v}");
    // Every process of the old agent is gone, the one that ignored SIGTERM too.
    for p in &pids {
        assert!(
            !running(*p),
            "{p} of the old agent's {pids:?} still runs: {v}"
        );
    }
    assert!(
        v["stopped"]["killed"]
            .as_array()
            .unwrap()
            .contains(&json!(child)),
        "{v}"
    );
    // A new agent in a new session, through the same launcher, told why.
    assert_ne!(v["tmux_session_id"], old_session.as_str(), "{v}");
    let t = env.wait_session(&id, "live");
    assert_eq!(t["status"], "working", "{t}");
    let new_child: u32 = env.agent_log(&id, "child").trim().parse().unwrap();
    let prompt = env.agent_log(&id, "prompt");
    assert!(prompt.starts_with("Resuming: do the thing"), "{prompt}");
    assert!(
        prompt.contains("restarted by hand: hung in a tool call"),
        "{prompt}"
    );
    let respawned = events(&env, &id, "agent.respawned");
    assert_eq!(respawned.len(), 1, "{respawned:?}");
    assert_eq!(respawned[0]["forced"], true);
    assert_eq!(respawned[0]["reason"], "hung in a tool call");
    let (show, _, _) = text(&env, &["task", "show", &id]);
    assert!(
        show.contains("respawned (forced): hung in a tool call"),
        "{show}"
    );
    // Its old session is gone, and a monitor pass counts no crash.
    assert!(!env
        .tmux
        .tmux(&["has-session", "-t", &old_session])
        .status
        .success());
    env.ok(&["monitor", "--once"]);
    assert_eq!(env.task(&id)["crash_count"], 0);
    // The new agent's wedged child is the test's to stop.
    unsafe {
        libc::kill(new_child as i32, libc::SIGKILL);
    }
}

/// A remote task is sent text like a local one: the text read here (a file, standard
/// input) goes to the host over ssh, and its agent gets it.
#[test]
fn a_remote_task_s_agent_is_sent_text_read_here() {
    use crate::common::sshd::Sshd;
    let remote = TaskEnv::new();
    let local = TaskEnv::from_env(common::Env::with_repo("here"));
    let Some(sshd) = Sshd::start(&local.root()) else {
        return;
    };
    let mut args = sshd.host_add_args("box");
    args.extend([
        "--orange-bin".to_string(),
        common::bin().display().to_string(),
        "--remote-home".to_string(),
        remote.home.display().to_string(),
        "--remote-socket".to_string(),
        remote.tmux.socket.clone(),
    ]);
    local.ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let repo = remote.repo.display().to_string();
    local.ok(&["project", "add", "--host", "box", &repo]);
    let t = local.ok(&[
        "task",
        "create",
        "--project",
        "app",
        "far/away",
        "x",
        "--harness",
        "fake-wait",
    ]);
    let tid = id(&t);
    remote.agent_log(&tid, "cwd");
    let file = local.root().join("note.txt");
    std::fs::write(&file, "from a file here").unwrap();
    let v = local.ok(&["task", "send", &tid, "--file", file.to_str().unwrap()]);
    assert_eq!(v["outcome"], "sent", "{v}");
    let out = common::output_with_stdin(
        local.cmd_in(&local.repo, &["task", "send", &tid, "-", "--json"]),
        b"from stdin here",
    );
    assert!(out.status.success(), "{out:?}");
    wait_for("both lines at the remote agent", 20, || {
        remote.input_lines(&tid) == ["from a file here", "from stdin here"]
    });
    assert_eq!(remote.history_events(&tid, "message.sent").len(), 2);
}

/// A turn that ended on an API error ended too: what was held goes in once the error's
/// policy has acted (the pass after).
#[test]
fn a_turn_ended_by_an_api_error_gets_what_was_held_after_its_policy_acted() {
    let env = env();
    let id = raw_agent(&env, "send/error");
    env.hook(&id, "UserPromptSubmit", json!({"prompt": "work"}));
    assert_eq!(
        env.ok(&["task", "send", &id, "when you can"])["outcome"],
        "held"
    );
    env.hook(
        &id,
        "StopFailure",
        json!({"error": "server_error", "last_assistant_message": "API Error: 500 Internal server error"}),
    );
    let r = env.ok(&["monitor", "--once"]);
    assert!(r.to_string().contains("escalate"), "{r}");
    assert!(raw(&env, &id).is_empty(), "typed before the policy acted");
    env.ok(&["monitor", "--once"]);
    assert_eq!(wait_submissions(&env, &id, 1), ["when you can"]);
    assert!(env.task(&id).get("held").is_none());
}
