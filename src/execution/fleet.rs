//! config.toml's settings for a fleet left alone (DESIGN.md "A fleet left alone"):
//! `[fleet]` (how many agents run at once, over every project) and `[notify]` (the
//! channels that reach a person away from the terminal: ntfy, a webhook, Slack, and the
//! ntfy topic answers come back on).

use serde::Deserialize;

/// `[fleet]`.
#[derive(Debug, Default, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FleetConfig {
    /// At most this many agents run at once, over every project (unset: no cap). Apart
    /// from each project's pool size and its own `max_running`.
    #[serde(default)]
    pub max_running: Option<usize>,
}

/// `[notify]`: where notifications go besides the attached clients (`@orange-notify`'s
/// words `ntfy`, `webhook`, `slack` turn each on; a channel configured here is on unless
/// the option says `off`).
#[derive(Debug, Default, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NotifyConfig {
    #[serde(default)]
    pub ntfy: Option<NtfyConfig>,
    /// A URL that gets a POST of JSON per notification.
    #[serde(default)]
    pub webhook: Option<String>,
    /// A Slack incoming-webhook URL (`{"text": …}`).
    #[serde(default)]
    pub slack: Option<String>,
}

/// `[notify.ntfy]`.
#[derive(Debug, Default, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NtfyConfig {
    /// The topic's URL: `https://ntfy.sh/my-orange-topic`.
    pub topic: String,
    /// An access token (`Authorization: Bearer …`), for a protected topic.
    #[serde(default)]
    pub token: Option<String>,
    /// The topic answers come back on (`ID: text`); unset: no answers.
    #[serde(default)]
    pub reply_topic: Option<String>,
    /// The shared secret every answer must carry (a reply topic needs one).
    #[serde(default)]
    pub secret: Option<String>,
    /// How often the monitor asks the reply topic for answers (default 15s).
    #[serde(default)]
    pub poll_every: Option<String>,
}

impl NotifyConfig {
    /// Is any channel besides the attached clients configured?
    pub fn any(&self) -> bool {
        self.ntfy.is_some() || self.webhook.is_some() || self.slack.is_some()
    }
}

/// How often the reply topic is asked when `poll_every` is unset.
pub const DEFAULT_POLL_EVERY: std::time::Duration = std::time::Duration::from_secs(15);

impl NtfyConfig {
    /// `poll_every`, checked by [`validate`].
    pub fn poll_every(&self) -> std::time::Duration {
        self.poll_every
            .as_deref()
            .and_then(|s| humantime::parse_duration(s).ok())
            .unwrap_or(DEFAULT_POLL_EVERY)
    }
}

/// What config.toml cannot mean: a cap of 0, a URL that is not http(s), a reply topic
/// without its secret, a token or secret with control characters (they go in a header).
pub fn validate(fleet: &FleetConfig, notify: &NotifyConfig) -> Result<(), String> {
    if fleet.max_running == Some(0) {
        return Err("fleet.max_running must be at least 1 (leave it out for no cap)".into());
    }
    let url = |what: &str, u: &str| -> Result<(), String> {
        let ok = (u.starts_with("http://") || u.starts_with("https://"))
            && !u.chars().any(|c| c.is_control() || c.is_whitespace());
        if ok {
            Ok(())
        } else {
            Err(format!("{what} {u:?}: an http:// or https:// URL"))
        }
    };
    if let Some(w) = &notify.webhook {
        url("notify.webhook", w)?;
    }
    if let Some(s) = &notify.slack {
        url("notify.slack", s)?;
    }
    if let Some(n) = &notify.ntfy {
        url("notify.ntfy.topic", &n.topic)?;
        if let Some(r) = &n.reply_topic {
            url("notify.ntfy.reply_topic", r)?;
            if n.secret.as_deref().is_none_or(|s| s.trim().is_empty()) {
                return Err(
                    "notify.ntfy.reply_topic needs a secret: answers without it are refused".into(),
                );
            }
        }
        for (what, v) in [("token", &n.token), ("secret", &n.secret)] {
            if v.as_deref()
                .is_some_and(|v| v.chars().any(char::is_control))
            {
                return Err(format!("notify.ntfy.{what} has control characters"));
            }
        }
        if let Some(p) = &n.poll_every {
            humantime::parse_duration(p)
                .map_err(|e| format!("notify.ntfy.poll_every {p:?}: {e}"))?;
        }
    }
    Ok(())
}
