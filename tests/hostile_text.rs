//! Text from agents is data: what an agent, a workspace or a program writes — a window
//! title (`ESC ] 0 ;`), a screen clear (`ESC [ 2 J`), a clipboard write (`ESC ] 52 ;`), a C1
//! control, a carriage return, an invalid UTF-8 byte — reaches every printer (task
//! show/list/explain/peek, lane status/list, doctor, errors, the sidebar, the status-line
//! values) and comes out shown, never interpreted; `--json` keeps the exact text.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::process::Output;

use common::{wait_for, TaskEnv};
use serde_json::Value;

/// A window title, a screen clear, a clipboard write, CSI as a C1 control, CR, DEL.
const HOSTILE: &str = "T\x1b]0;PWNED\x07 C\x1b[2J K\x1b]52;c;cHduZWQ=\x07 S\u{9b}31m R\r D\x7f";

/// The bytes a terminal would interpret: C0 but newline and tab, DEL, C1 (as UTF-8).
fn interpreted(bytes: &[u8]) -> Vec<char> {
    String::from_utf8_lossy(bytes)
        .chars()
        .filter(|c| c.is_control() && *c != '\n' && *c != '\t')
        .collect()
}

fn assert_inert(what: &str, out: &[u8]) {
    let bad = interpreted(out);
    assert!(
        bad.is_empty(),
        "{what} sent {bad:?} to the terminal:\n{}",
        String::from_utf8_lossy(out)
    );
}

/// `orange ARGS` in the repository, not a terminal: (stdout, stderr).
fn run(env: &TaskEnv, args: &[&str]) -> Output {
    env.cmd_in(&env.repo, args).output().unwrap()
}

fn task_dir(env: &TaskEnv, id: &str) -> std::path::PathBuf {
    env.home.join("tasks/app").join(id)
}

/// A task whose agent waits, with everything an agent can write made hostile: TASK.md
/// (with an invalid UTF-8 byte), its summary and a history line (an unsandboxed agent can
/// write its task's files).
fn hostile_task(env: &TaskEnv) -> String {
    env.add_project(&["--pool-size", "1"]);
    let t = env.ok(&[
        "task",
        "create",
        "feat/x",
        "do it",
        "--harness",
        "fake-wait",
    ]);
    let id = t["id"].as_str().unwrap().to_string();
    env.wait_session(&id, "live");
    let dir = task_dir(env, &id);
    let mut md = format!("# {HOSTILE}\nsecond line\n").into_bytes();
    md.extend_from_slice(b"bad byte \xff here\n");
    std::fs::write(dir.join("TASK.md"), md).unwrap();
    let file = dir.join("task.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    v["summary"] = Value::String(HOSTILE.into());
    std::fs::write(&file, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let line = serde_json::json!({"ts": chrono::Utc::now().to_rfc3339(), "event": "agent.nudged", "message": HOSTILE});
    use std::io::Write;
    let mut h = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join("history.jsonl"))
        .unwrap();
    writeln!(h, "{line}").unwrap();
    id
}

#[test]
fn task_printers_show_hostile_text_without_sending_it() {
    let env = TaskEnv::new();
    let id = hostile_task(&env);
    for args in [
        vec!["task", "show", id.as_str()],
        vec!["task", "list"],
        vec!["task", "list", "--all"],
        vec!["task", "explain", id.as_str()],
        vec!["task", "peek", id.as_str()],
        vec!["sidebar", "--once", "--task", id.as_str()],
    ] {
        let out = run(&env, &args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert_inert(&format!("orange {args:?}"), &out.stdout);
        assert_inert(&format!("orange {args:?} (stderr)"), &out.stderr);
    }
    // Shown, not dropped: the sequences are visible, and one invalid byte does not drop
    // TASK.md's text (it showed "(no description)" before).
    let show = String::from_utf8(run(&env, &["task", "show", &id]).stdout).unwrap();
    assert!(show.contains("T␛]0;PWNED␇ C␛[2J K␛]52;c;"), "{show}");
    assert!(show.contains("bad byte \u{fffd} here"), "{show}");
    assert!(show.contains("nudged: T␛]0;PWNED␇"), "{show}");
    let side = String::from_utf8(run(&env, &["sidebar", "--once", "--task", &id]).stdout).unwrap();
    assert!(side.contains("second line"), "{side}");
    assert!(!side.contains("(no description)"), "{side}");
    // A one-line cell stays one line: the table keeps its rows.
    let list = String::from_utf8(run(&env, &["task", "list"]).stdout).unwrap();
    assert_eq!(list.lines().count(), 2, "{list}");
    // --json keeps the exact text.
    let v = env.ok(&["task", "show", &id]);
    assert_eq!(v["summary"], HOSTILE);
    assert!(v["task_md"].as_str().unwrap().contains(HOSTILE));
}

#[test]
fn errors_that_quote_what_was_typed_are_one_safe_line() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let typed = "nope\x1b]0;PWNED\x07\nsecond";
    let out = run(&env, &["task", "show", typed]);
    assert!(!out.status.success());
    assert_inert("task show's error", &out.stderr);
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("nope␛]0;PWNED␇␤second"), "{err}");
    // --json: the exact text, escaped by JSON.
    let (ok, v) = env.json(&["task", "show", typed]);
    assert!(!ok);
    assert_eq!(v["error"]["code"], "task_not_found");
    assert!(v["error"]["message"].as_str().unwrap().contains(typed));
}

