//! The next step of a task that needs you (issue 24), on every surface a person or a
//! script reads: the sidebar, `task show`, `task explain` and `--json`, with real tmux and
//! a real (fake) agent. The notifications' words are checked in tests/notify.rs, the
//! sidebar's layout in its snapshots, each state's step in `attention::next`.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common::TaskEnv;

/// Issue 24, seen: an agent killed by signal 9; the sidebar said "Needs you: agent killed
/// by signal 9…" and `task explain` gave the signal and the last lines, but nothing named
/// the next step. Now the sidebar, `task show`, `task explain` and `--json` name it, in
/// the same words.
#[test]
fn a_killed_agent_says_what_to_do_next_everywhere() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    // As seen: the monitor leaves the death to its person.
    env.append_config("[policy]\non_exit = \"escalate\"\n");
    let id = env.create_id("killed", "fake-wait");
    env.wait_session(&id, "live");
    let pid = env
        .tmux
        .ok(&["display", "-p", "-t", "=app/killed:", "#{pane_pid}"]);
    std::process::Command::new("kill")
        .args(["-9", &pid])
        .status()
        .unwrap();
    env.wait_session(&id, "dead");
    env.ok(&["monitor", "--once"]);
    let text = |args: &[&str]| {
        let out = env.cmd_in(&env.repo, args).output().unwrap();
        assert!(out.status.success(), "orange {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let step = format!("respawn: orange task respawn {id}");
    let side = text(&["sidebar", "--task", &id, "--once", "--width", "80"]);
    assert!(
        side.contains("Needs you:") && side.contains("signal 9"),
        "{side}"
    );
    assert!(side.contains(&format!("Next: {step}\n")), "{side}");
    let show = text(&["task", "show", &id]);
    assert!(show.contains(&format!("\nnext: {step}\n")), "{show}");
    let explain = text(&["task", "explain", &id]);
    assert!(explain.contains("signal 9"), "{explain}");
    assert!(explain.contains(&format!("\nnext: {step}\n")), "{explain}");
    // Scripts: the same step, by field.
    let v = env.task(&id);
    assert_eq!(v["next_step"]["action"], "respawn", "{v}");
    assert_eq!(
        v["next_step"]["command"],
        format!("orange task respawn {id}")
    );
    assert_eq!(v["next_step"]["text"], step.as_str());
    // Run outside the task's session: no key (it would act on another task).
    assert!(v["next_step"]["key"].is_null(), "{v}");
    assert_eq!(
        env.ok(&["task", "explain", &id])["next_step"],
        v["next_step"]
    );
    let listed = env.ok(&["task", "list"]);
    assert_eq!(listed[0]["next_step"], v["next_step"], "{listed}");
    // Respawned, it needs nothing: no step anywhere.
    env.ok(&["task", "respawn", &id]);
    env.wait_session(&id, "live");
    assert!(env.task(&id)["next_step"].is_null());
    let side = text(&["sidebar", "--task", &id, "--once", "--width", "80"]);
    assert!(!side.contains("Next:"), "{side}");
}
