//! Hosts: `host add`, `check`, `list` and `remove`, a host whose orange is missing or whose
//! key is unknown, and `task attach` to a remote task's session over ssh.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common::{bin, id, poll, wait_for, TmuxServer};

use super::{s, setup, setup_with_bin};

#[test]
fn host_add_check_list_and_remove() {
    let Some(r) = setup() else { return };
    let l = &r.local;
    // check: one ssh call; the versions, tmux and git there.
    let c = l.ok(&["host", "check", "box"]);
    assert_eq!(c["reachable"], true, "{c}");
    assert_eq!(c["compatible"], true, "{c}");
    assert_eq!(c["remote"]["version"], env!("CARGO_PKG_VERSION"), "{c}");
    assert!(
        c["remote"]["tmux"].as_str().unwrap().starts_with("tmux "),
        "{c}"
    );
    assert!(c["remote"]["git"].as_str().unwrap().contains("git"), "{c}");
    assert_eq!(
        c["remote"]["home"],
        r.remote.home.display().to_string(),
        "{c}"
    );
    assert_eq!(c["remote"]["tmux_socket"], r.remote.tmux.socket, "{c}");
    // The one connection: a control socket under run/ssh.
    assert!(l.home.join("run/ssh/box").exists());

    let list = l.ok(&["host", "list"]);
    assert_eq!(list[0]["name"], "box");
    assert_eq!(list[0]["dest"], "127.0.0.1");

    // Bad input: a clear error, nothing registered.
    let planted = l.root().join("planted");
    let evil = format!("-oProxyCommand=touch {}", planted.display());
    l.err(&["host", "add", "evil", "--", &evil], "invalid_argument");
    assert!(!planted.exists());
    l.err(&["host", "add", "dot.ted", "127.0.0.1"], "invalid_argument");
    l.err(&["host", "add", "sp ace", "127.0.0.1"], "invalid_argument");
    l.err(
        &["host", "add", "o", "127.0.0.1", "--ssh-option", "Port"],
        "invalid_argument",
    );
    l.err(&["host", "add", "box", "127.0.0.1"], "invalid_argument");
    l.err(&["host", "check", "nope"], "invalid_argument");
    assert_eq!(l.ok(&["host", "list"]).as_array().unwrap().len(), 1);

    // A data root whose path has a space and a `%` (ssh splits and expands its options).
    let odd = l.root().join("my home %h");
    let mut args = r.sshd.host_add_args("box");
    args.extend([
        "--orange-bin".to_string(),
        bin().display().to_string(),
        "--remote-home".to_string(),
        r.remote.home.display().to_string(),
    ]);
    let odd_run = |a: &[&str]| {
        let mut a = a.to_vec();
        a.push("--json");
        let out = l
            .cmd_in(&l.repo, &a)
            .env("ORANGE_HOME", &odd)
            .output()
            .unwrap();
        crate::common::parse_json_output(&a, &out)
    };
    let (ok, v) = odd_run(&s(&args));
    assert!(ok, "{v}");
    let (ok, v) = odd_run(&["host", "check", "box"]);
    assert!(ok, "{v}");
    assert_eq!(v["reachable"], true, "{v}");

    // Refused while a project uses it, unless --force.
    let p = r.add_project();
    assert_eq!(p["host"], "box", "{p}");
    let msg = l.err(&["host", "remove", "box"], "invalid_argument");
    assert!(msg.contains("app"), "{msg}");
    l.ok(&["host", "remove", "box", "--force"]);
    assert!(l.ok(&["host", "list"]).as_array().unwrap().is_empty());
    // Nothing was removed there.
    let there = r.remote.ok(&["project", "list"]);
    assert_eq!(there[0]["name"], "app", "{there}");
}

#[test]
fn a_host_whose_orange_is_missing_or_whose_key_is_unknown_says_so() {
    let Some(r) = setup_with_bin(Path::new("/nonexistent/orange")) else {
        return;
    };
    let msg = r.local.err(&["host", "check", "box"], "backend_not_found");
    assert!(msg.contains("/nonexistent/orange"), "{msg}");
    // An unknown host key is never accepted: BatchMode, no StrictHostKeyChecking=no.
    std::fs::write(r.sshd.dir.join("known_hosts"), "").unwrap();
    let mut args = r.sshd.host_add_args("stranger");
    args.extend(["--orange-bin".to_string(), bin().display().to_string()]);
    r.local.ok(&s(&args));
    let msg = r
        .local
        .err(&["host", "check", "stranger"], "host_unreachable");
    assert!(msg.to_lowercase().contains("host key"), "{msg}");
}

