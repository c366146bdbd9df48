//! The tmux plugin against real tmux: `orange.tmux` loaded into a private server with a
//! hostile user config, then its keys pressed through a real client (a client of the test
//! server running in a pane of a second, outer server: `send-keys` to the outer pane is
//! typing on the inner client's terminal, so the keys go through the inner key tables).

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{bin, id, poll, wait_for, TaskEnv, TmuxServer};
use serde_json::Value;

fn plugin_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

const EVENTS: [&str; 4] = [
    "pane-died",
    "pane-exited",
    "session-closed",
    "client-session-changed",
];

/// The plugin loaded on a test server. Dropped (before the server), it removes the hooks:
/// killing the server fires them, and an `orange hook` started then would write into the
/// test's state after its temp dir is gone.
#[must_use]
pub(crate) struct Loaded<'a> {
    server: &'a TmuxServer,
    took: Duration,
}

impl Drop for Loaded<'_> {
    fn drop(&mut self) {
        for e in EVENTS {
            let _ = self.server.tmux(&["set-hook", "-gu", e]);
        }
    }
}

/// `run-shell orange.tmux` with `@orange-bin` set to `orange_bin` (how a user loads it
/// without TPM).
fn load_plugin_with<'a>(server: &'a TmuxServer, orange_bin: &Path) -> Loaded<'a> {
    server.ok(&["set", "-g", "@orange-bin", orange_bin.to_str().unwrap()]);
    // No background monitor unless a test asks for one (it would outlive the test's
    // temp dir by a few seconds): `monitor_starts_once_per_server` does.
    if server
        .tmux(&["show", "-gv", "@orange-monitor"])
        .stdout
        .is_empty()
    {
        server.ok(&["set", "-g", "@orange-monitor", "off"]);
    }
    let script = plugin_dir().join("orange.tmux");
    let start = Instant::now();
    server.ok(&["run-shell", &sh_quote(script.to_str().unwrap())]);
    Loaded {
        server,
        took: start.elapsed(),
    }
}

pub(crate) fn load_plugin(server: &TmuxServer) -> Loaded<'_> {
    load_plugin_with(server, &bin())
}

/// The server's global environment gets the test's ORANGE_HOME, as a user's tmux has it
/// from the shell that started it: the keys' `orange` must see the same state.
pub(crate) fn tell_server_home(env: &TaskEnv) {
    env.tmux.ok(&[
        "set-environment",
        "-g",
        "ORANGE_HOME",
        env.home.to_str().unwrap(),
    ]);
}

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

fn ours(lines: &[String], event: &str) -> usize {
    lines
        .iter()
        .filter(|l| l.contains(&format!(" hook {event} --")))
        .count()
}

/// The task's session id; lifecycle marks the session with `@orange_task` = the task id,
/// which the plugin's session-scoped keys rely on.
fn task_session(env: &TaskEnv, task: &Value) -> String {
    let sid = task["tmux_session_id"].as_str().unwrap().to_string();
    let marked = env.tmux.ok(&[
        "show-options",
        "-t",
        &format!("{sid}:"),
        "-qv",
        "@orange_task",
    ]);
    assert_eq!(
        marked,
        id(task),
        "session {sid} is not marked with its task"
    );
    sid
}

/// A real client on `inner`, running in a pane of a second (outer) server.
struct Client {
    outer: TmuxServer,
    name: String,
}

impl Client {
    /// Attach to `target` (`=name` or a session id).
    fn attach(root: &Path, inner: &TmuxServer, target: &str) -> Client {
        let outer = TmuxServer::start(root, &[]);
        let cmd = format!(
            "unset TMUX; exec tmux -L {} attach-session -t {}",
            inner.socket,
            sh_quote(target)
        );
        outer.ok(&[
            "new-session",
            "-d",
            "-s",
            "term",
            "-x",
            "160",
            "-y",
            "45",
            "sh",
            "-c",
            &cmd,
        ]);
        let mut name = String::new();
        wait_for("a client on the test server", 10, || {
            name = inner.ok(&["list-clients", "-F", "#{client_name}"]);
            !name.is_empty()
        });
        // Attached and drawn (its status line at least): keys typed now reach it.
        wait_for("the client to draw", 10, || {
            !outer
                .ok(&["capture-pane", "-p", "-t", "=term:"])
                .trim()
                .is_empty()
        });
        Client { outer, name }
    }

