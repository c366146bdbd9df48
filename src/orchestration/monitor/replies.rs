//! Answers from the phone (`[notify.ntfy] reply_topic`, docs/notifications.md): the
//! person publishes `ID: text` on the reply topic (or taps a notification's reply
//! button), with the shared secret as the message's title (or before the text:
//! `SECRET ID: text`). No inbound port: after a pass the monitor asks the topic with
//! ntfy's poll API (`GET <topic>/json?poll=1&since=<last id>`), at most every
//! `poll_every`, within [`http::TIMEOUT`].
//!
//! Each answer goes to its task's agent through `task send`'s path (typed when it waits,
//! held while it works, never into a blocked or dead one) and into its history with the
//! ntfy message id. The last id handled is kept in `run/ntfy-replies.json`, saved after
//! each answer; an answer already in the task's history (a monitor killed between the two)
//! is not delivered again. Without the secret, for an unknown task or one that is not
//! running: refused, logged and counted (`orange doctor`).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::adapters::http::{self, Request};
use crate::adapters::store::{self, Home, LockGuard};
use crate::adapters::tmux::Tmux;
use crate::execution::config::Config;
use crate::execution::fleet::NtfyConfig;
use crate::orchestration::task::service::TaskService;

use super::phone;

/// What is kept between polls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Polled {
    /// ntfy's `since`: the last message id handled (or, before the first, the time the
    /// replies were first asked for: older messages are not answers to this orange).
    #[serde(default)]
    since: Option<String>,
    /// When the topic was last asked (ms since the epoch).
    #[serde(default)]
    at_ms: u64,
}

/// After a pass (under the pass lock): ask the reply topic, if one is configured and it is
/// time, and deliver what came. Errors are logged and counted, never returned.
pub fn after_pass(home: &Home, tmux: &Tmux) {
    let Ok(config) = Config::load(home) else {
        return;
    };
    let Some(ntfy) = config
        .notify
        .ntfy
        .as_ref()
        .filter(|n| n.reply_topic.is_some())
    else {
        return;
    };
    let path = home.run_dir().join("ntfy-replies.json");
    let Ok(_lock) =
        LockGuard::acquire_within(&path.with_extension("lock"), std::time::Duration::ZERO)
    else {
        return;
    };
    let mut state: Polled = store::read_json(&path).unwrap_or_default();
    let now = crate::orchestration::observe::snapshot::now_ms();
    let since = match &state.since {
        Some(s) => s.clone(),
        None => (now / 1000).to_string(),
    };
    if state.since.is_some()
        && now.saturating_sub(state.at_ms) < ntfy.poll_every().as_millis() as u64
    {
        return;
    }
    state.since = Some(since.clone());
    state.at_ms = now;
    let save = |s: &Polled| {
        if let Err(e) = store::write_json_atomic(&path, s) {
            phone::failed(
                home,
                "ntfy-reply",
                &format!("saving {}: {e}", path.display()),
            );
        }
    };
    save(&state);
    let messages = match fetch(ntfy, &since) {
        Ok(m) => m,
        Err(e) => {
            phone::failed(home, "ntfy-reply", &e);
            return;
        }
    };
    let mut tasks = TaskService::new(home).with_tmux(tmux.clone());
    for m in messages {
        let Some(id) = m["id"].as_str().map(str::to_string) else {
            continue;
        };
        if m["event"] == "message" {
            take(home, &mut tasks, ntfy, &id, &m);
        }
        crate::adapters::fault::point("reply.delivered");
        state.since = Some(id);
        save(&state);
    }
}

