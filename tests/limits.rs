//! A fleet left alone at the account's usage limit (issue 28, part 1): an agent that
//! stops on its limit is `limited` until the reset its words name, its harness starts no
//! new agent meanwhile (queued tasks say `held: limit until …`), and at the reset (plus a
//! random stagger of up to 60 s) the monitor resumes it through `task send`'s path,
//! checks that a turn started, types once more, then escalates.
//!
//! The real Claude Code 2.1.330 against the stand-in API sending the real limit response
//! (`real_claude_at_its_limit_is_limited_then_resumed_at_the_reset`); a declared harness
//! with a `limit` screen pattern (tests/fixtures/limit-agent.sh) for the rest. No test
//! waits for a reset: `monitor --once` runs on a clock ahead (`ORANGE_CLOCK_SKEW`).

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use std::process::Stdio;
use std::time::Duration;

use crate::common::{self, fixtures, id, standin::Reply, standin::StandIn, Env, TaskEnv};
use serde_json::{json, Value};

/// A reset `ahead` of now as the agent prints it: `04:16 (UTC)`. To the minute, as agents
/// print it: up to a minute sooner than `ahead` (one minute ahead could be a second
/// ahead, and the reset passed before the test looked: seen under load).
fn reset_in(ahead: chrono::Duration) -> String {
    (chrono::Utc::now() + ahead)
        .format("%H:%M (UTC)")
        .to_string()
}

/// config.toml: the limit agent as harness `limitbot`, printing `reset`, and `policy`.
fn config(reset: &str, policy: &str) -> String {
    format!(
        r#"[harness.limitbot]
command = "sh {agent} '{reset}'"
[harness.limitbot.screen]
working = ['^limitbot working']
limit = ['usage limit reached(?:, resets at (?P<reset>.+))?$']
[policy]
{policy}
"#,
        agent = fixtures().join("limit-agent.sh").display()
    )
}

fn start(reset: &str, policy: &str) -> (TaskEnv, String) {
    let env = TaskEnv::new();
    env.add_project(&[]);
    std::fs::write(env.home.join("config.toml"), config(reset, policy)).unwrap();
    let t = env.ok(&[
        "task",
        "create",
        "lim/a",
        "do the thing",
        "--harness",
        "limitbot",
    ]);
    let pane = t["tmux_pane_id"].as_str().unwrap().to_string();
    common::wait_for("the limit on the agent's screen", 20, || {
        env.tmux
            .ok(&["capture-pane", "-p", "-t", &pane])
            .contains("usage limit reached")
    });
    (env, id(&t))
}

/// One `monitor --once` on a clock `later` ahead; its report.
fn pass_at(env: &TaskEnv, later: &str) -> Value {
    env.monitor_at(later)
}

fn agent(env: &TaskEnv, id: &str) -> Value {
    env.task(id)["agent"].clone()
}

fn at(t: &Value) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(t.as_str().unwrap())
        .unwrap()
        .with_timezone(&chrono::Utc)
}

fn status_line(env: &TaskEnv, id: &str) -> String {
    let t = env.task(id);
    let out = env.tmux.ok(&[
        "show-options",
        "-qv",
        "-t",
        t["tmux_session_id"].as_str().unwrap(),
        "@orange_status",
    ]);
    common::strip_styles(&out)
}