    /// Press keys one by one, as a person does (a key-table switch takes effect only after
    /// the key that asked for it has been handled).
    fn press(&self, keys: &[&str]) {
        for k in keys {
            self.outer.ok(&["send-keys", "-t", "=term:", k]);
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn type_text(&self, text: &str) {
        // An argument ending in `;` would end the command: tmux reads `\;` as `;`.
        let text = match text.strip_suffix(';') {
            Some(t) => format!("{t}\\;"),
            None => text.to_string(),
        };
        self.outer
            .ok(&["send-keys", "-t", "=term:", "-l", "--", &text]);
        std::thread::sleep(Duration::from_millis(200));
    }

    /// What the client's terminal shows.
    fn screen(&self) -> String {
        self.outer.ok(&["capture-pane", "-p", "-t", "=term:"])
    }

    fn wait_screen(&self, what: &str, f: impl Fn(&str) -> bool) -> String {
        let mut last = String::new();
        poll(Duration::from_secs(10), || {
            last = self.screen();
            f(&last).then(|| last.clone())
        })
        .unwrap_or_else(|| panic!("timed out waiting for {what}; the client shows:\n{last}"))
    }

    fn session(&self, inner: &TmuxServer) -> String {
        inner.ok(&["display", "-p", "-c", &self.name, "#{session_name}"])
    }

    fn switch_to(&self, inner: &TmuxServer, target: &str) {
        inner.ok(&["switch-client", "-c", &self.name, "-t", target]);
        std::thread::sleep(Duration::from_millis(200));
    }

    /// The client's message log (what display-message showed it).
    fn messages(&self, inner: &TmuxServer) -> String {
        inner.ok(&["show-messages", "-t", &self.name])
    }
}

/// `(pane_id, active, @orange_sidebar, pane_left, pane_width)` of the window's panes.
pub(crate) fn window_panes(
    server: &TmuxServer,
    target: &str,
) -> Vec<(String, bool, bool, u32, u32)> {
    server
        .ok(&[
            "list-panes",
            "-t",
            target,
            "-F",
            "#{pane_id} #{pane_active} #{?@orange_sidebar,1,0} #{pane_left} #{pane_width}",
        ])
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (
                f[0].to_string(),
                f[1] == "1",
                f[2] == "1",
                f[3].parse().unwrap(),
                f[4].parse().unwrap(),
            )
        })
        .collect()
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
    for event in [
        "pane-died",
        "pane-exited",
        "session-closed",
        "client-session-changed",
    ] {
        assert_eq!(
            ours(&hooks(t, event), event),
            1,
            "{event}: {:?}",
            hooks(t, event)
        );
    }
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
    for event in [
        "pane-died",
        "pane-exited",
        "session-closed",
        "client-session-changed",
    ] {
        assert_eq!(
            ours(&hooks(t, event), event),
            1,
            "{event} after a second run"
        );
    }
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
    for event in [
        "pane-died",
        "pane-exited",
        "session-closed",
        "client-session-changed",
    ] {
        assert_eq!(
            ours(&hooks(t, event), event),
            0,
            "{event} with @orange-hooks off"
        );
    }
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
fn ctrl_keys_reach_plain_panes_and_act_in_task_sessions() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    tell_server_home(&env);
    let _plugin = load_plugin(&env.tmux);
    let t = env.create(&["keys", "keys", "--harness", "fake-wait"]);
    env.wait_session(&id(&t), "live");
    let sid = task_session(&env, &t);
    env.tmux.ok(&[
        "new-session",
        "-d",
        "-s",
        "plain",
        "-x",
        "100",
        "-y",
        "30",
        "stty -isig -icanon -echo; exec cat -v",
    ]);
    let client = Client::attach(&env.root(), &env.tmux, "=plain");

    // Outside task sessions the keys reach the application unchanged.
    client.press(&["C-\\", "C-]"]);
    client.type_text("x");
    wait_for("^\\^]x in the plain pane", 10, || {
        env.tmux
            .ok(&["capture-pane", "-p", "-t", "=plain:"])
            .contains("^\\^]x")
    });

    // In a task session: Ctrl+\ goes to the sidebar and back, Ctrl+] zooms the agent. A
    // stand-in sidebar pane, so this does not depend on `orange sidebar`.
    client.switch_to(&env.tmux, &sid);
    wait_for("the client on the task session", 10, || {
        env.tmux.ok(&["list-clients", "-F", "#{session_id}"]) == sid
    });
    let window = format!("{sid}:");
    let agent = env.tmux.ok(&["display", "-p", "-t", &window, "#{pane_id}"]);
    let fake = env.tmux.ok(&[
        "split-window",
        "-h",
        "-b",
        "-d",
        "-l",
        "30%",
        "-t",
        &agent,
        "-P",
        "-F",
        "#{pane_id}",
        "cat",
    ]);
    env.tmux
        .ok(&["set", "-p", "-t", &fake, "@orange_sidebar", "1"]);
    env.tmux
        .ok(&["set", "-p", "-t", &fake, "@orange_sidebar_for", &agent]);
    let active = || env.tmux.ok(&["display", "-p", "-t", &window, "#{pane_id}"]);
    let zoomed = || {
        env.tmux
            .ok(&["display", "-p", "-t", &window, "#{window_zoomed_flag}"])
            == "1"
    };
    // What the client, the window and orange saw, for a wait that times out.
    let dump = || {
        format!(
            "client: {}\npanes:\n{}\nmessages:\n{}\ntask: {}\nlog:\n{}",
            env.tmux.ok(&["list-clients", "-F", "#{client_name} #{client_session}"]),
            env.tmux.ok(&[
                "list-panes",
                "-t",
                &window,
                "-F",
                "#{pane_id} active=#{pane_active} dead=#{pane_dead} sidebar=#{@orange_sidebar} for=#{@orange_sidebar_for} #{pane_current_command}",
            ]),
            client.messages(&env.tmux),
            env.task(&id(&t))["session"],
            std::fs::read_to_string(env.home.join("orange.log")).unwrap_or_default(),
        )
    };
    client.press(&["C-\\"]);
    if poll(Duration::from_secs(10), || (active() == fake).then_some(())).is_none() {
        panic!("Ctrl+\\ did not focus the sidebar {fake}\n{}", dump());
    }
    client.press(&["C-\\"]);
    wait_for("Ctrl+\\ to go back to the agent", 10, || active() == agent);
    client.press(&["C-]"]);
    wait_for("Ctrl+] to zoom the agent", 10, || {
        zoomed() && active() == agent
    });
    client.press(&["C-]"]);
    wait_for("Ctrl+] again to unzoom", 10, || !zoomed());
    client.press(&["C-\\"]);
    wait_for("the sidebar focused", 10, || active() == fake);
    client.press(&["C-]"]);
    wait_for("Ctrl+] from the sidebar zooms the agent", 10, || {
        zoomed() && active() == agent
    });
    // The agent never got the keys: Ctrl+\ would have killed it (SIGQUIT).
    assert_eq!(env.task(&id(&t))["session"]["state"], "live");

    // Without a sidebar, Ctrl+\ opens the real one and focuses it.
    client.press(&["C-]"]);
    wait_for("unzoomed", 10, || !zoomed());
    env.tmux.ok(&["kill-pane", "-t", &fake]);
    client.press(&["C-\\"]);
    wait_for("a sidebar opened by Ctrl+\\, marked", 10, || {
        let panes = window_panes(&env.tmux, &window);
        panes.len() == 2 && panes.iter().any(|p| p.2)
    });
    let panes = window_panes(&env.tmux, &window);
    let side = panes.iter().find(|p| p.2).expect("a marked sidebar");
    wait_for("the new sidebar focused", 10, || active() == side.0);
    client.press(&["C-\\"]);
    wait_for("back to the agent", 10, || active() == agent);
}