#[test]
fn attach_opens_ssh_to_the_remote_session_in_a_local_session() {
    let Some(r) = setup() else { return };
    r.add_project();
    let t = r.create("feat/a", "attach me", "fake-wait");
    let tid = id(&t);
    r.remote.wait_session(&tid, "live");
    wait_for("the remote agent's screen", 20, || {
        let sess = r.remote.task(&tid)["tmux_session_id"]
            .as_str()
            .unwrap()
            .to_string();
        r.remote
            .tmux
            .ok(&["capture-pane", "-p", "-t", &format!("{sess}:")])
            .contains("waiting for input")
    });
    // A person in the local tmux: a client attached, a pane where they run the command.
    let outer = TmuxServer::start(&r.local.root(), &[]);
    outer.sized_session(
        "term",
        (150, 40),
        &[&format!(
            "unset TMUX; exec tmux -L {} attach -t keepalive",
            r.local.tmux.socket
        )],
    );
    wait_for("a local client", 10, || {
        !r.local.tmux.ok(&["list-clients"]).is_empty()
    });
    let cmd = format!(
        "ORANGE_HOME='{}' ORANGE_TMUX_SOCKET='{}' '{}' task attach {tid} > '{}/attach.out' 2>&1",
        r.local.home.display(),
        r.local.tmux.socket,
        bin().display(),
        r.local.root().display()
    );
    r.local
        .tmux
        .ok(&["new-window", "-d", "-t", "=keepalive:", &cmd]);
    let local_session = format!("remote-box-{tid}");
    wait_for("the local session of the remote task", 20, || {
        r.local.tmux.has_session(&local_session)
    });
    // The client is switched to it, and it shows the agent's screen there, through ssh.
    wait_for("the client on the remote task's session", 20, || {
        r.local
            .tmux
            .ok(&["list-clients", "-F", "#{client_session}"])
            == local_session
    });
    wait_for("the remote agent seen through ssh", 20, || {
        outer
            .ok(&["capture-pane", "-p", "-t", "=term:"])
            .contains("waiting for input")
    });
    // Typing there reaches the agent there.
    outer.ok(&["send-keys", "-t", "=term:", "-l", "hello from here"]);
    outer.ok(&["send-keys", "-t", "=term:", "Enter"]);
    wait_for("the keys to reach the remote agent", 20, || {
        std::fs::read_to_string(r.remote.home.join("agent-log").join(&tid).join("input"))
            .is_ok_and(|s| s.contains("hello from here"))
    });
    // Its sidebar, opened beside it, is drawn here from the host's snapshot.
    r.local.ok(&["monitor", "--once"]);
    // The picker (choose-tree over the task sessions) names its host; publishing the
    // widgets leaves that alone.
    assert_eq!(
        r.local.tmux.ok(&[
            "show",
            "-t",
            &format!("={local_session}:"),
            "-qv",
            "@orange_status"
        ]),
        "box: feat/a"
    );
    let pane = r.local.tmux.ok(&[
        "display",
        "-p",
        "-t",
        &format!("={local_session}:"),
        "#{pane_id}",
    ]);
    let out = r
        .local
        .cmd_in(&r.local.repo, &["sidebar", "toggle", "--json"])
        .env("TMUX_PANE", &pane)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let window = format!("={local_session}:");
    let side = poll(Duration::from_secs(10), || {
        r.local
            .tmux
            .ok(&[
                "list-panes",
                "-t",
                &window,
                "-F",
                "#{pane_id} #{@orange_sidebar}",
            ])
            .lines()
            .find(|l| l.ends_with(" 1"))
            .map(|l| l.split(' ').next().unwrap().to_string())
    })
    .expect("a sidebar pane");
    wait_for("the remote task's sidebar", 10, || {
        let shown = r.local.tmux.ok(&["capture-pane", "-p", "-t", &side]);
        shown.contains("on host box")
            && shown.contains("feat/a")
            && shown.contains("Harness: fake-wait")
            && shown.contains("(not known here)")
    });
    // The `w` key (next task waiting for you) goes to a remote task that needs you: a
    // stuck one, attached over ssh like `task attach`.
    let stuck = id(&r.create("feat/stuck", "get stuck", "fake-stuck"));
    r.remote.wait_status(&stuck, "stuck");
    r.local.ok(&["monitor", "--once"]);
    let client_name = r.local.tmux.ok(&["list-clients", "-F", "#{client_name}"]);
    let went = r.local.ok(&["plugin", "next", "--client", &client_name]);
    assert_eq!(went["switched"], stuck.as_str(), "{went}");
    assert_eq!(went["host"], "box", "{went}");
    let stuck_session = format!("remote-box-{stuck}");
    wait_for("the client on the stuck remote task", 20, || {
        r.local
            .tmux
            .ok(&["list-clients", "-F", "#{client_session}"])
            == stuck_session
    });
    let _ = Command::new("tmux")
        .args([
            "-L",
            &r.local.tmux.socket,
            "kill-session",
            "-t",
            &format!("={stuck_session}"),
        ])
        .status();
    // Leave the ssh before the servers go.
    let _ = Command::new("tmux")
        .args([
            "-L",
            &r.local.tmux.socket,
            "kill-session",
            "-t",
            &format!("={local_session}"),
        ])
        .status();
}