#[test]
fn a_limited_agent_is_held_then_resumed_at_the_reset_and_its_queue_starts() {
    let reset = reset_in(chrono::Duration::minutes(5));
    let (env, a) = start(&reset, "");
    pass_at(&env, "0s");
    let info = agent(&env, &a);
    assert_eq!(info["state"], "limited", "{info}");
    let hold = &info["limit"];
    assert_eq!(hold["read"], true, "{info}");
    let until = at(&hold["until"]);
    let resume_at = at(&hold["resume_at"]);
    assert!(
        resume_at >= until && resume_at < until + chrono::Duration::seconds(60),
        "the stagger is under 60 s: {info}"
    );
    let shown = status_line(&env, &a);
    assert!(shown.contains("⏸ limited until"), "{shown}");
    assert!(
        info["detail"].as_str().unwrap().contains("limited until"),
        "{info}"
    );
    assert_eq!(env.history_events(&a, "agent.limited").len(), 1);
    // Its harness starts no new agent: the next task waits, saying why.
    let b = env.ok(&["task", "create", "lim/b", "more", "--harness", "limitbot"]);
    assert_eq!(b["outcome"], "queued", "{b}");
    assert!(b["note"].as_str().unwrap().contains("usage limit"), "{b}");
    let b = id(&b);
    let list = env.ok(&["task", "list"]);
    let row = list
        .as_array()
        .and_then(|l| l.iter().find(|t| t["id"] == b.as_str()).cloned())
        .unwrap_or_else(|| list.clone());
    assert!(row.to_string().contains("held: limit until"), "{row}");
    // Before the reset, nothing is typed; another pass does not tell it twice.
    pass_at(&env, "0s");
    assert!(env.input_lines(&a).is_empty());
    assert_eq!(env.history_events(&a, "agent.limited").len(), 1);
    // Past the reset and any stagger: "continue" typed in, and the queue starts.
    let r = pass_at(&env, "7m");
    assert!(r.to_string().contains("\"resume\""), "{r}");
    common::wait_for("the resume typed in", 20, || {
        env.input_lines(&a) == vec!["continue".to_string()]
    });
    assert_eq!(
        env.task(&b)["status"],
        "working",
        "the held task started: {r}"
    );
    // The resume started a turn: verified, and the harness is free again.
    common::wait_for("the resumed turn seen", 20, || {
        pass_at(&env, "7m");
        agent(&env, &a)["state"] == "working"
    });
    let v = env.history_events(&a, "agent.limit_resumed");
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0]["verified"], true, "{v:?}");
    assert!(agent(&env, &a).get("limit").is_none_or(Value::is_null));
}

#[test]
fn a_resume_that_starts_no_turn_is_typed_once_more_then_escalated() {
    let reset = reset_in(chrono::Duration::minutes(5));
    let (env, a) = start(&reset, "");
    std::fs::write(env.home.join("limit-agent-deaf"), "").unwrap();
    pass_at(&env, "0s");
    assert_eq!(agent(&env, &a)["state"], "limited");
    pass_at(&env, "7m");
    common::wait_for("the first resume", 20, || env.input_lines(&a).len() == 1);
    // Within 60 s of it: no second resume yet.
    pass_at(&env, "7m30s");
    assert_eq!(env.history_events(&a, "agent.resumed").len(), 1);
    pass_at(&env, "8m10s");
    common::wait_for("the second resume", 20, || env.input_lines(&a).len() == 2);
    assert!(env.history_events(&a, "agent.escalated").is_empty());
    pass_at(&env, "9m20s");
    let esc = env.history_events(&a, "agent.escalated");
    assert_eq!(esc.len(), 1, "{esc:?}");
    assert!(
        esc[0]["reason"]
            .as_str()
            .unwrap()
            .contains("no turn started"),
        "{esc:?}"
    );
    assert_eq!(
        env.input_lines(&a).len(),
        2,
        "nothing typed after the escalation"
    );
}

#[test]
fn a_limit_without_a_time_waits_limit_wait_and_says_so() {
    let (env, a) = start("none", "limit_wait = \"2h\"");
    let before = chrono::Utc::now();
    pass_at(&env, "0s");
    let info = agent(&env, &a);
    assert_eq!(info["state"], "limited", "{info}");
    assert_eq!(info["limit"]["read"], false, "{info}");
    let until = at(&info["limit"]["until"]);
    assert!(
        until >= before + chrono::Duration::minutes(119)
            && until <= chrono::Utc::now() + chrono::Duration::minutes(121),
        "{info}"
    );
    assert!(
        info["detail"].as_str().unwrap().contains("limit_wait"),
        "{info}"
    );
    // An hour on, it still waits; past two hours and the stagger, it is resumed.
    pass_at(&env, "1h");
    assert!(env.input_lines(&a).is_empty());
    pass_at(&env, "2h2m");
    common::wait_for("the resume", 20, || !env.input_lines(&a).is_empty());
}