/// tmux's `if-shell -F` takes any value that starts with `0` for false: the keys tested a
/// task id as is, so in the session of a task such as `0jk8pw` Ctrl+] went to the agent and
/// Ctrl+\\ killed it (SIGQUIT). Seen in CI, 1 run in about 30.
#[test]
fn keys_act_in_a_task_session_whose_id_starts_with_0() {
    let env = TaskEnv::new();
    let _plugin = load_plugin(&env.tmux);
    env.tmux.ok(&[
        "new-session",
        "-d",
        "-s",
        "zero",
        "-x",
        "100",
        "-y",
        "30",
        "stty -isig -icanon -echo; exec cat -v",
    ]);
    env.tmux
        .ok(&["set-option", "-t", "=zero:", "@orange_task", "0jk8pw"]);
    env.tmux.ok(&["split-window", "-d", "-t", "=zero:", "cat"]);
    let client = Client::attach(&env.root(), &env.tmux, "=zero");
    client.press(&["C-]"]);
    wait_for("Ctrl+] to zoom in a session of task 0jk8pw", 10, || {
        env.tmux
            .ok(&["display", "-p", "-t", "=zero:", "#{window_zoomed_flag}"])
            == "1"
    });
    let screen = env.tmux.ok(&["capture-pane", "-p", "-t", "=zero:"]);
    assert!(
        !screen.contains("^]"),
        "the key reached the pane:\n{screen}"
    );
}

/// Issue 15: every key acts or says why not. The sidebar key in a session that is not a
/// task's says so on the status line and opens nothing (it used to open a pane that closed
/// at once, without a word).
#[test]
fn the_sidebar_key_outside_a_task_session_says_why() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    tell_server_home(&env);
    let _plugin = load_plugin(&env.tmux);
    env.tmux
        .ok(&["new-session", "-d", "-s", "plain", "-x", "160", "-y", "40"]);
    let client = Client::attach(&env.root(), &env.tmux, "plain");
    client.press(&["C-b", "O", "s"]);
    wait_for("the message", 10, || {
        client.messages(&env.tmux).contains("not a task session")
    });
    let messages = client.messages(&env.tmux);
    assert!(messages.contains("prefix O l"), "{messages}");
    assert_eq!(window_panes(&env.tmux, "plain:").len(), 1);
}

