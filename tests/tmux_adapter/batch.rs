//! Several sessions made in one tmux call: in order, a taken name told alone, and a batch
//! too long for one call (or of several paths) split.

use crate::common::wait_until;

use std::path::PathBuf;

use orange::adapters::tmux::NewSession;

use super::{TestServer, WAIT};

/// The tmux calls a test's sessions make when their `PATH` puts a counting tmux first (the
/// adapter runs tmux with the sessions' `PATH`): that `PATH`, and the log of calls.
fn counted_path(s: &TestServer) -> (String, PathBuf) {
    let (bin, log) = crate::common::counting_tmux(s.dir.path());
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    (path, log)
}

/// A session of `name` on `path` running `command`, marked with its own name.
fn spec(s: &TestServer, name: &str, path: &str, command: &[&str]) -> NewSession {
    NewSession {
        name: name.into(),
        cwd: s.dir.path().into(),
        env: vec![("PATH".into(), path.into())],
        command: command.iter().map(|c| c.to_string()).collect(),
        marks: vec![("@orange_task".into(), name.into())],
        ..Default::default()
    }
}

/// A session id's number: tmux numbers sessions in the order it makes them.
fn made_at(id: &str) -> u32 {
    id.trim_start_matches('$').parse().unwrap()
}

#[test]
fn several_sessions_are_made_in_one_call_in_order_and_a_taken_name_is_told_alone() {
    let s = TestServer::start();
    let t = s.tmux();
    let (path, log) = counted_path(&s);
    let sleep = ["sleep", "3600"];
    // Three at once: one tmux call, in order, each with remain-on-exit and its mark, and
    // the server that made them told with them.
    let made =
        t.new_sessions_unless_taken(&["p/a1", "p/a2", "p/a3"].map(|n| spec(&s, n, &path, &sleep)));
    let made: Vec<_> = made.into_iter().map(|m| m.unwrap().unwrap()).collect();
    assert_eq!(
        crate::common::calls(&log).len(),
        1,
        "{:?}",
        crate::common::calls(&log)
    );
    let ids: Vec<u32> = made.iter().map(|m| made_at(&m.info.id)).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let pid: u32 = s
        .raw(&["display-message", "-p", "#{pid}"])
        .trim()
        .parse()
        .unwrap();
    for (m, n) in made.iter().zip(["p/a1", "p/a2", "p/a3"]) {
        assert_eq!(m.info.name, n);
        assert_eq!(m.server.pid, pid);
        let target = format!("={n}:");
        assert_eq!(
            s.raw(&["show-options", "-wqv", "-t", &target, "remain-on-exit"])
                .trim(),
            "on"
        );
        assert_eq!(
            s.raw(&["show-options", "-qv", "-t", &target, "@orange_task"])
                .trim(),
            n
        );
    }
    // Another's session holds the second name: tmux stops the sequence there, the one
    // before is made, the taken one told (`None`) and left as it was, the rest made in
    // one more call.
    s.raw(&["new-session", "-d", "-s", "p/b2", "sleep", "3601"]);
    let other_pane = s.raw(&["list-panes", "-t", "=p/b2:", "-F", "#{pane_id}"]);
    let before = crate::common::calls(&log).len();
    let made = t.new_sessions_unless_taken(
        &["p/b1", "p/b2", "p/b3", "p/b4"].map(|n| spec(&s, n, &path, &sleep)),
    );
    let calls = crate::common::calls(&log)[before..].to_vec();
    assert_eq!(calls.len(), 2, "{calls:?}");
    let made: Vec<_> = made.into_iter().map(Result::unwrap).collect();
    assert!(made[1].is_none(), "{made:?}");
    let names: Vec<_> = made
        .iter()
        .flatten()
        .map(|m| m.info.name.as_str())
        .collect();
    assert_eq!(names, ["p/b1", "p/b3", "p/b4"]);
    let ids: Vec<u32> = made.iter().flatten().map(|m| made_at(&m.info.id)).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert_eq!(
        s.raw(&["list-panes", "-t", "=p/b2:", "-F", "#{pane_id}"]),
        other_pane
    );
    assert_eq!(
        s.raw(&["show-options", "-wqv", "-t", "=p/b2:", "remain-on-exit"])
            .trim(),
        ""
    );
    assert_eq!(
        s.raw(&["show-options", "-qv", "-t", "=p/b2:", "@orange_task"])
            .trim(),
        ""
    );
    assert!(s
        .raw(&["list-panes", "-t", "=p/b2:", "-F", "#{pane_start_command}"])
        .contains("3601"));
    // One session alone: one call, the taken name told the same way.
    let before = crate::common::calls(&log).len();
    assert_eq!(
        t.new_session_unless_taken(&spec(&s, "p/b2", &path, &sleep))
            .unwrap(),
        None
    );
    assert_eq!(crate::common::calls(&log).len(), before + 1);
    // A spec refused before tmux is asked is answered alone; the others are made.
    let made = t.new_sessions_unless_taken(&[
        spec(&s, "p/c1", &path, &sleep),
        spec(&s, "p/bad name", &path, &sleep),
        spec(&s, "p/c3", &path, &sleep),
    ]);
    assert!(
        made[0].as_ref().unwrap().is_some() && made[2].as_ref().unwrap().is_some(),
        "{made:?}"
    );
    assert_eq!(made[1].as_ref().unwrap_err().code(), "invalid_argument");
}

