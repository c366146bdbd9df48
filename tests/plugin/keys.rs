//! The plugin's keys pressed through a real client: Ctrl+\ and Ctrl+] in plain panes
//! and task sessions, the sidebar toggle, `next`, `send`, and a key whose binary is gone.

use crate::common;

use std::time::Duration;

use common::{id, poll, wait_for, TaskEnv};

use super::{load_plugin, load_plugin_with, task_session, tell_server_home, window_panes, Client};

#[test]
fn ctrl_keys_reach_plain_panes_and_act_in_task_sessions() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    tell_server_home(&env);
    let _plugin = load_plugin(&env.tmux);
    let t = env.create(&["keys", "keys", "--harness", "fake-wait"]);
    env.wait_session(&id(&t), "live");
    let sid = task_session(&env, &t);
    env.tmux.sized_session(
        "plain",
        (100, 30),
        &["stty -isig -icanon -echo; exec cat -v"],
    );
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
    env.tmux.sized_session(
        "zero",
        (100, 30),
        &["stty -isig -icanon -echo; exec cat -v"],
    );
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
    env.tmux.sized_session("plain", (160, 40), &[]);
    let client = Client::attach(&env.root(), &env.tmux, "plain");
    client.press(&["C-b", "O", "s"]);
    wait_for("the message", 10, || {
        client.messages(&env.tmux).contains("not a task session")
    });
    let messages = client.messages(&env.tmux);
    assert!(messages.contains("prefix O l"), "{messages}");
    assert_eq!(window_panes(&env.tmux, "plain:").len(), 1);
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
    common::write_script(&gone, "#!/bin/sh\n");
    let _plugin = load_plugin_with(&env.tmux, &gone);
    std::fs::remove_file(&gone).unwrap();
    env.tmux.sized_session("plain", (160, 40), &[]);
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
