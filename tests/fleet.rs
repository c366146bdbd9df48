//! A fleet left alone (issue 28 parts 2 and 4): caps on running agents (`max_running` of a
//! project and of the fleet) with fake agents on real tmux, and the notifications that
//! reach a phone (ntfy, a webhook, Slack) with the answers that come back, against a
//! stand-in server on 127.0.0.1 (tests/common/notify_standin.rs).

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use common::{id, wait_for, TaskEnv};
use serde_json::Value;

fn pass(env: &TaskEnv) -> Value {
    env.ok(&["monitor", "--once"])
}

/// Task sessions whose agent's pane is alive.
fn live_agents(env: &TaskEnv) -> usize {
    let out = env
        .tmux
        .ok(&["list-panes", "-a", "-F", "#{session_name}\t#{pane_dead}"]);
    out.lines()
        .filter(|l| !l.starts_with("keepalive") && l.ends_with("\t0"))
        .count()
}

#[test]
fn a_project_cap_queues_in_order_says_why_and_starts_the_next_as_one_ends() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "5"]);
    let p = env.ok(&["project", "update", "--max-running", "2"]);
    assert_eq!(p["max_running"], 2, "{p}");
    let a = env.create(&["cap/a", "a", "--harness", "fake-wait"]);
    let b = env.create(&["cap/b", "b", "--harness", "fake-wait"]);
    let c = env.create(&["cap/c", "c", "--harness", "fake-wait"]);
    let d = env.create(&["cap/d", "d", "--harness", "fake-wait"]);
    assert_eq!(a["outcome"], "spawned", "{a}");
    assert_eq!(b["outcome"], "spawned", "{b}");
    assert_eq!(c["outcome"], "queued", "{c}");
    assert!(
        c["note"].as_str().unwrap().contains("2 of 2"),
        "the note says why: {c}"
    );
    assert_eq!(d["outcome"], "queued", "{d}");
    assert_eq!(live_agents(&env), 2);
    // Why it waits, in the list (JSON and text), in show, and counted in status.
    let list = env.ok(&["task", "list"]);
    let row = list
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == c["id"])
        .unwrap();
    assert_eq!(row["queued"]["reason"], "queued: 2 running of 2", "{row}");
    assert_eq!(row["queued"]["scope"], "project", "{row}");
    let text = env.cmd_in(&env.repo, &["task", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout).to_string();
    assert!(text.contains("queued: 2 running of 2"), "{text}");
    assert!(text.contains("running: 2 of 2 (app); 2 queued"), "{text}");
    let show = env.task(&id(&c));
    assert_eq!(show["queued"]["reason"], "queued: 2 running of 2", "{show}");
    // The sidebar: its list of tasks and the queued task's own notice.
    let side = env
        .cmd_in(
            &env.repo,
            &["sidebar", "--once", "--task", &id(&c), "--width", "70"],
        )
        .output()
        .unwrap();
    let side = String::from_utf8_lossy(&side.stdout).to_string();
    assert!(side.contains("Queued: 2 running of 2"), "{side}");
    let (_, m) = env.json(&["sidebar", "--once", "--task", &id(&c)]);
    assert!(
        m.to_string()
            .contains("Queued: 2 running of 2 (max_running)"),
        "{m}"
    );
    let status = env.ok(&["status", "--format", "json"]);
    assert_eq!(status["fleet"]["running"], 2, "{status}");
    assert_eq!(status["fleet"]["queued"], 2, "{status}");
    // A queued task is not started by hand over the cap either.
    env.err(&["task", "spawn", &id(&c)], "cap_reached");
    // One ends (cancelled): the OLDEST queued one starts, not the other.
    env.ok(&["task", "cancel", "--yes", &id(&a)]);
    assert_eq!(env.task(&id(&c))["status"], "working");
    assert_eq!(env.task(&id(&d))["status"], "pending");
    assert_eq!(live_agents(&env), 2);
    // One dies: the monitor records the death, and a pass after it starts the next.
    let sid = env.task(&id(&b))["tmux_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    env.tmux
        .ok(&["respawn-pane", "-k", "-t", &format!("{sid}:"), "exit 3"]);
    wait_for("the death to be recorded and d to start", 30, || {
        pass(&env);
        env.task(&id(&d))["status"] == "working"
    });
    assert_eq!(live_agents(&env), 2);
    let started = env.history_events(&id(&d), "auto.spawned");
    assert_eq!(started.len(), 1, "{started:?}");
}

#[test]
fn parallel_creates_never_go_over_the_fleet_cap() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "6"]);
    env.append_config("[fleet]\nmax_running = 2\n");
    let children: Vec<_> = (0..6)
        .map(|i| {
            env.cmd_in(
                &env.repo,
                &[
                    "task",
                    "create",
                    &format!("par/{i}"),
                    "go",
                    "--harness",
                    "fake-wait",
                    "--json",
                ],
            )
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let mut outcomes = vec![];
    for c in children {
        let out = c.wait_with_output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        outcomes.push(v["outcome"].as_str().unwrap_or("?").to_string());
    }
    outcomes.sort();
    assert_eq!(
        outcomes,
        ["queued", "queued", "queued", "queued", "spawned", "spawned"],
        "{outcomes:?}"
    );
    assert_eq!(live_agents(&env), 2);
    let status = env.ok(&["status", "--format", "json"]);
    assert_eq!(status["fleet"]["max_running"], 2, "{status}");
    assert_eq!(status["fleet"]["queued"], 4, "{status}");
}

#[test]
fn a_create_killed_after_the_cap_was_counted_is_started_by_the_next_pass() {
    let env = TaskEnv::new();
    env.add_project(&["--pool-size", "3"]);
    env.append_config("[fleet]\nmax_running = 2\n");
    let out = env
        .cmd_in(
            &env.repo,
            &["task", "create", "k/a", "a", "--harness", "fake-wait"],
        )
        .env("ORANGE_CRASH_AT", "cap.counted")
        .output()
        .unwrap();
    assert!(out.status.code().is_none(), "it was to die: {out:?}");
    let list = env.ok(&["task", "list"]);
    let t = &list.as_array().unwrap()[0];
    assert_eq!(t["status"], "pending", "{t}");
    assert_eq!(live_agents(&env), 0);
    // Room under the cap: the next pass starts what the killed command left queued.
    pass(&env);
    let t = env.task(&id(t));
    assert_eq!(t["status"], "working", "{t}");
    assert_eq!(live_agents(&env), 1);
}

// ---- Notifications that reach the phone, and answers that come back ----

use common::notify_standin::{closed_port, NotifyStandin};

/// `[notify]` with ntfy (token, reply topic, secret), a webhook and Slack on `s`.
fn notify_config(s: &NotifyStandin, webhook: &str, slack: &str, topic: &str) -> String {
    format!(
        "[notify]\nwebhook = \"{}\"\nslack = \"{}\"\n[notify.ntfy]\ntopic = \"{topic}\"\ntoken = \"tok-123\"\nreply_topic = \"{}\"\nsecret = \"s3cret\"\npoll_every = \"0s\"\n",
        s.url(webhook),
        s.url(slack),
        s.url("/reply"),
    )
}

fn doctor_notify(env: &TaskEnv) -> Value {
    let (_, d) = env.json(&["doctor", "--harness", "fake-wait"]);
    d["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "notify")
        .cloned()
        .unwrap_or(Value::Null)
}

#[test]
fn a_task_that_needs_you_reaches_ntfy_the_webhook_and_slack_with_a_reply_button() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let s = NotifyStandin::start();
    env.append_config(&notify_config(&s, "/hook", "/slack", &s.url("/alerts")));
    // It says it is stuck: it needs you, and waits for an answer.
    let t = id(&env.create(&["n/stuck", "get stuck", "--harness", "fake-stuck"]));
    env.wait_status(&t, "stuck");
    // A monitor killed after it wrote the notification, before its sender started: the
    // next pass tells it (once), as it never kept that it told it.
    let out = env
        .cmd_in(&env.repo, &["monitor", "--once"])
        .env("ORANGE_CRASH_AT", "notify.written")
        .output()
        .unwrap();
    assert!(out.status.code().is_none(), "it was to die: {out:?}");
    pass(&env);
    wait_for("the three channels to be told", 20, || {
        !s.on("/alerts").is_empty() && !s.on("/hook").is_empty() && !s.on("/slack").is_empty()
    });
    let ntfy = &s.on("/alerts")[0];
    assert_eq!(ntfy.method, "POST");
    assert!(
        ntfy.body.contains("n/stuck needs you (stuck)"),
        "{}",
        ntfy.body
    );
    assert_eq!(ntfy.header("authorization"), Some("Bearer tok-123"));
    let actions: Value = serde_json::from_str(ntfy.header("actions").unwrap()).unwrap();
    assert_eq!(actions[0]["action"], "http", "{actions}");
    assert_eq!(actions[0]["url"], s.url("/reply"), "{actions}");
    assert_eq!(actions[0]["method"], "POST", "{actions}");
    assert_eq!(actions[0]["body"], format!("{t}: continue"), "{actions}");
    assert_eq!(actions[0]["headers"]["Title"], "s3cret", "{actions}");
    let hook: Value = serde_json::from_str(&s.on("/hook")[0].body).unwrap();
    assert_eq!(hook["task"], t.as_str(), "{hook}");
    assert_eq!(hook["project"], "app", "{hook}");
    assert_eq!(hook["branch"], "n/stuck", "{hook}");
    assert_eq!(hook["state"], "waiting", "{hook}");
    assert_eq!(hook["reason"], "stuck", "{hook}");
    assert!(hook["host"].is_null() && hook["pr_url"].is_null(), "{hook}");
    assert_eq!(hook["tasks"].as_array().unwrap().len(), 1, "{hook}");
    let slack: Value = serde_json::from_str(&s.on("/slack")[0].body).unwrap();
    assert!(
        slack["text"]
            .as_str()
            .unwrap()
            .starts_with("orange: app/n/stuck needs you"),
        "{slack}"
    );
    // Once per change: another pass tells nothing again.
    pass(&env);
    common::holds_for(
        "no second notification",
        std::time::Duration::from_secs(1),
        || s.on("/alerts").len() == 1,
    );
    assert_eq!(doctor_notify(&env)["ok"], true);
}

#[test]
fn a_hanging_a_failing_and_an_unreachable_channel_never_hold_the_pass() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let s = NotifyStandin::start();
    let dead_topic = format!("http://127.0.0.1:{}/alerts", closed_port());
    env.append_config(&notify_config(&s, "/hang", "/fail", &dead_topic));
    let t = id(&env.create(&["n/dies", "die", "--harness", "fake-fail"]));
    env.wait_session(&t, "dead");
    // The pass that tells it ends while the webhook still holds its request open: it
    // never waited for it.
    let mut monitor = env
        .cmd_in(&env.repo, &["monitor", "--once", "--json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the webhook to hold the request", 20, || s.held() == 1);
    let done = monitor.wait().unwrap();
    assert!(done.success());
    assert_eq!(
        s.held(),
        1,
        "the request was still held when the pass ended"
    );
    // The other two failed: logged and counted, never silent.
    wait_for("two failures counted", 20, || {
        doctor_notify(&env)["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("2 notification(s) failed"))
    });
    let check = doctor_notify(&env);
    assert_eq!(check["ok"], false, "{check}");
    let log = std::fs::read_to_string(env.home.join("orange.log")).unwrap();
    assert!(log.contains("notify: a channel failed"), "{log}");
    assert!(log.contains("HTTP 500"), "{log}");
    s.release();
}

#[test]
fn a_phone_answer_reaches_the_waiting_agent_once_and_others_are_refused() {
    let env = TaskEnv::new();
    env.add_project(&[]);
    let s = NotifyStandin::start();
    env.append_config(&notify_config(&s, "/hook", "/slack", &s.url("/alerts")));
    let t = id(&env.create(&["n/ask", "ask me", "--harness", "fake-wait"]));
    env.agent_log(&t, "cwd");
    // Its turn ended (as its hooks say): it waits for an answer.
    env.hook(&t, "Stop", serde_json::json!({}));
    // The first look at the reply topic: from now on.
    pass(&env);
    assert!(!s.on("/reply/json?poll=1").is_empty());
    let gone = id(&env.create(&["n/gone", "gone", "--harness", "fake-wait"]));
    env.ok(&["task", "cancel", "--yes", &gone]);
    s.reply("", &format!("{t}: typed without the secret"));
    s.reply("s3cret", "zz9zz9: for no such task");
    s.reply("s3cret", &format!("{gone}: for a cancelled task"));
    let answer = s.reply("s3cret", &format!("{t}: yes, go on from the phone"));
    pass(&env);
    wait_for("the answer in the agent's input", 20, || {
        env.input_lines(&t)
            .iter()
            .any(|l| l.contains("yes, go on from the phone"))
    });
    // A monitor killed right after delivering one, before it kept its id: the next pass
    // does not deliver it again.
    let second = s.reply("s3cret", &format!("{t}: and once more"));
    let out = env
        .cmd_in(&env.repo, &["monitor", "--once"])
        .env("ORANGE_CRASH_AT", "reply.delivered")
        .output()
        .unwrap();
    assert!(out.status.code().is_none(), "it was to die: {out:?}");
    pass(&env);
    pass(&env);
    wait_for("the second answer", 20, || {
        env.input_lines(&t)
            .iter()
            .any(|l| l.contains("and once more"))
    });
    let lines = env.input_lines(&t);
    let count = |text: &str| lines.iter().filter(|l| l.contains(text)).count();
    assert_eq!(count("yes, go on from the phone"), 1, "{lines:?}");
    assert_eq!(count("and once more"), 1, "{lines:?}");
    assert_eq!(count("without the secret"), 0, "{lines:?}");
    let sent = env.history_events(&t, "message.sent");
    let replies: Vec<&str> = sent.iter().filter_map(|e| e["reply"].as_str()).collect();
    assert_eq!(replies, [answer.as_str(), second.as_str()], "{sent:?}");
    assert!(sent.iter().all(|e| e["via"] == "phone"), "{sent:?}");
    let check = doctor_notify(&env);
    assert!(
        check["detail"]
            .as_str()
            .unwrap()
            .contains("3 answer(s) refused"),
        "{check}"
    );
    let log = std::fs::read_to_string(env.home.join("orange.log")).unwrap();
    assert!(log.contains("without the secret"), "{log}");
    assert!(log.contains("unknown task"), "{log}");
    assert!(log.contains("the task is not running"), "{log}");
    assert!(env
        .input_lines(&gone)
        .iter()
        .all(|l| !l.contains("cancelled task")));
}