/// `orange demo` writes the plugin out of its own binary: every file of tmux/ must be
/// built in (an `include_str!` of it somewhere in src/), or the demo's keys break.
#[test]
fn every_plugin_file_is_built_into_the_binary_for_the_demo() {
    fn text_of(dir: &Path, out: &mut String) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                text_of(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push_str(&std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    let mut src = String::new();
    text_of(&plugin_dir().join("src"), &mut src);
    let mut files = vec!["orange.tmux".to_string()];
    for e in std::fs::read_dir(plugin_dir().join("tmux"))
        .unwrap()
        .flatten()
    {
        files.push(format!("tmux/{}", e.file_name().to_string_lossy()));
    }
    let missing: Vec<&String> = files
        .iter()
        .filter(|f| !src.contains(&format!("/{f}\")")))
        .collect();
    assert!(missing.is_empty(), "not built into orange: {missing:?}");
}

/// A key whose binary went away (removed, or not built yet) says so on the status line,
/// with the path as it is: a `#S` in it is no format (tmux would show the session name).
#[test]
fn a_key_whose_binary_is_gone_says_it_is_not_built() {
    let env = TaskEnv::new();
    tell_server_home(&env);
    let dir = env.root().join("bin#S");
    std::fs::create_dir_all(&dir).unwrap();
    let gone = dir.join("orange");
    std::fs::write(&gone, "#!/bin/sh\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&gone, std::fs::Permissions::from_mode(0o755)).unwrap();
    let _plugin = load_plugin_with(&env.tmux, &gone);
    std::fs::remove_file(&gone).unwrap();
    env.tmux
        .ok(&["new-session", "-d", "-s", "plain", "-x", "160", "-y", "40"]);
    let client = Client::attach(&env.root(), &env.tmux, "plain");
    client.press(&["C-b", "O", "s"]);
    let want = format!(
        "orange: {} is not built yet (or @orange-bin is wrong)",
        gone.display()
    );
    // The log also has each display-message command line: look at what was shown.
    let shown = format!("message: {want}");
    let mut log = String::new();
    let said = common::poll(Duration::from_secs(10), || {
        log = client.messages(&env.tmux);
        log.lines().any(|l| l.ends_with(&shown)).then_some(())
    });
    assert!(
        said.is_some(),
        "no {shown:?} in the client's messages:\n{log}"
    );
}

#[test]
fn sidebar_toggles_beside_the_agent_and_refuses_a_small_window() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    tell_server_home(&env);
    let _plugin = load_plugin(&env.tmux);
    let t = env.create(&["side/bar", "show me", "--harness", "fake-wait"]);
    env.wait_session(&id(&t), "live");
    let sid = t["tmux_session_id"].as_str().unwrap().to_string();
    let window = format!("{sid}:");
    let agent = env.tmux.ok(&["display", "-p", "-t", &window, "#{pane_id}"]);
    let client = Client::attach(&env.root(), &env.tmux, &sid);
    let width: u32 = env
        .tmux
        .ok(&["display", "-p", "-t", &window, "#{window_width}"])
        .parse()
        .unwrap();

    client.press(&["C-b", "O", "s"]);
    // The pane is split off first and marked right after: wait for the mark.
    wait_for("the sidebar pane, marked", 10, || {
        let panes = window_panes(&env.tmux, &window);
        panes.len() == 2 && panes.iter().any(|p| p.2)
    });
    let panes = window_panes(&env.tmux, &window);
    let side = panes
        .iter()
        .find(|p| p.2)
        .expect("a pane marked @orange_sidebar");
    let main = panes.iter().find(|p| !p.2).unwrap();
    assert_eq!(main.0, agent, "the agent pane changed");
    assert!(main.1, "the focus left the agent pane: {panes:?}");
    assert_eq!(side.3, 0, "the sidebar is not on the left: {panes:?}");
    let want = width * 30 / 100;
    assert!(
        side.4 + 2 >= want && side.4 <= want + 2,
        "sidebar {} columns wide, want about {want} of {width}",
        side.4
    );
    assert_eq!(
        env.tmux
            .ok(&["show", "-pqv", "-t", &side.0, "@orange_sidebar_for"]),
        agent
    );
    // Its text, once `orange sidebar` renders: the task's branch, never an error.
    let mut text = String::new();
    let rendered = poll(Duration::from_secs(10), || {
        text = env.tmux.ok(&["capture-pane", "-p", "-t", &side.0]);
        let done = text.contains("app/side/bar")
            || text.contains("not_implemented")
            || text.contains("not implemented");
        done.then_some(())
    });
    assert!(
        !text.contains("not_implemented") && !text.contains("not implemented"),
        "the sidebar says it is not implemented:\n{text}"
    );
    assert!(
        rendered.is_some() && text.contains("app/side/bar"),
        "the sidebar shows no header for app/side/bar:\n{text}"
    );

    client.press(&["C-b", "O", "s"]);
    wait_for("the sidebar to close", 10, || {
        window_panes(&env.tmux, &window).len() == 1
    });
    assert_eq!(window_panes(&env.tmux, &window)[0].0, agent);

    // A window below 80×15: refused, with a message, nothing split.
    client
        .outer
        .ok(&["resize-window", "-t", "=term:", "-x", "70", "-y", "20"]);
    wait_for("the window to shrink", 10, || {
        env.tmux
            .ok(&["display", "-p", "-t", &window, "#{window_width}"])
            == "70"
    });
    client.press(&["C-b", "O", "s"]);
    wait_for("the too-small message", 10, || {
        client.messages(&env.tmux).contains("too small")
    });
    assert_eq!(window_panes(&env.tmux, &window).len(), 1);
}

/// The new-task popup is a terminal: a task whose workspace is being set up shows the
/// setup's progress live there, and the confirmation is the result, not a progress line.
#[test]
fn the_new_task_popup_shows_a_workspace_setup_while_it_runs() {
    let env = TaskEnv::new();
    let go = env.root().join("go");
    let setup = format!(
        "echo resolving packages; while [ ! -e {} ]; do sleep 0.05; done",
        go.display()
    );
    env.add_project(&["--setup-cmd", &setup]);
    let cfg = env.home.join("config.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, format!("default_harness = \"fake-wait\"\n{text}")).unwrap();
    tell_server_home(&env);
    let _plugin = load_plugin(&env.tmux);
    env.tmux.ok(&[
        "new-session",
        "-d",
        "-s",
        "work",
        "-c",
        env.repo.to_str().unwrap(),
    ]);
    let client = Client::attach(&env.root(), &env.tmux, "=work");
    client.press(&["C-b", "O", "n"]);
    client.wait_screen("the branch question", |s| {
        s.contains("branch (empty: automatic):")
    });
    client.type_text("feat/slow");
    client.press(&["Enter"]);
    client.wait_screen("the task question", |s| {
        s.contains("task (empty: type it to the agent):")
    });
    client.type_text("wait for the setup");
    client.press(&["Enter"]);
    client.wait_screen("the setup's progress in the popup", |s| {
        s.contains("app--1: setup `echo resolving packages;") && s.contains("· resolving packages")
    });
    std::fs::write(&go, "").unwrap();
    wait_for("the confirmation", 20, || {
        client.messages(&env.tmux).contains("orange: created task")
    });
    assert!(
        !client.messages(&env.tmux).contains("creating workspace"),
        "{}",
        client.messages(&env.tmux)
    );
}

#[test]
fn new_task_key_takes_quotes_and_substitutions_literally() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let cfg = env.home.join("config.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, format!("default_harness = \"fake-wait\"\n{text}")).unwrap();
    tell_server_home(&env);
    let _plugin = load_plugin(&env.tmux);
    env.tmux.ok(&[
        "new-session",
        "-d",
        "-s",
        "work",
        "-c",
        env.repo.to_str().unwrap(),
    ]);
    let client = Client::attach(&env.root(), &env.tmux, "=work");
    let pwned = env.root().join("PWNED");
    let p = pwned.display();
    // Everything tmux, a format or a shell could take for syntax, and tmux 3.3a's
    // command-prompt traps (%% re-substituted, a final ; dropped).
    let summary = format!(
        "it's \"quoted\"; $(touch {p}) `touch {p}` #{{session_name}} #(touch {p}) ~ \\ %1 %% %%% $HOME \" ; run-shell 'touch {p}' ; \" end;"
    );
    client.press(&["C-b", "O", "n"]);
    client.wait_screen("the branch question", |s| {
        s.contains("branch (empty: automatic):")
    });
    client.type_text("feat/quote");
    client.press(&["Enter"]);
    client.wait_screen("the task question", |s| {
        s.contains("task (empty: type it to the agent):")
    });
    client.type_text(&summary);
    client.press(&["Enter"]);
    let mut found = Value::Null;
    wait_for("the task created from the popup", 20, || {
        let (_, list) = env.json(&["task", "list"]);
        found = list
            .as_array()
            .and_then(|l| l.iter().find(|t| t["branch"] == "feat/quote").cloned())
            .unwrap_or(Value::Null);
        !found.is_null()
    });
    assert_eq!(found["summary"], summary.as_str());
    assert_eq!(found["harness"], "fake-wait");
    wait_for("the confirmation", 10, || {
        client.messages(&env.tmux).contains("created task")
    });
    // Something that must NOT happen: every look for 300 ms finds no file made by what the
    // user typed.
    common::holds_for(
        "no file made by what the user typed",
        Duration::from_millis(300),
        || !pwned.exists(),
    );
    // The popup is gone. An empty task starts the agent with no prompt and takes the
    // client to it, to type the first prompt there.
    client.wait_screen("the popup to close", |s| !s.contains("orange: new task"));
    client.press(&["C-b", "O", "n"]);
    client.wait_screen("the branch question", |s| {
        s.contains("branch (empty: automatic):")
    });
    client.type_text("feat/typed");
    client.press(&["Enter"]);
    client.wait_screen("the task question", |s| {
        s.contains("task (empty: type it to the agent):")
    });
    client.press(&["Enter"]);
    // (`#{client_session}`: `#{session_name}` of `display -c` names the target pane's.)
    wait_for("the client at the new agent", 20, || {
        env.tmux
            .ok(&["list-clients", "-F", "#{client_name} #{client_session}"])
            .lines()
            .any(|l| l == format!("{} app/feat/typed", client.name))
    });
    let (_, list) = env.json(&["task", "list"]);
    let typed = list
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["branch"] == "feat/typed")
        .cloned()
        .unwrap();
    assert_eq!(typed["awaiting_prompt"], true, "{typed}");
    assert_eq!(typed["summary"], "feat/typed", "{typed}");
    assert!(
        client.messages(&env.tmux).contains("no prompt"),
        "{}",
        client.messages(&env.tmux)
    );
    assert_eq!(env.ok(&["task", "list"]).as_array().unwrap().len(), 2);
    // Issue 15: its header names the project (not a directory), and Escape cancels.
    client.wait_screen("the popup to close", |s| !s.contains("orange: new task"));
    client.press(&["C-b", "O", "n"]);
    let screen = client.wait_screen("the branch question", |s| {
        s.contains("branch (empty: automatic):")
    });
    assert!(screen.contains("new task in project app"), "{screen}");
    assert!(screen.contains("Esc cancels"), "{screen}");
    client.type_text("half-typed");
    client.press(&["Escape"]);
    wait_for("the cancellation", 10, || {
        client
            .messages(&env.tmux)
            .contains("no task created (cancelled)")
    });
    client.wait_screen("the popup to close", |s| !s.contains("orange: new task"));
    assert_eq!(env.ok(&["task", "list"]).as_array().unwrap().len(), 2);
}