#[test]
fn a_dirty_workspace_s_file_names_are_shown_in_merge_s_error() {
    let env = TaskEnv::new();
    let id = hostile_task(&env);
    let ws = env.ws_path("app--1");
    std::fs::write(ws.join("evil\x1b]0;PWNED\x07.txt"), "x").unwrap();
    let out = run(&env, &["task", "merge", &id]);
    assert!(!out.status.success());
    assert_inert("merge's worktree_dirty", &out.stderr);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("worktree_dirty"),
        "{out:?}"
    );
}

#[test]
fn lanes_refuse_a_hostile_seed_context_and_show_hostile_records() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let (ok, v) = env.json(&[
        "lane",
        "create",
        "--task-id",
        "T-1",
        "--harness",
        "fake-wait",
        "--seed-context",
        HOSTILE,
    ]);
    assert!(!ok, "{v}");
    assert_eq!(v["error"]["code"], "invalid_argument", "{v}");
    assert!(
        !env.home.join("lanes/registry.json").exists()
            || !std::fs::read_to_string(env.home.join("lanes/registry.json"))
                .unwrap()
                .contains("T-1"),
        "nothing recorded"
    );
    // Newlines and tabs are text.
    let v = env.ok(&[
        "lane",
        "create",
        "--task-id",
        "T-2",
        "--harness",
        "fake-wait",
        "--seed-context",
        "line one\n\tline two",
    ]);
    let lane = v["lane"]["lane_id"].as_str().unwrap().to_string();
    // What a lane's agent left as its error.
    let file = env.home.join("lanes/registry.json");
    let mut reg: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    reg["lanes"][&lane]["last_error"] = Value::String(HOSTILE.into());
    std::fs::write(&file, serde_json::to_string_pretty(&reg).unwrap()).unwrap();
    for args in [vec!["lane", "status", lane.as_str()], vec!["lane", "list"]] {
        let out = run(&env, &args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert_inert(&format!("orange {args:?}"), &out.stdout);
    }
}

#[test]
fn doctor_shows_a_program_s_hostile_version_line() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let bin = env.root().join("hostile-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let claude = bin.join("claude");
    common::write_script(
        &claude,
        "#!/bin/sh\nprintf '2.1.0 \\033]0;PWNED\\007\\033[2J (Claude Code)\\n'\n",
    );
    let out = env
        .cmd_in(&env.repo, &["doctor", "--harness", "claude"])
        .env("PATH", format!("{}:{}", bin.display(), env.path))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("␛]0;PWNED␇"), "{out:?}");
    assert_inert("doctor", &out.stdout);
    assert_inert("doctor (stderr)", &out.stderr);
}

/// In a real pane: the sidebar drawing hostile TASK.md text neither retitles the pane
/// (tmux takes OSC 0 as the pane's title) nor clears what it drew.
#[test]
fn the_sidebar_in_a_pane_is_not_retitled_or_cleared() {
    let env = TaskEnv::new();
    let id = hostile_task(&env);
    let sidebar = format!("{} sidebar --task {id} --width 60", common::bin().display());
    env.tmux.sized_session(
        "side",
        (60, 40),
        &[
            "-e",
            &format!("ORANGE_HOME={}", env.home.display()),
            &sidebar,
        ],
    );
    let mut screen = String::new();
    wait_for("the sidebar to draw TASK.md", 20, || {
        screen = env.tmux.ok(&["capture-pane", "-p", "-t", "=side:"]);
        screen.contains("second line")
    });
    assert!(screen.contains("feat/x"), "{screen}");
    assert!(screen.contains('␛'), "{screen}");
    let title = env
        .tmux
        .ok(&["display", "-p", "-t", "=side:", "#{pane_title}"]);
    assert!(!title.contains("PWNED"), "the pane was retitled: {title}");
}
