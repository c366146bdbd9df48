//! Notifications that reach a person away from the terminal (`[notify]` in config.toml,
//! docs/notifications.md): ntfy (a topic URL, an optional token; a task waiting for an
//! answer gets a reply button), a webhook (a POST of JSON) and Slack (an incoming webhook's
//! `{"text": …}`). They go out with the clients' notification, under the same rules (once
//! per change, one summary, at least `GAP` apart, never for the task looked at).
//!
//! Sending never blocks a pass: what to send is written to `run/outbox/` and a detached
//! `orange hook deliver FILE` sends it ([`deliver_file`]), each request with a deadline of
//! [`http::TIMEOUT`]. A failure is logged and counted in `run/notify-failures.json`, which
//! `orange doctor` shows: never silent. The texts sent are made safe (`text::safe_line`);
//! the webhook's JSON keeps every field exact.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::adapters::http::{self, Request};
use crate::adapters::store::{self, Home, LockGuard};
use crate::error::Result;
use crate::execution::config::Config;
use crate::execution::fleet::NotifyConfig;
use crate::orchestration::attention::classify::{Item, Need};

/// How long the detached sender may live (three channels, each within its deadline).
const SENDER_LIMIT: Duration = Duration::from_secs(30);
/// Reply buttons on one ntfy notification (ntfy shows at most three actions).
const MAX_ACTIONS: usize = 3;

/// One notification, as the detached sender gets it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Outgoing {
    /// The one message (already made safe for a screen).
    pub message: String,
    /// Each task told, with its exact fields (the webhook's JSON).
    pub tasks: Vec<Value>,
    /// The tasks told that wait for an answer (ntfy's reply buttons).
    pub ask: Vec<String>,
}

/// What is told about one item: task, project, branch, host, state, reason and its pull
/// request's URL (`null` when it has none).
fn task_json(item: &Item, need: Need) -> Value {
    json!({
        "task": item.id,
        "project": item.project,
        "branch": item.branch,
        "host": item.host,
        "state": need.as_str(),
        "reason": item.reason,
        // The snapshot's item carries no pull request yet: null until it does.
        "pr_url": Value::Null,
    })
}

/// The notification for `told`, as `message` says it.
pub fn outgoing(told: &[(&Item, Need)], message: &str) -> Outgoing {
    Outgoing {
        message: message.to_string(),
        tasks: told.iter().map(|(i, n)| task_json(i, *n)).collect(),
        ask: told
            .iter()
            .filter(|(i, n)| i.host.is_none() && matches!(n, Need::Waiting | Need::Escalated))
            .map(|(i, _)| i.id.clone())
            .collect(),
    }
}

/// The requests for `out` on the configured channels, each named.
pub fn requests(config: &NotifyConfig, out: &Outgoing) -> Vec<(&'static str, Request)> {
    let mut v = vec![];
    if let Some(n) = &config.ntfy {
        let mut headers = vec![
            ("Title".to_string(), "orange".to_string()),
            ("Tags".to_string(), "orange".to_string()),
        ];
        if let Some(t) = &n.token {
            headers.push(("Authorization".into(), format!("Bearer {t}")));
        }
        if let (Some(reply), Some(secret)) = (&n.reply_topic, &n.secret) {
            let actions: Vec<Value> = out
                .ask
                .iter()
                .take(MAX_ACTIONS)
                .map(|id| {
                    json!({
                        "action": "http",
                        "label": format!("Continue {id}"),
                        "url": reply,
                        "method": "POST",
                        "headers": {"Title": secret},
                        "body": format!("{id}: continue"),
                        "clear": true,
                    })
                })
                .collect();
            if !actions.is_empty() {
                headers.push(("Actions".into(), Value::Array(actions).to_string()));
            }
        }
        v.push((
            "ntfy",
            Request {
                method: "POST".into(),
                url: n.topic.clone(),
                headers,
                body: out.message.clone(),
            },
        ));
    }
    let json_post = |url: &str, body: Value| Request {
        method: "POST".into(),
        url: url.to_string(),
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: body.to_string(),
    };
    if let Some(url) = &config.webhook {
        // One item: its fields at the top too, for the simplest receiver.
        let mut body = json!({"message": out.message, "tasks": out.tasks});
        if let [one] = out.tasks.as_slice() {
            if let (Some(b), Some(o)) = (body.as_object_mut(), one.as_object()) {
                b.extend(o.clone());
            }
        }
        v.push(("webhook", json_post(url, body)));
    }
    if let Some(url) = &config.slack {
        v.push(("slack", json_post(url, json!({"text": out.message}))));
    }
    v
}

/// Hand `out` to a detached sender. Never waits for a channel; a failure to start the
/// sender is logged and counted like a failed request.
pub fn send(home: &Home, out: &Outgoing) {
    let dir = home.run_dir().join("outbox");
    let file = dir.join(format!(
        "{}-{}.json",
        crate::orchestration::observe::snapshot::now_ms(),
        std::process::id()
    ));
    let written = store::ensure_dir(&dir).and_then(|_| store::write_json_atomic(&file, out));
    // Killed here, the pass never kept what it told: the next pass tells it again.
    crate::adapters::fault::point("notify.written");
    if let Err(e) = written.and_then(|_| http::deliver_detached(&file, SENDER_LIMIT)) {
        failed(home, "outbox", &e.to_string());
    }
    sweep(&dir);
}

