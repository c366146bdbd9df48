//! A remote project's tasks: the whole task flow over ssh, and hostile text arriving
//! intact on the other side.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::common::{id, poll};

use super::{out_of, setup};

#[test]
fn a_remote_project_runs_its_whole_task_flow() {
    let Some(r) = setup() else { return };
    let l = &r.local;
    let p = r.add_project();
    assert_eq!(p["name"], "app");
    assert_eq!(p["path"], r.remote.repo.display().to_string(), "{p}");
    // Listed here with its host; registered there, by the orange there.
    let projects = l.ok(&["project", "list"]);
    let app = projects
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "app")
        .unwrap();
    assert_eq!(app["host"], "box", "{projects}");
    assert_eq!(r.remote.ok(&["project", "list"])[0]["name"], "app");
    // A second project of that name is refused, here or there, named or not.
    l.err(
        &[
            "project",
            "add",
            "--host",
            "box",
            r.remote.repo.to_str().unwrap(),
            "--name",
            "app",
        ],
        "invalid_argument",
    );
    let (here_app, _) = crate::common::make_repo(&l.root(), "app");
    l.err(
        &["project", "add", here_app.to_str().unwrap()],
        "invalid_argument",
    );
    assert!(l
        .ok(&["project", "list"])
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["host"] == "box"));
    // project update there; the record here follows.
    l.ok(&["project", "update", "app", "--pool-size", "4"]);
    let projects = l.ok(&["project", "list"]);
    assert_eq!(projects[0]["pool_size"], 4, "{projects}");
    assert_eq!(r.remote.ok(&["project", "list"])[0]["pool_size"], 4);

    let t = r.create("feat/remote", "do the remote thing", "fake-complete");
    let tid = id(&t);
    assert_eq!(t["host"], "box", "{t}");
    assert_eq!(t["project"], "app");
    // The task is there, with its worktree and session there.
    let there = r.remote.task(&tid);
    assert_eq!(there["branch"], "feat/remote");
    // Found by id alone (no --project): its host is remembered.
    let done = poll(Duration::from_secs(20), || {
        let v = l.ok(&["task", "show", &tid]);
        (v["status"] == "reviewing").then_some(v)
    })
    .unwrap_or_else(|| {
        let sess = r.remote.task(&tid)["tmux_session_id"]
            .as_str()
            .unwrap_or("")
            .to_string();
        panic!(
            "the remote agent did not complete: {}\n{}",
            r.remote.task(&tid),
            r.remote
                .tmux
                .ok(&["capture-pane", "-p", "-t", &format!("{sess}:")])
        )
    });
    assert_eq!(done["host"], "box", "{done}");
    // The agent ran there: it committed in its worktree there.
    let ws = r
        .remote
        .home
        .join("workspaces")
        .join(there["workspace"].as_str().unwrap());
    assert!(ws.join(format!("work-{tid}.txt")).exists());

    let list = l.ok(&["task", "list", "--project", "app"]);
    assert_eq!(list[0]["id"], tid.as_str());
    assert_eq!(list[0]["host"], "box");
    let all = l.ok(&["task", "list", "--all"]);
    let mine = all
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] == tid.as_str());
    assert_eq!(mine.unwrap()["host"], "box", "{all}");
    let out = out_of(l, &["task", "list", "--all"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("app@box"), "{text}");

    let peek = l.ok(&["task", "peek", &tid]);
    assert_eq!(peek["host"], "box", "{peek}");
    let ws_list = l.ok(&["workspace", "list", "--project", "app"]);
    assert!(!ws_list.as_array().unwrap().is_empty(), "{ws_list}");
    assert_eq!(ws_list[0]["host"], "box", "{ws_list}");

    // Merge there: the remote repository's main gets the agent's commit.
    let m = l.ok(&["task", "merge", &tid, "--local"]);
    assert_eq!(m["host"], "box", "{m}");
    assert_eq!(l.ok(&["task", "show", &tid])["status"], "done");
    let log = crate::common::git(&r.remote.repo, &["log", "--oneline", "main"]);
    assert!(log.contains(&format!("work {tid}")), "{log}");

    // A second task, cancelled (its question is asked here: no terminal → --yes needed).
    let c = r.create("feat/other", "other", "fake-wait");
    let cid = id(&c);
    r.remote.wait_session(&cid, "live");
    // Commands by id alone: update, stuck.
    l.ok(&["task", "update", &cid, "--summary", "other, renamed"]);
    assert_eq!(r.remote.task(&cid)["summary"], "other, renamed");
    let st = l.ok(&["task", "stuck", &cid]);
    assert_eq!(st["host"], "box", "{st}");
    assert_eq!(r.remote.task(&cid)["status"], "stuck");
    // A workspace by its name alone (`<project>--<n>`) is the host's.
    let msg = l.err(&["workspace", "release", "app--9"], "workspace_not_found");
    assert!(msg.contains("on host box"), "{msg}");
    let msg = l.err(&["task", "cancel", &cid], "invalid_argument");
    assert!(msg.contains("--yes"), "{msg}");
    l.ok(&["task", "cancel", &cid, "--yes"]);
    assert_eq!(r.remote.task(&cid)["status"], "cancelled");
    l.ok(&["task", "delete", &cid, "--yes"]);
    r.remote.err(&["task", "show", &cid], "task_not_found");
    // An unknown id is the remote's error, with its code.
    l.err(
        &["task", "show", "zzzzzz", "--project", "app"],
        "task_not_found",
    );

    // Text output is the host's, and its errors keep their code.
    let out = out_of(l, &["task", "show", &tid]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(&tid));
    let out = out_of(l, &["task", "show", "zzzzzz", "--project", "app"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("on host box") && err.contains("[task_not_found]"),
        "{err}"
    );

    // Removing the project removes it there (its pool must be shut down there first).
    let msg = l.err(&["project", "remove", "app"], "invalid_argument");
    assert!(msg.contains("workspace"), "{msg}");
}

#[test]
fn hostile_inputs_arrive_intact_over_ssh() {
    let Some(r) = setup() else { return };
    r.add_project();
    let l = &r.local;
    let summary = "it's \"quoted\" $(touch /tmp/orange-pwned) `id`; rm -rf x\nsecond line\n\ttab";
    let t = r.create("feat/hostile", summary, "fake-wait");
    let tid = id(&t);
    assert_eq!(r.remote.task(&tid)["summary"], summary);
    assert!(!Path::new("/tmp/orange-pwned").exists());
    let prompt = poll(Duration::from_secs(20), || {
        let p = r.remote.home.join("agent-log").join(&tid).join("prompt");
        std::fs::read_to_string(p).ok()
    })
    .expect("the agent got its prompt");
    assert!(prompt.starts_with(summary), "{prompt:?}");
    // A summary starting with a dash is a summary, not an option, there too.
    let d = r.create("feat/dash", "-rf --force", "fake-wait");
    assert_eq!(r.remote.task(&id(&d))["summary"], "-rf --force");
    // Bad branch names: the host's refusal, with its code, and nothing made.
    for bad in ["has space", "a..b", "x:y"] {
        let msg = l.err(
            &[
                "task",
                "create",
                "--project",
                "app",
                bad,
                "s",
                "--harness",
                "fake-wait",
            ],
            "invalid_argument",
        );
        assert!(msg.contains("on host box"), "{bad}: {msg}");
    }
    // A leading dash is refused here already, as for a local project.
    l.err(
        &["task", "create", "--project", "app", "-lead", "s"],
        "invalid_argument",
    );
    assert_eq!(r.remote.ok(&["task", "list"]).as_array().unwrap().len(), 2);
    // --context - is read here and sent along.
    let c = l.cmd_in(
        &l.repo,
        &[
            "task",
            "create",
            "--project",
            "app",
            "feat/ctx",
            "with context",
            "--harness",
            "fake-wait",
            "--context",
            "-",
            "--json",
        ],
    );
    let out = crate::common::output_with_stdin(c, b"ctx with 'quotes' and $(x)\n");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let md = std::fs::read_to_string(r.remote.home.join("tasks/app").join(id(&v)).join("TASK.md"))
        .unwrap();
    assert!(md.contains("ctx with 'quotes' and $(x)"), "{md}");
}
