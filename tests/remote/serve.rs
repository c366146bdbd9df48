//! The ssh link and the host's long-lived `orange serve`: sshd killed mid-command, each
//! request answered as the command line does, one server shared and restarted, and an
//! orange without `serve`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::common::{self, bin, id, wait_for, TaskEnv};

use super::{out_of, setup, setup_with_bin, ssh_counter, state_files, Remote};

/// The host's orange, pausing where `<dir>/pause-at` says when it says it (read at each
/// point: the orange there is a long-lived `serve`).
fn pausing_bin(dir: &Path) -> PathBuf {
    let script = dir.join("orange-pausing");
    common::write_script(&script, format!(
            "#!/bin/sh\nORANGE_PAUSE_AT_FILE='{d}/pause-at' ORANGE_PAUSE_DIR='{d}' exec '{b}' \"$@\"\n",
            d = dir.display(),
            b = bin().display()
        ),);
    script
}

/// Run `args` here while the host's orange waits at `point`; kill sshd (and with it that
/// orange: the connection is gone) while it waits. Returns the local command's error.
fn drop_during(r: &mut Remote, pauses: &Path, point: &str, args: &[&str]) -> Value {
    std::fs::write(pauses.join("pause-at"), point).unwrap();
    let mut a = args.to_vec();
    a.push("--json");
    let child = r
        .local
        .cmd_in(&r.local.repo, &a)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let paused = pauses.join(format!("{point}.paused"));
    wait_for(
        &format!("the host's orange to pause at {point}"),
        20,
        || paused.exists(),
    );
    r.sshd.stop();
    let out = child.wait_with_output().unwrap();
    let _ = std::fs::remove_file(&paused);
    std::fs::remove_file(pauses.join("pause-at")).unwrap();
    assert!(!out.status.success(), "{args:?} succeeded without its host");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn sshd_killed_during_create_merge_and_cancel_loses_nothing_and_the_command_works_again() {
    let root = tempfile::tempdir().unwrap();
    let pauses = root.path().canonicalize().unwrap();
    let Some(mut r) = setup_with_bin(&pausing_bin(&pauses)) else {
        return;
    };
    r.add_project();
    let create = [
        "task",
        "create",
        "--project",
        "app",
        "feat/c",
        "made twice?",
        "--harness",
        "fake-wait",
    ];

    // create: the connection drops before anything is recorded there.
    let before = state_files(&r.local.home);
    let e = drop_during(&mut r, &pauses, "create.checked", &create);
    assert_eq!(e["error"]["code"], "host_unreachable", "{e}");
    assert_eq!(state_files(&r.local.home), before, "local state changed");
    r.sshd.resume();
    assert!(r
        .remote
        .ok(&["task", "list"])
        .as_array()
        .unwrap()
        .is_empty());
    let t = r.local.ok(&create);
    let tid = id(&t);
    r.remote.wait_session(&tid, "live");
    assert_eq!(r.remote.ok(&["task", "list"]).as_array().unwrap().len(), 1);

    // create again, dropped after the workspace was taken there: the host's own crash
    // repair gives it back or starts the task; one agent per workspace, never two.
    let create2 = [
        "task",
        "create",
        "--project",
        "app",
        "feat/d",
        "half",
        "--harness",
        "fake-wait",
    ];
    let e = drop_during(&mut r, &pauses, "spawn.acquired", &create2);
    assert_eq!(e["error"]["code"], "host_unreachable", "{e}");
    r.sshd.resume();
    let all = r.local.ok(&["task", "list", "--project", "app"]);
    let d = all
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["branch"] == "feat/d")
        .expect("the recorded task is there")
        .clone();
    let did = id(&d);
    r.remote.wait_session(&did, "live");
    let pool = r.remote.pool_json();
    let bound: Vec<&Value> = pool["workspaces"]
        .as_object()
        .unwrap()
        .values()
        .filter(|w| w["status"] == "bound")
        .collect();
    assert_eq!(bound.len(), 2, "{pool}");
    // The same create again: refused clearly, as the branch now has its task.
    let msg = r.local.err(&create2, "invalid_argument");
    assert!(msg.contains("feat/d"), "{msg}");

    // merge: dropped after git merged, before it was recorded.
    let ws = r
        .remote
        .home
        .join("workspaces")
        .join(r.remote.task(&tid)["workspace"].as_str().unwrap());
    std::fs::write(ws.join("m.txt"), "m").unwrap();
    crate::common::git(&ws, &["add", "m.txt"]);
    crate::common::git(&ws, &["commit", "-qm", "m"]);
    let e = drop_during(
        &mut r,
        &pauses,
        "merge.merged",
        &["task", "merge", &tid, "--local"],
    );
    assert_eq!(e["error"]["code"], "host_unreachable", "{e}");
    r.sshd.resume();
    let m = r.local.ok(&["task", "merge", &tid, "--local"]);
    assert_eq!(m["host"], "box", "{m}");
    assert_eq!(r.remote.task(&tid)["status"], "done");
    let log = crate::common::git(&r.remote.repo, &["log", "--oneline", "main"]);
    assert_eq!(
        log.matches(" m\n").count() + usize::from(log.ends_with(" m")),
        1,
        "{log}"
    );

    // cancel: dropped after it was recorded there; the next command there finishes it.
    let e = drop_during(
        &mut r,
        &pauses,
        "cancel.recorded",
        &["task", "cancel", &did, "--yes"],
    );
    assert_eq!(e["error"]["code"], "host_unreachable", "{e}");
    r.sshd.resume();
    let t = r.local.ok(&["task", "show", &did]);
    assert_eq!(t["status"], "cancelled", "{t}");
    assert_eq!(t["session"]["state"], "none", "{t}");
    // Nothing of it is left bound there.
    let pool = r.remote.pool_json();
    assert!(
        pool["workspaces"]
            .as_object()
            .unwrap()
            .values()
            .all(|w| w["status"] != "bound"),
        "{pool}"
    );
}