#[test]
fn a_reset_in_the_past_resumes_at_once() {
    let past = (chrono::Utc::now() - chrono::Duration::days(1))
        .format("%b %-d, %-I:%M%P (UTC)")
        .to_string();
    let (env, a) = start(&past, "");
    pass_at(&env, "0s");
    let info = agent(&env, &a);
    assert_eq!(info["state"], "limited", "{info}");
    let resume_at = at(&info["limit"]["resume_at"]);
    assert!(
        resume_at < chrono::Utc::now() + chrono::Duration::seconds(61),
        "at once, but for the stagger: {info}"
    );
    pass_at(&env, "61s");
    common::wait_for("the resume", 20, || {
        env.input_lines(&a) == vec!["continue".to_string()]
    });
}

#[test]
fn on_limit_escalate_and_wait_type_nothing() {
    let reset = reset_in(chrono::Duration::minutes(5));
    let (env, a) = start(&reset, "on_limit = \"escalate\"");
    pass_at(&env, "0s");
    pass_at(&env, "7m");
    assert_eq!(env.history_events(&a, "agent.escalated").len(), 1);
    assert!(env.input_lines(&a).is_empty());

    let (env, a) = start(&reset, "on_limit = \"wait\"");
    pass_at(&env, "0s");
    pass_at(&env, "7m");
    assert!(env.history_events(&a, "agent.escalated").is_empty());
    assert!(env.input_lines(&a).is_empty());
    assert_eq!(agent(&env, &a)["state"], "limited");
}

