//! Loading `orange.tmux`: the keys it binds and the hooks it installs beside a user's
//! own, once however often it runs, the status token, option changes, and one monitor per
//! server.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{bin, wait_for, TaskEnv, TmuxServer};

use super::{load_plugin, load_plugin_with, plugin_dir, sh_quote, tell_server_home};

/// Every binding, whitespace-normalised (list-keys pads its columns to the widest key).
fn all_keys(server: &TmuxServer) -> BTreeSet<String> {
    server
        .ok(&["list-keys"])
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

fn hooks(server: &TmuxServer, name: &str) -> Vec<String> {
    server
        .ok(&["show-hooks", "-g", name])
        .lines()
        .filter(|l| l.contains('['))
        .map(str::to_string)
        .collect()
}

/// Each event orange hooks ([`super::EVENTS`]) has `n` hooks of orange's on `t` (`when`
/// says at which step, in a failure).
fn each_event_has_ours(t: &TmuxServer, n: usize, when: &str) {
    for event in super::EVENTS {
        let lines = hooks(t, event);
        assert_eq!(ours(&lines, event), n, "{event} {when}: {lines:?}");
    }
}

fn ours(lines: &[String], event: &str) -> usize {
    lines
        .iter()
        .filter(|l| l.contains(&format!(" hook {event} --")))
        .count()
}

#[test]
fn plugin_binds_keys_installs_hooks_and_the_status_token_idempotently() {
    let env = TaskEnv::new();
    let t = &env.tmux;
    // The user's own config, which orange must leave as it is.
    let status_right = "#[fg=red]%H:%M #{orange_status} #{session_name} custom;";
    // `\;`: an argument ending in `;` would end the command (tmux reads `\;` as `;`).
    t.ok(&[
        "set",
        "-g",
        "status-right",
        &status_right.replace(';', "\\;"),
    ]);
    assert_eq!(t.ok(&["show", "-gv", "status-right"]), status_right);
    t.ok(&[
        "set",
        "-g",
        "status-left",
        "[#{session_name}] #{@orange_summary}",
    ]);
    t.ok(&["set-hook", "-g", "pane-died", "display-message user-hook"]);
    t.ok(&["set", "-g", "@orange-sidebar-width", "40%"]);
    let before = all_keys(t);

    let loaded = load_plugin(t);
    // How long it took is information, not an assertion.
    eprintln!("orange.tmux took {:?} (run-shell included)", loaded.took);

    let table = t.ok(&["list-keys", "-T", "orange"]);
    for key in ["s", "n", "l", "w", "t", "m", "?"] {
        let re = format!("-T orange {key} ");
        assert!(
            table.lines().any(|l| l
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .contains(&re)),
            "no {key} in the orange table:\n{table}"
        );
    }
    let after = all_keys(t);
    let removed: Vec<_> = before.difference(&after).collect();
    assert!(
        removed.is_empty(),
        "bindings removed or changed: {removed:#?}"
    );
    let added: Vec<_> = after
        .difference(&before)
        .filter(|l| !l.starts_with("bind-key -T orange "))
        .collect();
    assert_eq!(added.len(), 3, "unexpected new bindings: {added:#?}");
    assert!(
        added.contains(&&"bind-key -T prefix O switch-client -T orange".to_string()),
        "{added:#?}"
    );
    assert!(
        added
            .iter()
            .any(|l| l.starts_with("bind-key -T root C-\\\\ if-shell -F \"#{?@orange_task,1,0}\"")),
        "{added:#?}"
    );
    assert!(
        added
            .iter()
            .any(|l| l.starts_with("bind-key -T root C-] if-shell -F \"#{?@orange_task,1,0}\"")),
        "{added:#?}"
    );
    // No tmux default binding is taken: the three keys were free before.
    for key in ["-T prefix O ", "-T root C-\\\\ ", "-T root C-] "] {
        assert!(
            !before.iter().any(|l| l.contains(key)),
            "{key} was bound before"
        );
    }

    // Options: the user's untouched; orange's own published.
    assert_eq!(t.ok(&["show", "-gv", "@orange-sidebar-width"]), "40%");
    assert_eq!(
        t.ok(&["show", "-gv", "@orange_bin"]),
        bin().to_str().unwrap()
    );
    assert_eq!(
        t.ok(&["show", "-gv", "@orange_dir"]),
        plugin_dir().to_str().unwrap()
    );
    for opt in [
        "@orange-key",
        "@orange-sidebar-side",
        "@orange-sidebar-auto",
    ] {
        assert_eq!(
            t.ok(&["show", "-gqv", opt]),
            "",
            "orange set the user option {opt}"
        );
    }

    // Hooks: the user's first and intact, then orange's, once per event.
    let died = hooks(t, "pane-died");
    assert_eq!(
        died[0], "pane-died[0] display-message user-hook",
        "{died:?}"
    );
    each_event_has_ours(t, 1, "after the first run");
    assert!(died[1].contains(&format!(
        "'{}' hook pane-died --pane #{{q:pane_id}} --session #{{q:session_name}}",
        bin().display()
    )));

    // The token is replaced, the rest of the string is byte-identical (the trailing `;`
    // too); a string without the token is not touched.
    let widget = format!(
        "#{{@orange_build}}#('{}' status --format tmux)",
        bin().display()
    );
    assert_eq!(
        t.ok(&["show", "-gv", "status-right"]),
        status_right.replace("#{orange_status}", &widget)
    );
    assert_eq!(
        t.ok(&["show", "-gv", "status-left"]),
        "[#{session_name}] #{@orange_summary}"
    );

    // Again: nothing changes, nothing is duplicated.
    let again = load_plugin(t);
    let took = again.took;
    eprintln!("orange.tmux again took {took:?}");
    assert_eq!(all_keys(t), after);
    assert_eq!(hooks(t, "pane-died")[0], died[0]);
    each_event_has_ours(t, 1, "after a second run");
    assert_eq!(
        t.ok(&["show", "-gv", "status-right"]),
        status_right.replace("#{orange_status}", &widget)
    );
    // The sidebar's focus hook: once, beside the user's own, gone with @orange-hooks off.
    t.ok(&[
        "set-hook",
        "-g",
        "window-pane-changed",
        "display-message user-focus",
    ]);
    let focus = |t: &TmuxServer| {
        hooks(t, "window-pane-changed")
            .into_iter()
            .filter(|h| h.contains("@orange_sidebar") && h.contains("1b 5b 49"))
            .count()
    };
    let _third = load_plugin(t);
    assert_eq!(focus(t), 1, "{:?}", hooks(t, "window-pane-changed"));
    let _fourth = load_plugin(t);
    assert_eq!(focus(t), 1, "{:?}", hooks(t, "window-pane-changed"));
    t.ok(&["set", "-g", "@orange-hooks", "off"]);
    let _off = load_plugin(t);
    assert_eq!(focus(t), 0);
    assert_eq!(
        hooks(t, "window-pane-changed"),
        ["window-pane-changed[0] display-message user-focus"]
    );
}

#[test]
fn plugin_leaves_a_users_keys_alone_and_follows_option_changes() {
    let env = TaskEnv::new();
    let t = &env.tmux;
    t.ok(&["bind-key", "O", "display-message", "mine"]);
    t.ok(&["bind-key", "-n", "C-\\", "display-message", "mine too"]);
    t.ok(&["set-hook", "-g", "session-closed", "display-message bye"]);
    let _plugin = load_plugin(t);
    let keys = all_keys(t);
    assert!(
        keys.contains("bind-key -T prefix O display-message mine"),
        "prefix O taken"
    );
    assert!(keys.contains("bind-key -T root C-\\\\ display-message \"mine too\""));
    assert!(keys
        .iter()
        .any(|l| l.starts_with("bind-key -T root C-] if-shell")));
    assert!(keys.iter().any(|l| l.starts_with("bind-key -T orange s ")));

    // The user picks another key, and turns the hooks and the zoom key off.
    t.ok(&["set", "-g", "@orange-key", "M-o"]);
    t.ok(&["set", "-g", "@orange-zoom-key", "off"]);
    t.ok(&["set", "-g", "@orange-hooks", "off"]);
    let _plugin = load_plugin(t);
    let keys = all_keys(t);
    assert!(keys.contains("bind-key -T prefix M-o switch-client -T orange"));
    assert!(keys.contains("bind-key -T prefix O display-message mine"));
    assert!(
        !keys.iter().any(|l| l.starts_with("bind-key -T root C-]")),
        "the zoom key stays bound after @orange-zoom-key off"
    );
    each_event_has_ours(t, 0, "with @orange-hooks off");
    assert_eq!(
        hooks(t, "session-closed"),
        vec!["session-closed[0] display-message bye"]
    );

    // A wrong @orange-bin: orange falls back to its own build or PATH and says so.
    t.ok(&["set", "-g", "@orange-key", "O"]);
    t.ok(&["unbind-key", "O"]);
    let _plugin = load_plugin_with(t, Path::new("/nonexistent/orange"));
    let used = t.ok(&["show", "-gv", "@orange_bin"]);
    assert_ne!(used, "/nonexistent/orange");
    assert!(Path::new(&used).is_file(), "{used}");
    let keys = all_keys(t);
    assert!(keys.contains("bind-key -T prefix O switch-client -T orange"));
    assert!(
        !keys.iter().any(|l| l.starts_with("bind-key -T prefix M-o")),
        "the old key M-o stays bound"
    );
}

#[test]
fn hooks_hand_hostile_session_names_to_orange_literally() {
    let env = TaskEnv::new();
    let root = env.root();
    let log = root.join("hook.log");
    let recorder = root.join("recorder.sh");
    std::fs::write(
        &recorder,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> {}\necho --- >> {}\n",
            sh_quote(log.to_str().unwrap()),
            sh_quote(log.to_str().unwrap())
        ),
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(&recorder)
        .status()
        .unwrap();
    let _plugin = load_plugin_with(&env.tmux, &recorder);
    let pwned = root.join("PWNED");
    // (No `#`: new-session itself expands formats in the name it is given.)
    let name = format!(
        "x'; touch {p}; '$(touch {p}) `touch {p}` \"q\" ~ *",
        p = pwned.display()
    );
    // Addressed by id from here on.
    let ids = env.tmux.ok(&[
        "new-session",
        "-d",
        "-P",
        "-F",
        "#{session_id} #{pane_id}",
        "-s",
        &name,
        "-x",
        "100",
        "-y",
        "30",
        "sleep",
        "30",
    ]);
    let (sid, pane) = ids.split_once(' ').unwrap();
    assert_eq!(
        env.tmux
            .ok(&["display", "-p", "-t", pane, "#{session_name}"]),
        name
    );
    env.tmux.ok(&[
        "set-option",
        "-w",
        "-t",
        &format!("{sid}:"),
        "remain-on-exit",
        "on",
    ]);
    env.tmux.ok(&["respawn-pane", "-k", "-t", pane, "exit 3"]);
    let want = format!("hook\npane-died\n--pane\n{pane}\n--session\n{name}\n---");
    let read = || std::fs::read_to_string(&log).unwrap_or_default();
    // Debian's tmux 3.3a sometimes never reaps a program that exits at once (so no
    // pane-died): a SIGCHLD makes it look, as orange's adapter does.
    let server_pid = env.tmux.ok(&["display", "-p", "#{pid}"]);
    wait_for("the pane-died hook", 10, || {
        let _ = Command::new("kill").args(["-CHLD", &server_pid]).status();
        read().contains(&want)
    });
    env.tmux.ok(&["kill-session", "-t", sid]);
    let want = format!("hook\nsession-closed\n--session\n{name}\n---");
    wait_for("the session-closed hook", 10, || read().contains(&want));
    // Something that must NOT happen: a `touch` after the hook's command would come a
    // moment after its log line; every look for 300 ms finds no file.
    common::holds_for(
        "no file made by a session name",
        Duration::from_millis(300),
        || !pwned.exists(),
    );
}

#[test]
fn the_monitor_starts_once_per_server_and_new_sessions_can_open_with_the_sidebar() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    tell_server_home(&env);
    env.tmux.ok(&["set", "-g", "@orange-monitor", "on"]);
    env.tmux.ok(&["set", "-g", "@orange-sidebar-auto", "on"]);
    let _loaded = load_plugin(&env.tmux);
    let _again = load_plugin(&env.tmux);
    let run = env.home.join("run");
    common::wait_for("the monitor's pid file", 10, || {
        std::fs::read_dir(&run)
            .map(|d| {
                d.flatten().any(|e| {
                    e.file_name().to_string_lossy().starts_with("monitor-")
                        && e.file_name().to_string_lossy().ends_with(".json")
                })
            })
            .unwrap_or(false)
    });
    // The monitors of this ORANGE_HOME (the plugin was loaded twice: the second one
    // exits at once when it finds the first one's lock).
    let monitors = || -> Vec<String> {
        let out = std::process::Command::new("pgrep")
            .args(["-f", &format!("{} monitor", bin().display())])
            .output()
            .unwrap()
            .stdout;
        String::from_utf8(out)
            .unwrap()
            .lines()
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/environ"))
                    .map(|e| String::from_utf8_lossy(&e).contains(env.home.to_str().unwrap()))
                    .unwrap_or(false)
            })
            .map(str::to_string)
            .collect()
    };
    common::wait_for("one monitor for this server", 10, || monitors().len() == 1);
    // Something that must NOT happen: a second one staying up. Every look for 500 ms
    // finds one.
    common::holds_for(
        "one monitor for this server",
        Duration::from_millis(500),
        || monitors().len() == 1,
    );
    let mine = monitors();
    assert_eq!(mine.len(), 1, "one monitor for this server: {mine:?}");
    // @orange-sidebar-auto: a new task session opens with the sidebar beside the agent.
    let t = env.create(&["auto/sb", "with a sidebar", "--harness", "fake-wait"]);
    let sess = t["tmux_session_id"].as_str().unwrap();
    let panes = env.tmux.ok(&[
        "list-panes",
        "-t",
        sess,
        "-F",
        "#{pane_id} #{@orange_sidebar} #{pane_active}",
    ]);
    assert_eq!(panes.lines().count(), 2, "{panes}");
    assert!(
        panes
            .lines()
            .any(|l| l.split_whitespace().nth(1) == Some("1")),
        "{panes}"
    );
    let agent = t["tmux_pane_id"].as_str().unwrap();
    assert!(
        panes
            .lines()
            .any(|l| l.starts_with(agent) && l.ends_with(" 1")),
        "focus stays on the agent: {panes}"
    );
    // Stop the monitor before the temp dir goes.
    for p in mine {
        let _ = std::process::Command::new("kill").arg(p).status();
    }
}