// --- the host's long-lived `orange serve` --------------------------------------------------

/// A line of a child's stdout, waited for (at most 20 s).
fn next_line(lines: &std::sync::mpsc::Receiver<String>, what: &str) -> Value {
    let line = lines
        .recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("no {what} from `orange serve`"));
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{what}: {line:?}: {e}"))
}

#[test]
fn serve_answers_each_request_as_the_command_line_does() {
    use std::io::{BufRead, Write};
    let l = TaskEnv::new();
    l.add_project(&[l.repo.to_str().unwrap(), "--pool-size", "2"]);
    let mut server = l
        .cmd_in(&l.repo, &["serve", "--stdio"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let to = std::cell::RefCell::new(server.stdin.take().unwrap());
    let from = server.stdout.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(from).lines().map_while(|l| l.ok()) {
            let _ = tx.send(line);
        }
    });
    // Hello: the protocol and this version (the broker checks both before any request).
    let hello = next_line(&lines, "hello");
    assert_eq!(hello["orange_serve"], 1, "{hello}");
    assert_eq!(hello["version"], env!("CARGO_PKG_VERSION"), "{hello}");
    let mut n = 0;
    let mut ask = |args: &[&str], stdin: Option<&str>| -> Value {
        n += 1;
        let mut req = serde_json::json!({"id": n, "args": args});
        if let Some(s) = stdin {
            req["stdin"] = s.into();
        }
        writeln!(to.borrow_mut(), "{req}").unwrap();
        let ack = next_line(&lines, "acceptance");
        assert_eq!(ack, serde_json::json!({"id": n, "accepted": true}));
        let answer = next_line(&lines, "answer");
        assert_eq!(answer["id"], n, "{answer}");
        answer
    };
    // Hostile arguments arrive exactly: no shell, no splitting.
    let hostile = "it's \"q\" $(touch /tmp/orange-serve-pwned) `id`; x\nline 2\n\ttab";
    let a = ask(
        &[
            "task",
            "create",
            "--project",
            "app",
            "feat/h",
            hostile,
            "--no-spawn",
            "--json",
        ],
        None,
    );
    assert_eq!(a["status"], 0, "{a}");
    let t: Value = serde_json::from_str(a["stdout"].as_str().unwrap()).unwrap();
    assert_eq!(t["summary"], hostile);
    assert!(!Path::new("/tmp/orange-serve-pwned").exists());
    // The same output, exit status and error codes as the command line, JSON and text.
    for args in [
        vec!["task", "show", "nope", "--json"],
        vec!["task", "show", "nope"],
        vec!["task", "list", "--project", "app", "--json"],
        vec![
            "task",
            "create",
            "--project",
            "app",
            "bad name",
            "s",
            "--json",
        ],
        vec!["task", "list", "--bogus"],
    ] {
        let a = ask(&args, None);
        let cli = l.cmd_in(&l.repo, &args).output().unwrap();
        assert_eq!(a["status"], cli.status.code().unwrap(), "{args:?}: {a}");
        assert_eq!(
            a["stdout"].as_str().unwrap(),
            String::from_utf8_lossy(&cli.stdout),
            "{args:?}"
        );
        assert_eq!(
            a["stderr"].as_str().unwrap(),
            String::from_utf8_lossy(&cli.stderr),
            "{args:?}"
        );
    }
    // Standard input goes with the request (`--context -`).
    let a = ask(
        &[
            "task",
            "create",
            "--project",
            "app",
            "feat/c",
            "ctx",
            "--no-spawn",
            "--context",
            "-",
            "--json",
        ],
        Some("ctx with 'quotes' and $(x)\n"),
    );
    let c: Value = serde_json::from_str(a["stdout"].as_str().unwrap()).unwrap();
    let md = std::fs::read_to_string(
        l.home
            .join("tasks/app")
            .join(c["id"].as_str().unwrap())
            .join("TASK.md"),
    )
    .unwrap();
    assert!(md.contains("ctx with 'quotes' and $(x)"), "{md}");
    // What needs a terminal is refused, and the server goes on.
    let a = ask(&["task", "attach", "feat/h", "--json"], None);
    assert_eq!(a["status"], 1, "{a}");
    assert!(
        a["stdout"].as_str().unwrap().contains("invalid_argument"),
        "{a}"
    );
    // A line that is no request is answered, and the server goes on.
    writeln!(to.borrow_mut(), "not json").unwrap();
    let ack = next_line(&lines, "acceptance");
    assert_eq!(ack["accepted"], true);
    let bad = next_line(&lines, "answer");
    assert_eq!(bad["status"], 2, "{bad}");
    assert!(bad["stderr"]
        .as_str()
        .unwrap()
        .contains("[invalid_argument]"));
    let a = ask(&["task", "list", "--project", "app", "--json"], None);
    let list: Value = serde_json::from_str(a["stdout"].as_str().unwrap()).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 2, "{list}");
    // Its standard input closed: it exits.
    drop(to.into_inner());
    let st = server.wait().unwrap();
    assert!(st.success(), "{st:?}");
}