/// Issue 27: the picker shows a group as one parent row (its base branch, heading its
/// first member) with its members hanging under it; an ordinary task stays as it was.
#[test]
fn the_picker_shows_a_group_as_a_parent_row_with_its_members_under_it() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "4"]);
    tell_server_home(&env);
    let _plugin = load_plugin(&env.tmux);
    let solo = env.create(&["solo", "alone", "--harness", "fake-wait"]);
    env.wait_session(&id(&solo), "live");
    let g = env.ok(&[
        "task",
        "create",
        "api/fix",
        "fix it",
        "--n",
        "3",
        "--harness",
        "fake-wait",
    ]);
    for m in g["members"].as_array().unwrap() {
        let t = m["task"]["id"].as_str().or(m["task"].as_str()).unwrap();
        env.wait_session(t, "live");
    }
    env.tmux.ok(&["new-session", "-d", "-s", "work"]);
    let client = Client::attach(&env.root(), &env.tmux, "=work");
    client.press(&["C-b", "O", "l"]);
    let s = client.wait_screen("the picker with the group", |s| s.contains("app/api/fix/3"));
    eprintln!("picker:\n{s}");
    let row = |name: &str| {
        s.lines()
            .find(|l| l.contains(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("no row for {name}:\n{s}"))
            .to_string()
    };
    let rows: Vec<usize> = ["app/api/fix/1", "app/api/fix/2", "app/api/fix/3"]
        .iter()
        .map(|n| {
            s.lines()
                .position(|l| l.contains(&format!("{n}: ")))
                .unwrap()
        })
        .collect();
    assert_eq!(
        rows,
        vec![rows[0], rows[0] + 1, rows[0] + 2],
        "not together:\n{s}"
    );
    assert!(row("app/api/fix/1").contains("group api/fix ┬ /1 "), "{s}");
    assert!(row("app/api/fix/2").contains("├ /2 "), "{s}");
    assert!(!row("app/api/fix/2").contains("group api/fix"), "{s}");
    assert!(row("app/api/fix/3").contains("└ /3 "), "{s}");
    let solo_row = row("app/solo");
    assert!(
        !solo_row.contains("group") && !solo_row.contains('┬') && !solo_row.contains('└'),
        "{s}"
    );
}

