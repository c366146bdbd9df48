//! The plugin's popups, picker and menus: the new-task prompt and popup, the task picker,
//! the help and actions menus, and where a client goes when its session ends.

use crate::common;

use std::time::Duration;

use common::{id, wait_for, TaskEnv};
use serde_json::Value;

use super::{load_plugin, task_session, tell_server_home, Client, Loaded};

/// The plugin loaded with `fake-wait` as the default harness, and a client attached to a
/// session `work` in the repository: the guard that unloads the plugin, and the client.
fn at_work(env: &TaskEnv) -> (Loaded<'_>, Client) {
    let cfg = env.home.join("config.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, format!("default_harness = \"fake-wait\"\n{text}")).unwrap();
    tell_server_home(env);
    let plugin = load_plugin(&env.tmux);
    env.tmux.ok(&[
        "new-session",
        "-d",
        "-s",
        "work",
        "-c",
        env.repo.to_str().unwrap(),
    ]);
    (plugin, Client::attach(&env.root(), &env.tmux, "=work"))
}

/// Through the new-task popup (prefix O n): `branch`, then `task` (empty: none), each
/// typed at its question and entered.
fn new_task(client: &Client, branch: &str, task: &str) {
    client.press(&["C-b", "O", "n"]);
    client.wait_screen("the branch question", |s| {
        s.contains("branch (empty: automatic):")
    });
    client.type_text(branch);
    client.press(&["Enter"]);
    client.wait_screen("the task question", |s| {
        s.contains("task (empty: type it to the agent):")
    });
    if !task.is_empty() {
        client.type_text(task);
    }
    client.press(&["Enter"]);
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
    let (_plugin, client) = at_work(&env);
    new_task(&client, "feat/slow", "wait for the setup");
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
    let (_plugin, client) = at_work(&env);
    let pwned = env.root().join("PWNED");
    let p = pwned.display();
    // Everything tmux, a format or a shell could take for syntax, and tmux 3.3a's
    // command-prompt traps (%% re-substituted, a final ; dropped).
    let summary = format!(
        "it's \"quoted\"; $(touch {p}) `touch {p}` #{{session_name}} #(touch {p}) ~ \\ %1 %% %%% $HOME \" ; run-shell 'touch {p}' ; \" end;"
    );
    new_task(&client, "feat/quote", &summary);
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
    new_task(&client, "feat/typed", "");
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