/// The pids of the `orange serve --stdio` processes whose ORANGE_HOME is `home`.
fn serve_pids(home: &Path) -> Vec<u32> {
    let want = format!("ORANGE_HOME={}", home.display());
    let mut out = vec![];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let words: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        if !words
            .windows(2)
            .any(|w| w == [b"serve".as_slice(), b"--stdio"])
        {
            continue;
        }
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        if environ.split(|b| *b == 0).any(|v| v == want.as_bytes()) {
            out.push(pid);
        }
    }
    out
}

#[test]
fn remote_commands_share_one_server_and_a_killed_server_is_restarted() {
    let Some(mut r) = setup() else { return };
    // Every ssh this machine starts (the broker's too: it inherits PATH) is counted.
    let (counting, log) = ssh_counter(&r.local.root());
    r.local.path = format!("{}:{}", counting.display(), r.local.path);
    r.add_project();
    let tid = id(&r.create("feat/one", "one", "fake-wait"));
    let l = &r.local;
    l.ok(&["task", "show", &tid]);
    l.ok(&["task", "list", "--project", "app"]);
    l.ok(&["task", "list", "--all"]);
    l.ok(&["task", "update", &tid, "--summary", "renamed"]);
    l.ok(&["monitor", "--once"]);
    let out = out_of(l, &["task", "show", &tid]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("renamed"));
    // Eight commands, one ssh: the server's, started by the first of them.
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(calls.lines().count(), 1, "ssh calls:\n{calls}");
    assert!(calls.contains("'serve' '--stdio'"), "{calls}");
    let servers = serve_pids(&r.remote.home);
    assert_eq!(servers.len(), 1, "{servers:?}");

    // Killed: the next command starts another server and runs, as if nothing happened.
    let killed = servers[0];
    Command::new("kill")
        .args(["-KILL", &killed.to_string()])
        .status()
        .unwrap();
    wait_for("the killed server to be gone", 10, || {
        !serve_pids(&r.remote.home).contains(&killed)
    });
    let shown = r.local.ok(&["task", "show", &tid]);
    assert_eq!(shown["summary"], "renamed", "{shown}");
    let now = serve_pids(&r.remote.home);
    assert_eq!(now.len(), 1, "{now:?}");
    assert_ne!(now[0], killed);
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(calls.lines().count(), 2, "ssh calls:\n{calls}");
}