#[test]
fn picker_help_and_actions_menus_show_orange_things() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    tell_server_home(&env);
    let _plugin = load_plugin(&env.tmux);
    let t = env.create(&["pick/me", "pick", "--harness", "fake-wait"]);
    env.wait_session(&id(&t), "live");
    let sid = task_session(&env, &t);
    env.tmux.ok(&["new-session", "-d", "-s", "work"]);
    let client = Client::attach(&env.root(), &env.tmux, "=work");

    client.press(&["C-b", "O", "?"]);
    let s = client.wait_screen("the help menu", |s| s.contains("Toggle the sidebar"));
    for item in [
        "New task",
        "Task picker",
        "Next task waiting for you",
        "focus the sidebar",
    ] {
        assert!(s.contains(item), "{item} missing from the help menu:\n{s}");
    }
    client.press(&["q"]);

    client.press(&["C-b", "O", "m"]);
    let s = client.wait_screen("the actions menu", |s| {
        s.contains("not an orange task session")
    });
    assert!(!s.contains("Respawn"), "{s}");
    assert!(s.contains("New task"), "{s}");
    // Issue 15: never two separator lines in a row (hidden items left them).
    let separators: Vec<bool> = s.lines().map(|l| l.trim_start().starts_with('├')).collect();
    assert!(
        !separators.windows(2).any(|w| w[0] && w[1]),
        "two separators in a row:\n{s}"
    );
    client.press(&["q"]);

    // The picker: only task sessions, with a live preview.
    client.press(&["C-b", "O", "l"]);
    let s = client.wait_screen("the task picker", |s| s.contains("app/pick/me"));
    eprintln!("picker:\n{s}");
    assert!(
        !s.contains("keepalive"),
        "a non-task session in the picker:\n{s}"
    );
    client.press(&["Enter"]);
    wait_for("the picker to switch sessions", 10, || {
        client.session(&env.tmux) == "app/pick/me"
    });

    client.press(&["C-b", "O", "m"]);
    let s = client.wait_screen("the task's actions", |s| s.contains("Respawn the agent"));
    for item in [
        "Merge into the default branch",
        "Cancel the task",
        "Pull request",
        "Show the task",
    ] {
        assert!(s.contains(item), "{item} missing:\n{s}");
    }
    assert!(s.contains(&format!("orange task {}", id(&t))), "{s}");
    // "Show the task" opens a popup with `orange task show`.
    client.press(&["i"]);
    client.wait_screen("the task popup", |s| s.contains("summary: pick"));
    client.press(&["q"]);
    assert_eq!(client.session(&env.tmux), "app/pick/me");
    let _ = sid;
}

#[test]
fn next_key_goes_to_the_tasks_waiting_for_you_in_turn() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "3"]);
    tell_server_home(&env);
    let _plugin = load_plugin(&env.tmux);
    let busy = env.create(&["busy", "keep working", "--harness", "fake-wait"]);
    let stuck = env.create(&["stuck", "get stuck", "--harness", "fake-stuck"]);
    let done = env.create(&["done", "finish", "--harness", "fake-complete"]);
    env.wait_status(&id(&stuck), "stuck");
    env.wait_status(&id(&done), "reviewing");
    env.wait_session(&id(&busy), "live");
    env.tmux.ok(&["new-session", "-d", "-s", "work"]);
    let client = Client::attach(&env.root(), &env.tmux, "=work");
    client.press(&["C-b", "O", "w"]);
    wait_for("the stuck task", 10, || {
        client.session(&env.tmux) == "app/stuck"
    });
    client.press(&["C-b", "O", "w"]);
    wait_for("the task ready for review", 10, || {
        client.session(&env.tmux) == "app/done"
    });
    client.press(&["C-b", "O", "w"]);
    wait_for("round again to the stuck task", 10, || {
        client.session(&env.tmux) == "app/stuck"
    });
}

/// Kills the demo's tmux server when the test ends, however it ends, then ends what still
/// runs of the demo's orange home (`.1`) before the test's temp directory goes.
struct DemoServer(String, PathBuf);

impl Drop for DemoServer {
    fn drop(&mut self) {
        let tmux = |args: &[&str]| {
            Command::new("tmux")
                .args(["-L", &self.0])
                .args(args)
                .output()
        };
        let path = tmux(&["display", "-p", "#{socket_path}"])
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        for e in EVENTS {
            let _ = tmux(&["set-hook", "-gu", e]);
        }
        let _ = tmux(&["kill-server"]);
        if !path.is_empty() {
            let _ = std::fs::remove_file(path);
        }
        common::end_processes_of(&self.1);
    }
}