#[test]
fn a_batch_too_long_for_one_call_or_of_several_paths_is_split() {
    let s = TestServer::start();
    let t = s.tmux();
    let (path, log) = counted_path(&s);
    // Five sessions of about 6 KB each: two fit in one call under tmux's 16 KB limit.
    let big = "x".repeat(6000);
    let specs: Vec<NewSession> = (1..=5)
        .map(|i| {
            let mut sp = spec(&s, &format!("p/big{i}"), &path, &["sleep", "3600"]);
            sp.env.push(("ORANGE_BIG".into(), big.clone()));
            sp
        })
        .collect();
    let made = t.new_sessions_unless_taken(&specs);
    let calls = crate::common::calls(&log);
    assert_eq!(calls.len(), 3, "{} calls", calls.len());
    assert!(
        calls.iter().all(|c| c.len() < 16_384),
        "{:?}",
        calls.iter().map(String::len).collect::<Vec<_>>()
    );
    let made: Vec<_> = made.into_iter().map(|m| m.unwrap().unwrap()).collect();
    let names: Vec<_> = made.iter().map(|m| m.info.name.clone()).collect();
    assert_eq!(names, ["p/big1", "p/big2", "p/big3", "p/big4", "p/big5"]);
    let ids: Vec<u32> = made.iter().map(|m| made_at(&m.info.id)).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    // Sessions of two PATHs (a session's panes get its client's): one call per run of
    // one PATH, in order, and each program sees its own.
    let other = format!("{path}:/orange-no-such-dir");
    let wrote = |i: usize| s.path(&format!("path{i}"));
    let paths = [&path, &path, &other, &path];
    let specs: Vec<NewSession> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let file = wrote(i);
            spec(
                &s,
                &format!("p/path{i}"),
                p,
                &[
                    "sh",
                    "-c",
                    "printf %s \"$PATH\" > \"$0\"; exec sleep 3600",
                    file.to_str().unwrap(),
                ],
            )
        })
        .collect();
    let before = crate::common::calls(&log).len();
    let made = t.new_sessions_unless_taken(&specs);
    assert_eq!(crate::common::calls(&log).len() - before, 3);
    assert!(made.iter().all(|m| matches!(m, Ok(Some(_)))), "{made:?}");
    for (i, p) in paths.iter().enumerate() {
        wait_until("the program wrote its PATH", WAIT, || {
            std::fs::read_to_string(wrote(i)).is_ok_and(|w| w == **p)
        });
    }
}