#[test]
fn an_orange_without_serve_or_of_another_version_works_the_old_way_and_says_so_once() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().canonicalize().unwrap();
    // The orange there: `serve` as `<dir>/mode` says (an old one without it, or one of
    // another version), everything else the real one.
    let script = dir.join("orange-old");
    common::write_script(&script, format!(
            "#!/bin/sh\nif [ \"$1\" = serve ]; then\n  case $(cat '{d}/mode') in\n    old) echo \"error: unrecognized subcommand 'serve'\" >&2; exit 2 ;;\n    other) echo '{{\"orange_serve\":1,\"version\":\"9.9.0\"}}'; exec cat >/dev/null ;;\n  esac\nfi\nexec '{b}' \"$@\"\n",
            d = dir.display(),
            b = bin().display()
        ));
    std::fs::write(dir.join("mode"), "old").unwrap();
    let Some(mut r) = setup_with_bin(&script) else {
        return;
    };
    let (counting, log) = ssh_counter(&r.local.root());
    r.local.path = format!("{}:{}", counting.display(), r.local.path);
    let l = &r.local;
    let repo = r.remote.repo.display().to_string();
    let note = "without `orange serve` there";
    // The first command finds out, says so, and works the old way.
    let args = ["project", "add", "--host", "box", &repo, "--json"];
    let out = l.cmd_in(&l.repo, &args).output().unwrap();
    let (ok, v) = crate::common::parse_json_output(&args, &out);
    assert!(ok, "{v}");
    assert_eq!(v["host"], "box", "{v}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches(note).count(), 1, "{err}");
    assert!(err.contains("exit 2"), "{err}");
    // The next ones just work, without a word and without trying again.
    let args = ["task", "list", "--project", "app", "--json"];
    let out = l.cmd_in(&l.repo, &args).output().unwrap();
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains(note));
    let t = r.create("feat/old", "old way", "fake-wait");
    assert_eq!(t["host"], "box", "{t}");
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        calls.lines().filter(|c| c.contains("'serve'")).count(),
        1,
        "{calls}"
    );
    // project add asked twice, then list and create once each: one ssh per command.
    assert_eq!(calls.lines().count(), 5, "{calls}");
    let c = l.ok(&["host", "check", "box"]);
    assert_eq!(c["serve"], false, "{c}");

    // Another version's `serve`: checked at its start, not used.
    std::fs::write(dir.join("mode"), "other").unwrap();
    let c = l.ok(&["host", "check", "box"]);
    assert_eq!(c["serve"], false, "{c}");
    assert!(
        c["serve_problem"].as_str().unwrap().contains("9.9.0"),
        "{c}"
    );
    let shown = l.ok(&["task", "show", &id(&t)]);
    assert_eq!(shown["summary"], "old way", "{shown}");
}