/// The messages on the reply topic since `since`, oldest first (ntfy's JSON lines).
fn fetch(ntfy: &NtfyConfig, since: &str) -> Result<Vec<Value>, String> {
    let topic = ntfy.reply_topic.as_deref().unwrap_or_default();
    let mut req = Request {
        method: "GET".into(),
        url: format!("{}/json?poll=1&since={since}", topic.trim_end_matches('/')),
        ..Request::default()
    };
    if let Some(t) = &ntfy.token {
        req.headers
            .push(("Authorization".into(), format!("Bearer {t}")));
    }
    let resp = http::send(&req, http::TIMEOUT).map_err(|e| e.to_string())?;
    if !(200..300).contains(&resp.status) {
        return Err(format!(
            "GET {}: HTTP {}: {}",
            req.url,
            resp.status,
            crate::text::safe_line(resp.body.trim())
        ));
    }
    Ok(resp
        .body
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

/// The answer in a message: `ID: text`, with the secret as its title or before it.
/// `Err`: why it is refused.
pub fn parse<'m>(
    title: &str,
    message: &'m str,
    secret: &str,
) -> Result<(&'m str, &'m str), &'static str> {
    let body = if !secret.is_empty() && title.trim() == secret {
        message.trim()
    } else {
        match message.trim().strip_prefix(secret) {
            Some(rest) if !secret.is_empty() && rest.starts_with(char::is_whitespace) => {
                rest.trim()
            }
            _ => return Err("without the secret"),
        }
    };
    let (id, text) = body.split_once(':').ok_or("not `ID: text`")?;
    let (id, text) = (id.trim(), text.trim());
    if id.is_empty() || id.contains(char::is_whitespace) || text.is_empty() {
        return Err("not `ID: text`");
    }
    Ok((id, text))
}

/// One message: refused (logged, counted) or delivered through `task send`'s path.
fn take(home: &Home, tasks: &mut TaskService, ntfy: &NtfyConfig, msg_id: &str, m: &Value) {
    let secret = ntfy.secret.as_deref().unwrap_or_default();
    let (id, text) = match parse(
        m["title"].as_str().unwrap_or_default(),
        m["message"].as_str().unwrap_or_default(),
        secret,
    ) {
        Ok(p) => p,
        Err(why) => return phone::refused(home, why, json!({"message_id": msg_id})),
    };
    let task = match tasks.get(id, None) {
        Ok(t) => t,
        Err(e) => {
            return phone::refused(
                home,
                "unknown task",
                json!({"message_id": msg_id, "task": id, "error": e.to_string()}),
            )
        }
    };
    if !task.status.is_active() {
        return phone::refused(
            home,
            "the task is not running",
            json!({"message_id": msg_id, "task": task.id, "status": task.status}),
        );
    }
    // Already delivered (the monitor was killed before it saved the id).
    let known = task.held.iter().any(|h| h.reply.as_deref() == Some(msg_id))
        || tasks
            .store
            .history(&task.project, &task.id)
            .iter()
            .any(|e| e.data.get("reply").and_then(Value::as_str) == Some(msg_id));
    if known {
        return;
    }
    match tasks.send_reply(&task, text, msg_id) {
        Ok(sent) => store::log(
            home,
            "info",
            "answer from the phone",
            json!({"task": task.id, "message_id": msg_id, "outcome": sent.outcome}),
        ),
        Err(e) => phone::refused(
            home,
            "the agent cannot take it now",
            json!({"message_id": msg_id, "task": task.id, "error": e.to_string(), "code": e.code()}),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_needs_the_secret_and_an_id() {
        let secret = Err("without the secret");
        let form = Err("not `ID: text`");
        type Parsed = Result<(&'static str, &'static str), &'static str>;
        let cases: &[(&str, &str, &str, Parsed)] = &[
            ("s3cret", "3fa2: go on", "s3cret", Ok(("3fa2", "go on"))),
            ("", "s3cret 3fa2: go: on", "s3cret", Ok(("3fa2", "go: on"))),
            ("", "3fa2: go on", "s3cret", secret),
            ("nope", "3fa2: go on", "s3cret", secret),
            ("", "s3cretx 3fa2: go", "s3cret", secret),
            ("s3cret", "just text", "s3cret", form),
            ("s3cret", "3fa2:   ", "s3cret", form),
            // No secret configured: nothing is accepted.
            ("", "3fa2: go", "", secret),
        ];
        for (title, message, key, want) in cases {
            assert_eq!(parse(title, message, key), *want, "{title:?} {message:?}");
        }
    }
}
