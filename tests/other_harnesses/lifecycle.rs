//! Each harness's life in a task: started, seen live, its death recorded, respawned; and
//! a respawn that continues the first conversation.

use crate::common;

use std::time::Duration;

use super::{excerpt, Run, FIRST_PROMPT_ONLY};

fn lifecycle(harness: &'static str) {
    let Some(run) = Run::new(harness) else { return };
    let (id, _) = run.create();
    run.assert_live(&id);
    let exited = run.end(&id);
    run.assert_dead(&id, exited, 1);

    let _ = run.respawn(&id);
    let t = run.assert_live(&id);
    assert_eq!(t["status"], "working", "{t}");
    let exited = run.end(&id);
    run.assert_dead(&id, exited, 2);
    // Everything the agents wrote went to the private home, none to the workspace's
    // git status beyond what orange itself excludes.
    assert!(run.home.exists());
    let ws = run
        .env
        .ws_path(run.env.task(&id)["workspace"].as_str().unwrap());
    let status = common::git(&ws, &["status", "--porcelain"]);
    assert!(
        status.is_empty(),
        "{harness} left files in the workspace:\n{status}"
    );
    run.finish();
}

fn continues_conversation(harness: &'static str) {
    let Some(run) = Run::new(harness) else { return };
    let (id, _) = run.create();
    run.end(&id);
    run.env.wait_session(&id, "dead");
    // The resume prompt reaches the model (see the lifecycle tests)…
    let resumed = run.respawn(&id);
    // …with the first conversation as history, in the same request (opencode also sends
    // the new message alone to its title generator: look at every request).
    let needle = format!("Resuming: {}", run.marker);
    let with_history = common::poll(Duration::from_secs(8), || {
        run.stub
            .requests()
            .into_iter()
            .find(|r| r.body.contains(&needle) && r.body.contains(FIRST_PROMPT_ONLY))
    });
    assert!(
        with_history.is_some(),
        "{harness}: the respawned agent started a blank conversation: no request to its model carried the first prompt ({FIRST_PROMPT_ONLY:?}) as history; respawn should resume the workspace's last session. It sent:\n{}",
        excerpt(&resumed.body, &needle)
    );
    run.end(&id);
    run.env.wait_session(&id, "dead");
    run.finish();
}

#[test]
fn pi_lifecycle() {
    lifecycle("pi");
}

#[test]
fn codex_lifecycle() {
    lifecycle("codex");
}

#[test]
fn opencode_lifecycle() {
    lifecycle("opencode");
}

#[test]
fn pi_respawn_continues_the_conversation() {
    continues_conversation("pi");
}

#[test]
fn codex_respawn_continues_the_conversation() {
    continues_conversation("codex");
}

#[test]
fn opencode_respawn_continues_the_conversation() {
    continues_conversation("opencode");
}
