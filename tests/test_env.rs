//! The fixtures of tests/common themselves: what every test may take for granted about
//! the environment its programs run in.

use crate::common;

use common::{id, TaskEnv};

/// The user's HOME is no test's: the orange commands, the tmux server and the agents it
/// runs get the test's own `user-home`, so nothing reads the user's config (Claude's
/// `~/.claude.json`, a `~/.tmux.conf`…) or writes into their home.
#[test]
fn commands_the_tmux_server_and_agents_get_a_private_home() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    assert!(env.user_home.starts_with(env.root()), "{:?}", env.user_home);
    assert_ne!(
        Some(env.user_home.as_os_str()),
        std::env::var_os("HOME").as_deref()
    );
    let server_home = env.tmux.ok(&["show-environment", "-g", "HOME"]);
    assert_eq!(server_home, format!("HOME={}", env.user_home.display()));

    // An agent reports the HOME it was started with.
    let agent = env.root().join("home-agent.sh");
    std::fs::write(
        &agent,
        "printf '%s\\n' \"$HOME\" > \"$ORANGE_HOME/agent-home\"\nexec sleep 600\n",
    )
    .unwrap();
    let mut cfg = std::fs::read_to_string(env.home.join("config.toml")).unwrap();
    cfg.push_str(&format!(
        "[harness.home]\ncommand = \"sh {}\"\n",
        agent.display()
    ));
    std::fs::write(env.home.join("config.toml"), cfg).unwrap();
    let t = env.create(&["home/x", "say where home is", "--harness", "home"]);
    let file = env.home.join("agent-home");
    let mut said = String::new();
    common::wait_for("the agent to report its HOME", 20, || {
        said = std::fs::read_to_string(&file).unwrap_or_default();
        said.ends_with('\n')
    });
    assert_eq!(said.trim_end(), env.user_home.to_str().unwrap());
    env.ok(&["task", "cancel", &id(&t), "--yes"]);
}