#[test]
fn demo_starts_three_agents_with_the_plugin_and_a_sidebar() {
    let tmp = tempfile::Builder::new()
        .prefix("orange-demo-test-")
        .tempdir()
        .unwrap();
    let user_home = common::user_home(tmp.path());
    let socket = format!("orange-demo-t{}", std::process::id());
    let sandbox = tmp.path().join("demo");
    let _server = DemoServer(socket.clone(), sandbox.join("orange-home"));
    let start = Instant::now();
    let out = Command::new(bin())
        .args([
            "demo",
            "--no-attach",
            "--json",
            "--dir",
            sandbox.to_str().unwrap(),
        ])
        .env("ORANGE_TMUX_SOCKET", &socket)
        .env("ORANGE_DEMO_PACE", "0.2")
        .env("HOME", &user_home)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .env_remove("ORANGE_HOME")
        .output()
        .unwrap();
    let took = start.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "orange demo failed: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("orange demo took {took:?}");
    let demo: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(demo["socket"], socket.as_str());
    let tasks = demo["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 3, "{demo}");
    let server = |args: &[&str]| -> String {
        let o = Command::new("tmux")
            .args(["-L", &socket])
            .args(args)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).trim_end().to_string()
    };
    let sessions = server(&["list-sessions", "-F", "#{session_id} #{@orange_task}"]);
    for t in tasks {
        let line = format!(
            "{} {}",
            t["session_id"].as_str().unwrap(),
            t["id"].as_str().unwrap()
        );
        assert!(
            sessions.lines().any(|l| l == line),
            "{line} not in {sessions}"
        );
    }
    // The plugin is loaded on the demo server, the status token replaced.
    assert!(server(&["list-keys", "-T", "orange"]).lines().count() >= 6);
    assert!(server(&["show", "-gv", "status-right"]).contains("status --format tmux"));

    // The sidebar is open beside the first task's agent, which keeps the focus.
    assert_eq!(demo["sidebar"]["action"], "opened", "{demo}");
    let window = format!("{}:", tasks[0]["session_id"].as_str().unwrap());
    let panes = server(&[
        "list-panes",
        "-t",
        &window,
        "-F",
        "#{pane_id} #{pane_active} #{?@orange_sidebar,1,0}",
    ]);
    let rows: Vec<Vec<&str>> = panes.lines().map(|l| l.split(' ').collect()).collect();
    assert_eq!(rows.len(), 2, "{panes}");
    let sidebar = rows.iter().find(|r| r[2] == "1").expect("a sidebar pane");
    assert_eq!(sidebar[0], demo["sidebar"]["pane"].as_str().unwrap());
    assert!(
        rows.iter().any(|r| r[2] == "0" && r[1] == "1"),
        "focus not on the agent: {panes}"
    );
    let mut text = String::new();
    wait_for("the sidebar header", 10, || {
        text = server(&["capture-pane", "-p", "-t", sidebar[0]]);
        text.contains("shop/demo/dark-mode")
    });
    eprintln!("demo sidebar pane:\n{text}");

    // The demo agents work: one finishes, one asks a question, one keeps going.
    let home = demo["home"].as_str().unwrap();
    let task_list = || -> Value {
        let o = Command::new(bin())
            .args(["task", "list", "--all", "--json"])
            .env("ORANGE_HOME", home)
            .env("HOME", &user_home)
            .env("ORANGE_TMUX_SOCKET", &socket)
            .env_remove("TMUX")
            .output()
            .unwrap();
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let status_of = |branch: &str| -> String {
        task_list()
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["branch"] == branch)
            .map(|t| t["status"].as_str().unwrap().to_string())
            .unwrap_or_default()
    };
    wait_for("the dark-mode agent to finish", 30, || {
        status_of("demo/dark-mode") == "reviewing"
    });
    // Issue 15: its last words scroll in after it reported; the sidebar must not say
    // `Agent: working` beside `Status: reviewing` (seen after the report, by activity).
    std::thread::sleep(Duration::from_millis(1500));
    let agent_of = || -> Value {
        let o = Command::new(bin())
            .args([
                "sidebar",
                "--once",
                "--json",
                "--task",
                tasks[0]["id"].as_str().unwrap(),
            ])
            .env("ORANGE_HOME", home)
            .env("HOME", &user_home)
            .env("ORANGE_TMUX_SOCKET", &socket)
            .env_remove("TMUX")
            .output()
            .unwrap();
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let m = agent_of();
    assert_eq!(m["status"], "reviewing", "{m}");
    assert_ne!(m["agent"], "working", "{m}");
    wait_for("the lockout agent to ask", 30, || {
        status_of("demo/login-lockout") == "clarification"
    });
    assert_eq!(status_of("demo/search"), "working");
    let agent = server(&[
        "capture-pane",
        "-p",
        "-t",
        &format!("{}:", tasks[0]["session_id"].as_str().unwrap()),
    ]);
    eprintln!("demo agent pane:\n{agent}");
    assert!(agent.contains("committed: Dark palette"), "{agent}");
    let repo = demo["repo"].as_str().unwrap();
    let log = Command::new("git")
        .args(["-C", repo, "log", "--oneline", "demo/dark-mode"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&log.stdout).contains("Theme setting and toggle"));
    assert!(demo["attach"].as_str().unwrap().contains(&socket));
}

#[test]
fn demo_refuses_a_directory_that_is_not_empty() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("precious"), "x").unwrap();
    let out = Command::new(bin())
        .args([
            "demo",
            "--no-attach",
            "--json",
            "--dir",
            tmp.path().to_str().unwrap(),
        ])
        .env(
            "ORANGE_TMUX_SOCKET",
            format!("orange-demo-never-{}", std::process::id()),
        )
        .env_remove("TMUX")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error"]["code"], "invalid_argument", "{v}");
    assert!(tmp.path().join("precious").exists());
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

/// Issue 11: Merge, Cancel and Respawn from the `m` menu, run inside the task's own
/// session, used to kill it under the client (`[exited]`) and lose the outcome.
#[test]
fn menu_actions_that_end_your_session_keep_you_in_tmux_and_say_what_they_did() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "3"]);
    tell_server_home(&env);
    let _plugin = load_plugin(&env.tmux);
    let gone = env.create(&["menu/cancel", "cancel me", "--harness", "fake-wait"]);
    let dead = env.create(&["menu/respawn", "respawn me", "--harness", "fake-exit0"]);
    env.wait_session(&id(&gone), "live");
    env.wait_session(&id(&dead), "dead");
    env.tmux.ok(&["new-session", "-d", "-s", "work"]);
    let client = Client::attach(&env.root(), &env.tmux, "=work");

    // Cancel, from inside the task's session: back to the session you came from.
    client.switch_to(&env.tmux, &task_session(&env, &gone));
    client.press(&["C-b", "O", "m"]);
    client.wait_screen("the task's actions", |s| s.contains("Cancel the task"));
    client.press(&["x"]);
    client.wait_screen("the confirmation", |s| s.contains("(y/n)"));
    client.press(&["y"]);
    wait_for("the task to be cancelled", 10, || {
        env.task(&id(&gone))["status"] == "cancelled"
    });
    wait_for("the outcome on the status line", 10, || {
        client
            .messages(&env.tmux)
            .contains(&format!("cancelled task {}", id(&gone)))
    });
    assert_eq!(client.session(&env.tmux), "work");
    assert!(!client.screen().contains("[exited]"), "{}", client.screen());

    // Respawn, from inside the dead agent's session: on to the new agent's session.
    client.switch_to(&env.tmux, &task_session(&env, &dead));
    client.press(&["C-b", "O", "m"]);
    client.wait_screen("the task's actions", |s| s.contains("Respawn the agent"));
    client.press(&["r"]);
    wait_for("the outcome on the status line", 10, || {
        client
            .messages(&env.tmux)
            .contains(&format!("respawned task {}", id(&dead)))
    });
    let new_sid = env.task(&id(&dead))["tmux_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(new_sid, dead["tmux_session_id"].as_str().unwrap());
    let now = env
        .tmux
        .ok(&["display", "-p", "-c", &client.name, "#{session_id}"]);
    assert_eq!(now, new_sid);
    assert!(!client.screen().contains("[exited]"), "{}", client.screen());
}

