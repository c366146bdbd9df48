//! The sidebar's keys and its footer (issue 24; seed 002's focus modes), with the plugin
//! loaded into a tmux server with a hostile user config, through a real client (util-linux
//! `script` gives it a terminal; what is written to it is typed), read back with
//! `capture-pane -p`: `Tab` and `Enter` go to the agent's pane, `Esc` back to the pane the
//! person came from, `q` closes the sidebar; the footer names the keys of the pane in
//! focus, as the person rebound them, however the focus moved.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use std::process::Command;

use crate::common::client::Client;
use crate::common::{self, id, wait_for, TaskEnv};
use crate::plugin::{load_plugin, tell_server_home, window_panes};

const SIDEBAR_KEYS: &str = "Tab terminal  Esc back  q close";
/// The agent pane's keys, the zoom key rebound to M-z.
const AGENT_KEYS: &str = "Ctrl+\\ sidebar  M-z full screen";

#[test]
fn the_sidebars_keys_move_the_focus_and_its_footer_names_the_keys_in_focus() {
    if !common::require(
        "script",
        Command::new("script").arg("--version").output().is_ok(),
        "util-linux script gives the attached client a terminal",
    ) {
        return;
    }
    let env = TaskEnv::new();
    env.add_project(&[]);
    tell_server_home(&env);
    // A person's own tmux: dead panes kept, the zoom key rebound, a wide sidebar.
    env.tmux.ok(&["set", "-g", "remain-on-exit", "on"]);
    env.tmux.ok(&["set", "-g", "@orange-zoom-key", "M-z"]);
    env.tmux.ok(&["set", "-g", "@orange-sidebar-width", "50%"]);
    let _plugin = load_plugin(&env.tmux);
    let t = env.create(&["keys/focus", "stay a while", "--harness", "fake-wait"]);
    let tid = id(&t);
    env.wait_session(&tid, "live");
    let window = format!("{}:", t["tmux_session_id"].as_str().unwrap());
    let agent = env.tmux.ok(&["display", "-p", "-t", &window, "#{pane_id}"]);
    let mut client = Client::attach(&env, "app/keys/focus", &env.root().join("client.log"));
    let active = || env.tmux.ok(&["display", "-p", "-t", &window, "#{pane_id}"]);
    let screen = |pane: &str| env.tmux.ok(&["capture-pane", "-p", "-t", pane]);
    let footer = |pane: &str| screen(pane).lines().last().unwrap_or("").to_string();
    let wait_focus = |what: &str, pane: &str, sidebar: &str, keys: &str| {
        let mut seen = (String::new(), String::new());
        let ok = common::poll(std::time::Duration::from_secs(10), || {
            seen = (active(), footer(sidebar));
            (seen.0 == pane && seen.1 == keys).then_some(())
        });
        assert!(
            ok.is_some(),
            "{what}: want {pane} active and the footer {keys:?}; active {}, the sidebar shows:\n{}",
            seen.0,
            screen(sidebar)
        );
    };

    // Ctrl+\ opens the sidebar and focuses it: its own keys in its footer.
    client.type_bytes(b"\x1c");
    wait_for("a sidebar, marked", 10, || {
        window_panes(&env.tmux, &window).iter().any(|p| p.2)
    });
    let sb = window_panes(&env.tmux, &window)
        .into_iter()
        .find(|p| p.2)
        .unwrap()
        .0;
    wait_focus("Ctrl+\\ focuses the sidebar", &sb, &sb, SIDEBAR_KEYS);
    // Tab: to the agent; the footer names the agent pane's keys, as rebound.
    client.type_bytes(b"\t");
    wait_focus("Tab goes to the agent", &agent, &sb, AGENT_KEYS);
    client.type_bytes(b"\x1c");
    wait_focus("Ctrl+\\ again", &sb, &sb, SIDEBAR_KEYS);
    client.type_bytes(b"\r");
    wait_focus("Enter goes to the agent", &agent, &sb, AGENT_KEYS);

    // The person works in a pane of their own beside the agent; from there to the sidebar,
    // and Esc goes back there.
    let shell = env.tmux.ok(&[
        "split-window",
        "-v",
        "-d",
        "-t",
        &agent,
        "-P",
        "-F",
        "#{pane_id}",
    ]);
    env.tmux.ok(&["select-pane", "-t", &shell]);
    client.type_bytes(b"\x1c");
    wait_focus("Ctrl+\\ from the person's pane", &sb, &sb, SIDEBAR_KEYS);
    client.type_bytes(b"\x1b");
    wait_focus(
        "Esc goes back where the person came from",
        &shell,
        &sb,
        AGENT_KEYS,
    );

    // However the focus moves (prefix and an arrow, the mouse: tmux's select-pane), the
    // footer follows: the plugin's hook tells the sidebar, focus-events off as by default.
    assert_eq!(env.tmux.ok(&["show", "-sv", "focus-events"]), "off");
    env.tmux.ok(&["select-pane", "-t", &sb]);
    wait_focus("select-pane to the sidebar", &sb, &sb, SIDEBAR_KEYS);
    env.tmux.ok(&["select-pane", "-t", &agent]);
    wait_focus("select-pane away", &agent, &sb, AGENT_KEYS);

    // The agent killed: the sidebar names the next step with the plugin's key (it is in
    // the task's session), and so does `task show` run in a pane there.
    let pid = env.tmux.ok(&["display", "-p", "-t", &agent, "#{pane_pid}"]);
    Command::new("kill").args(["-9", &pid]).status().unwrap();
    let command = format!("orange task respawn {tid}");
    wait_for("the next step in the sidebar", 10, || {
        let s = screen(&sb);
        s.contains("Next: respawn: prefix O m r ·") && s.contains(&command)
    });
    let out = env.root().join("show.txt");
    env.tmux.ok(&[
        "send-keys",
        "-t",
        &shell,
        &format!(
            "'{}' task show {tid} > '{}'",
            common::bin().display(),
            out.display()
        ),
        "Enter",
    ]);
    let want = format!("next: respawn: prefix O m r · {command}\n");
    wait_for("task show in the task's session", 10, || {
        std::fs::read_to_string(&out).is_ok_and(|s| s.contains(&want))
    });

    // q closes the sidebar, remain-on-exit or not; the focus goes back where it came from.
    env.tmux.ok(&["select-pane", "-t", &shell]);
    client.type_bytes(b"\x1c");
    wait_focus("Ctrl+\\ once more", &sb, &sb, SIDEBAR_KEYS);
    client.type_bytes(b"q");
    wait_for("the sidebar closed", 10, || {
        window_panes(&env.tmux, &window).iter().all(|p| !p.2)
    });
    assert_eq!(window_panes(&env.tmux, &window).len(), 2);
    assert_eq!(active(), shell);
}