/// What a monitor killed between writing a notification and starting its sender left in
/// the outbox (a sender removes its file as it starts: one older than a sender may live
/// was never sent). Removed, not sent: that pass kept no record of telling it, so the
/// next pass told it again.
fn sweep(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let stale = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > SENDER_LIMIT * 2);
        if stale {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// `orange hook deliver FILE`: send what FILE holds on every channel configured now, then
/// remove it. What failed is logged and counted; what the channels answered is returned.
pub fn deliver_file(home: &Home, file: &Path) -> Result<Value> {
    let out: Outgoing = store::read_json(file)?;
    let _ = std::fs::remove_file(file);
    let config = Config::load(home)?;
    // At once, each counted as it ends: a channel that hangs holds no other back.
    let handles: Vec<_> = requests(&config.notify, &out)
        .into_iter()
        .map(|(name, req)| {
            let home = home.clone();
            std::thread::spawn(move || sent(&home, name, http::send(&req, http::TIMEOUT)))
        })
        .collect();
    let results: Vec<Value> = handles.into_iter().filter_map(|h| h.join().ok()).collect();
    Ok(json!({"delivered": results}))
}

/// What one channel did with a notification (a failure logged and counted).
fn sent(home: &Home, name: &str, r: Result<http::Response>) -> Value {
    match r {
        Ok(resp) if (200..300).contains(&resp.status) => {
            json!({"channel": name, "status": resp.status})
        }
        Ok(resp) => {
            let e = format!(
                "HTTP {}: {}",
                resp.status,
                crate::text::safe_line(resp.body.trim())
            );
            failed(home, name, &e);
            json!({"channel": name, "status": resp.status, "error": e})
        }
        Err(e) => {
            failed(home, name, &e.to_string());
            json!({"channel": name, "error": e.to_string()})
        }
    }
}

/// What failed, kept for `orange doctor` (`run/notify-failures.json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Failures {
    /// Notifications a channel did not take.
    #[serde(default)]
    pub failed: u64,
    /// Answers from the phone refused (no secret, an unknown or finished task…).
    #[serde(default)]
    pub refused: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<Value>,
}

fn failures_path(home: &Home) -> PathBuf {
    home.run_dir().join("notify-failures.json")
}

/// What failed so far (`orange doctor`).
pub fn failures(home: &Home) -> Failures {
    store::read_json(&failures_path(home)).unwrap_or_default()
}

/// Count one failure or refusal, and log it.
fn count(home: &Home, refusal: bool, what: Value) {
    store::log(
        home,
        "warn",
        if refusal {
            "notify: answer refused"
        } else {
            "notify: a channel failed"
        },
        what.clone(),
    );
    let path = failures_path(home);
    let Ok(_lock) = LockGuard::acquire(&path.with_extension("lock")) else {
        return;
    };
    let mut f = failures(home);
    if refusal {
        f.refused += 1;
    } else {
        f.failed += 1;
    }
    let mut last = what;
    last["at"] = store::now_rfc3339().into();
    f.last = Some(last);
    let _ = store::write_json_atomic(&path, &f);
}

/// A channel did not take a notification.
pub fn failed(home: &Home, channel: &str, error: &str) {
    count(home, false, json!({"channel": channel, "error": error}));
}

/// An answer from the phone was refused.
pub fn refused(home: &Home, why: &str, detail: Value) {
    count(
        home,
        true,
        json!({"channel": "ntfy-reply", "error": why, "detail": detail}),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execution::fleet::NtfyConfig;

    #[test]
    fn each_channel_gets_its_request_and_only_a_task_waiting_here_a_reply_button() {
        let out = Outgoing {
            message: "orange: app/x needs you (stuck)".into(),
            tasks: vec![json!({"task": "ab12", "state": "waiting"})],
            ask: vec!["ab12".into()],
        };
        let mut config = NotifyConfig {
            ntfy: Some(NtfyConfig {
                topic: "https://ntfy.example/alerts".into(),
                ..NtfyConfig::default()
            }),
            webhook: Some("https://example.com/hook".into()),
            slack: Some("https://hooks.example/x".into()),
        };
        let r = requests(&config, &out);
        let names: Vec<&str> = r.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["ntfy", "webhook", "slack"]);
        // No reply topic: no button, no token.
        assert!(r[0]
            .1
            .headers
            .iter()
            .all(|(k, _)| k != "Actions" && k != "Authorization"));
        let hook: Value = serde_json::from_str(&r[1].1.body).unwrap();
        assert_eq!(hook["task"], "ab12");
        assert_eq!(hook["message"], out.message);
        assert_eq!(r[2].1.body, json!({"text": out.message}).to_string());
        let n = config.ntfy.as_mut().unwrap();
        n.reply_topic = Some("https://ntfy.example/replies".into());
        n.secret = Some("s".into());
        n.token = Some("t".into());
        let r = requests(&config, &out);
        let h = |k: &str| {
            r[0].1
                .headers
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(h("Authorization").as_deref(), Some("Bearer t"));
        let actions: Value = serde_json::from_str(&h("Actions").unwrap()).unwrap();
        assert_eq!(actions[0]["body"], "ab12: continue");
        // Nothing waits for an answer: no button.
        let dead = Outgoing { ask: vec![], ..out };
        assert!(requests(&config, &dead)[0]
            .1
            .headers
            .iter()
            .all(|(k, _)| k != "Actions"));
    }
}