/// An unsigned JWT whose audience is `claude-gateway`: Claude Code 2.1.330 then takes
/// `ANTHROPIC_BASE_URL` for a gateway (as for a claude.ai subscriber) and composes its own
/// limit line from the unified rate-limit headers.
fn gateway_token() -> String {
    use base64::Engine;
    let b64url = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    format!(
        "{}.{}.c2ln",
        b64url(br#"{"alg":"none","typ":"JWT"}"#),
        b64url(br#"{"aud":"claude-gateway","sub":"orange-test","exp":4102444800}"#)
    )
}

#[test]
fn real_claude_at_its_limit_is_limited_then_resumed_at_the_reset() {
    let found = common::find_program(&std::env::var("PATH").unwrap_or_default(), "claude");
    if !common::require(
        "claude (npm install -g @anthropic-ai/claude-code)",
        found.is_some(),
        "this test drives the real Claude Code CLI",
    ) {
        return;
    }
    let reset = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 120;
    let api = StandIn::start(vec![
        Reply::Limit { reset },
        Reply::text("Resumed after the reset."),
    ]);
    let env = Env::with_repo("app");
    let claude_home = env.root().join("claude-home");
    std::fs::create_dir_all(&claude_home).unwrap();
    let mut extra: Vec<(&str, String)> = vec![
        ("HOME", claude_home.display().to_string()),
        ("ANTHROPIC_BASE_URL", api.base_url()),
        ("ANTHROPIC_AUTH_TOKEN", gateway_token()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
        ("DISABLE_AUTOUPDATER", "1".into()),
        ("TZ", "UTC".into()),
    ];
    if orange::adapters::shell::is_root() {
        extra.push(("IS_SANDBOX", "1".into()));
    }
    let env = TaskEnv::real(env, &extra);
    env.add_project(&[]);
    std::fs::write(
        claude_home.join(".claude.json"),
        serde_json::to_vec_pretty(&json!({"hasCompletedOnboarding": true})).unwrap(),
    )
    .unwrap();
    let r = env.ok(&["doctor", "--harness", "claude", "--trust"]);
    assert!(r["trust_recorded"].is_string(), "{r}");
    let mut monitor = env
        .cmd_in(&env.repo, &["monitor", "--interval", "500ms"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = env.ok(&[
        "task",
        "create",
        "real/limit",
        "Say hello",
        "--harness",
        "claude",
    ]);
    let a = id(&t);
    let pane = t["tmux_pane_id"].as_str().unwrap().to_string();
    // What claude shows, and what orange makes of it.
    let screen = common::poll(Duration::from_secs(60), || {
        let s = env.tmux.ok(&["capture-pane", "-p", "-J", "-t", &pane]);
        s.contains("You've hit your").then_some(s)
    })
    .unwrap_or_else(|| {
        panic!(
            "claude never showed its limit:\n{}",
            env.tmux.ok(&["capture-pane", "-p", "-J", "-t", &pane])
        )
    });
    assert!(screen.contains("resets"), "{screen}");
    let info = common::poll(Duration::from_secs(60), || {
        let i = agent(&env, &a);
        (i["state"] == "limited" && i["limit"].is_object()).then_some(i)
    })
    .unwrap_or_else(|| panic!("never limited: {}", env.task(&a)));
    assert_eq!(
        info["limit"]["read"], true,
        "the reset time was read: {info}"
    );
    let until = at(&info["limit"]["until"]).timestamp() as u64;
    // Claude shows minutes: the reset it named is the stand-in's, to the minute.
    assert!(
        until / 60 == reset / 60 || until / 60 == reset / 60 + 1,
        "{info} vs {reset}"
    );
    assert!(status_line(&env, &a).contains("⏸ limited until"));
    // The reset passes (the clock ahead): "continue" goes in, a turn starts and ends.
    pass_at(&env, "4m");
    assert!(
        api.wait_requests(2, Duration::from_secs(60)),
        "no turn after the resume: {}",
        env.task(&a)
    );
    assert!(api.turns()[1].last_user_text().contains("continue"));
    let verified = common::poll(Duration::from_secs(60), || {
        (!env.history_events(&a, "agent.limit_resumed").is_empty()).then_some(())
    });
    assert!(
        verified.is_some(),
        "the resume was never verified: {}\nscreen:\n{}",
        env.task(&a),
        env.tmux.ok(&["capture-pane", "-p", "-J", "-t", &pane])
    );
    let _ = monitor.kill();
    let _ = monitor.wait();
}

/// A queue that waits only on another project's limit: project `web` has no limited task
/// of its own, but its task of the limited harness is held; past the reset the monitor
/// starts it (and resumes the limited task of `app` as ever).
#[test]
fn another_projects_queue_held_by_a_limit_starts_at_the_reset() {
    let reset = reset_in(chrono::Duration::minutes(5));
    let (env, a) = start(&reset, "");
    let (web, _) = common::make_repo(&env.root(), "web");
    env.ok(&["project", "add", web.to_str().unwrap()]);
    pass_at(&env, "0s");
    assert_eq!(agent(&env, &a)["state"], "limited");
    let (ok, b) = env.json_in(
        &web,
        &["task", "create", "w/1", "web work", "--harness", "limitbot"],
    );
    assert!(ok, "{b}");
    assert_eq!(b["outcome"], "queued", "{b}");
    assert!(b["note"].as_str().unwrap().contains("usage limit"), "{b}");
    let b = id(&b);
    assert_eq!(env.task(&b)["project"], "web");
    // Before the reset it stays queued.
    pass_at(&env, "0s");
    assert_eq!(env.task(&b)["status"], "pending");
    // Past the reset: web's queue starts though no task of web was limited.
    let r = pass_at(&env, "7m");
    assert_eq!(env.task(&b)["status"], "working", "{r}");
    let spawned = env.history_events(&b, "auto.spawned");
    assert_eq!(spawned.len(), 1, "{spawned:?}");
    let started = r["actions"].as_array().unwrap().iter().any(|a| {
        a["task"] == b.as_str()
            && a["action"] == "spawned"
            && a["reason"] == "the usage limit reset"
    });
    assert!(started, "{r}");
    // And app's limited task is resumed as ever.
    common::wait_for("the resume typed in", 20, || {
        env.input_lines(&a) == vec!["continue".to_string()]
    });
}