/// The last session but the task's own: the client is moved to one orange makes.
#[test]
fn a_client_whose_only_session_ends_is_moved_to_an_orange_session() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let t = env.create(&["only/one", "only", "--harness", "fake-wait"]);
    env.tmux.ok(&["kill-session", "-t", "=keepalive"]);
    let client = Client::attach(&env.root(), &env.tmux, &task_session(&env, &t));
    env.ok(&["task", "cancel", "--yes", &id(&t)]);
    wait_for("the client on the orange session", 10, || {
        client.session(&env.tmux) == "orange"
    });
    assert!(!client.screen().contains("[exited]"), "{}", client.screen());
}

/// Issue 24: `prefix O t` (in a task session, and through the picker elsewhere) and the
/// sidebar's `t` ask for a text in tmux's command-prompt and `orange task send` it: what
/// was typed reaches the agent exactly — tmux's syntax, a shell's, a format's and tmux
/// 3.3a's command-prompt traps (`%%` filled again, a final `;`) included — as one message.
#[test]
fn the_send_key_asks_for_a_text_that_reaches_the_agent_literally() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    env.append_config(&format!(
        "[harness.fake-raw]\ncommand = \"sh {} raw {{prompt}}\"\n",
        common::fixtures().join("fake-agent.sh").display()
    ));
    tell_server_home(&env);
    let _plugin = load_plugin(&env.tmux);
    let t = env.create(&["send/key", "x", "--harness", "fake-raw"]);
    let task = id(&t);
    let sid = task_session(&env, &t);
    let window = format!("{sid}:");
    let agent = t["tmux_pane_id"].as_str().unwrap().to_string();
    wait_for("the agent to be ready", 20, || {
        env.tmux
            .ok(&["capture-pane", "-p", "-t", &agent])
            .contains("raw agent ready")
    });
    // It waits for input, as its own hook says (its screen alone, quiet for less than the
    // idle grace, would read as working: the message would be held).
    let ws = env.ws_path(t["workspace"].as_str().unwrap());
    let out = env
        .cmd_in(&ws, &["hook", "agent", "Stop"])
        .env("ORANGE_TASK_ID", &task)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // What the agent received: each submission (an Enter after a paste or typed text).
    let raw = env.home.join("agent-log").join(&task).join("raw");
    let received = |n: usize| {
        let mut got = vec![];
        wait_for(&format!("{n} message(s) at the agent"), 20, || {
            let bytes = std::fs::read(&raw).unwrap_or_default();
            got = String::from_utf8_lossy(&bytes)
                .replace("\x1b[200~", "")
                .replace("\x1b[201~", "")
                .split_terminator('\r')
                .map(str::to_string)
                .collect();
            bytes.last() == Some(&b'\r') && got.len() >= n
        });
        got
    };
    let client = Client::attach(&env.root(), &env.tmux, &sid);
    let pwned = env.root().join("PWNED");
    let p = pwned.display();
    let hostile = format!(
        "it's \"quoted\"; $(touch {p}) `touch {p}` #{{session_name}} #(touch {p}) ~ \\ %1 %% %%% %2 $HOME \" ; run-shell 'touch {p}' ; \" }} {{ end;"
    );

    // In the task's session.
    client.press(&["C-b", "O", "t"]);
    client.wait_screen("the prompt", |s| {
        s.contains(&format!("send to task {task}:"))
    });
    client.type_text(&hostile);
    client.press(&["Enter"]);
    assert_eq!(received(1), [hostile.as_str()]);
    wait_for("the outcome on the status line", 10, || {
        client
            .messages(&env.tmux)
            .contains(&format!("sent the message to task {task}"))
    });
    common::holds_for(
        "no file made by what was typed",
        Duration::from_millis(300),
        || !pwned.exists(),
    );
    // The buffers that carried it are gone.
    let buffers = env.tmux.ok(&["list-buffers", "-F", "#{buffer_name}"]);
    assert!(!buffers.contains("orange-send"), "{buffers}");

    // The sidebar's `t`.
    client.press(&["C-b", "O", "s"]);
    wait_for("the sidebar", 10, || {
        window_panes(&env.tmux, &window).iter().any(|p| p.2)
    });
    let side = window_panes(&env.tmux, &window)
        .into_iter()
        .find(|p| p.2)
        .unwrap();
    wait_for("the sidebar to draw", 10, || {
        env.tmux
            .ok(&["capture-pane", "-p", "-t", &side.0])
            .contains("app/send/key")
    });
    env.tmux.ok(&["select-pane", "-t", &side.0]);
    client.press(&["t"]);
    client.wait_screen("the prompt from the sidebar", |s| {
        s.contains(&format!("send to task {task}:"))
    });
    client.type_text("from the sidebar");
    client.press(&["Enter"]);
    assert_eq!(received(2)[1], "from the sidebar");

    // Outside a task session: the picker first, then the prompt for the task chosen.
    env.tmux.ok(&["new-session", "-d", "-s", "work"]);
    client.switch_to(&env.tmux, "=work");
    client.press(&["C-b", "O", "t"]);
    client.wait_screen("the picker", |s| s.contains("app/send/key"));
    client.press(&["Enter"]);
    client.wait_screen("the prompt from the picker", |s| {
        s.contains(&format!("send to task {task}:"))
    });
    client.type_text("picked; 100%% sure");
    client.press(&["Enter"]);
    assert_eq!(received(3)[2], "picked; 100%% sure");
    assert_eq!(env.history_events(&task, "message.sent").len(), 3);

    // The task menu has it too.
    client.switch_to(&env.tmux, &sid);
    client.press(&["C-b", "O", "m"]);
    client.wait_screen("the task's actions", |s| {
        s.contains("Send text to the agent")
    });
    client.press(&["t"]);
    client.wait_screen("the prompt from the menu", |s| {
        s.contains(&format!("send to task {task}:"))
    });
    client.press(&["Escape"]);
}
