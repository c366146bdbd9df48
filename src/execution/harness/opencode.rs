//! Everything orange knows of opencode (`opencode`, 1.18): its command line (its
//! interface, the first prompt in `--prompt=`, `-s ses_…` to continue a conversation; its
//! one-shot `run` for a headless task), where it keeps its state (its XDG directories),
//! the plugin that tells orange its events, what those events mean, and its screens.
//!
//! opencode's positional is a project directory (`opencode "say hi"` opens nothing and
//! exits 0), so the prompt goes in `--prompt`, glued to it with `=`: its option parser
//! takes a separate value that starts with `-` for an option and starts with an empty
//! prompt (verified with 1.18.33: `--prompt "-v x"` opened an empty session).
//!
//! The event channel is a plugin (a JS file) in a config directory orange owns for the
//! task (`OPENCODE_CONFIG_DIR`, which opencode reads beside the user's own config): never
//! the user's global config, never the workspace. opencode installs `@opencode-ai/plugin`
//! into every config directory it reads in the background and waits for that install
//! before it loads the directory's plugins; orange's plugin needs nothing, so the
//! directory is written already "installed" (a `node_modules/` and a lock file that names
//! the package), and opencode starts at once, offline too.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::adapters::store::{ensure_dir, write_bytes_atomic};
use crate::error::Result;
use crate::execution::harness::kind::{
    AgentKind, Conversation, Options, PromptAfter, ScreenTexts, Start,
};
use crate::execution::harness::state::{classify_api_error, Blocker, HookSays, State};

pub struct Opencode;

/// The plugin orange writes into its config directory (`plugins/orange.js`).
pub const PLUGIN: &str = include_str!("opencode_plugin.js");

/// The config directory's name in the task's agent directory.
const CONFIG_DIR: &str = "opencode";

/// The prompt the plugin sends into a resumed conversation (`{"session", "prompt"}`).
const RESUME_FILE: &str = "resume.json";

impl AgentKind for Opencode {
    /// opencode 1.18 (its own providers): `Usage limit reached. It will reset in 2 hours
    /// 3 minutes. …` (or `<model> usage limit reached …`), in its session's error event.
    fn limit(&self, text: &str) -> bool {
        let t = text.to_lowercase();
        t.contains("usage limit reached") && t.contains("reset")
    }

    fn name(&self) -> &'static str {
        "opencode"
    }

    fn package(&self) -> &'static str {
        "opencode-ai"
    }

    /// Its interface: `--auto` (no permission prompts, as claude's default bypass),
    /// `-s <id>` to continue the task's own conversation (never `-c`, the directory's last
    /// one, which may be another task's).
    fn options(&self, o: &Options) -> Vec<String> {
        if o.headless {
            return headless_options(o);
        }
        let mut v: Vec<String> = vec!["--auto".into()];
        if let Some(Conversation::Resume(id)) = o.conversation {
            v.extend(["-s".into(), id.clone()]);
        }
        v
    }

    /// Interactive: `--prompt=<p>` (its positional is a directory); `opencode run`: `--`.
    fn prompt_after(&self, headless: bool) -> PromptAfter {
        if headless {
            PromptAfter::DashDash
        } else {
            PromptAfter::Glued("--prompt=")
        }
    }

    /// A respawn continues the conversation the plugin learned (`session.created`); a
    /// first start gets its id from opencode (it has no option to choose one).
    fn conversation(
        &self,
        start: Start,
        known: Option<&str>,
        _workspace: &Path,
    ) -> Option<Conversation> {
        match (start, known) {
            (Start::Respawn, Some(id)) if id.starts_with("ses_") => {
                Some(Conversation::Resume(id.to_string()))
            }
            _ => None,
        }
    }

    fn state(&self, home: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
        (
            vec![
                home.join(".local/share/opencode"),
                home.join(".config/opencode"),
                home.join(".cache/opencode"),
                home.join(".local/state/opencode"),
            ],
            vec![],
        )
    }

    /// On a resume, the prompt goes to the conversation through opencode's own API, from
    /// orange's plugin (`resume.json`, read once).
    fn env(&self, agent_dir: &Path, resume: Option<(&str, &str)>) -> Result<Vec<(String, String)>> {
        let dir = write_config_dir(agent_dir)?;
        let file = dir.join(RESUME_FILE);
        match resume {
            Some((session, prompt)) => write_bytes_atomic(
                &file,
                serde_json::json!({"session": session, "prompt": prompt})
                    .to_string()
                    .as_bytes(),
            )?,
            None => {
                let _ = std::fs::remove_file(&file);
            }
        }
        Ok(vec![(
            "OPENCODE_CONFIG_DIR".into(),
            dir.display().to_string(),
        )])
    }

    /// opencode 1.18.33 opens the conversation of `-s` and leaves `--prompt` unsent
    /// (`opencode run --session` takes it).
    fn prompt_on_resume(&self, headless: bool) -> bool {
        headless
    }

    fn hook_says(&self, event: &str, payload: &Value) -> Option<HookSays> {
        state_of_event(event, payload)
    }

    /// orange's plugin forwards a user message's own text parts (`chat.message`).
    fn typed_prompt(&self, event: &str, payload: &Value) -> Option<String> {
        (event == "opencode.chat.message")
            .then(|| payload.get("prompt").and_then(Value::as_str))
            .flatten()
            .map(str::to_string)
    }

    fn announces_start(&self, event: &str, _payload: &Value) -> bool {
        event == "opencode.session.created"
    }

    fn hook_conversation(&self, event: &str, payload: &Value) -> Option<String> {
        (event == "opencode.session.created")
            .then(|| payload.pointer("/info/id").and_then(Value::as_str))
            .flatten()
            .filter(|id| id.starts_with("ses_"))
            .map(str::to_string)
    }

    /// Its plugin; silent as pi's extension is (see [`AgentKind::channel`]).
    fn channel(&self) -> Option<(&'static str, std::time::Duration)> {
        Some((
            "opencode's channel (orange's plugin)",
            std::time::Duration::from_secs(10),
        ))
    }

    fn screen(&self) -> Option<&'static ScreenTexts> {
        Some(&SCREEN)
    }
}

/// The one-shot command line of a headless task (`opencode run`): `--auto`, the task's
/// conversation by id on a respawn, then `--` and the prompt.
pub fn headless_options(o: &Options) -> Vec<String> {
    let mut v: Vec<String> = vec![];
    if o.prompt {
        v.push("run".into());
    }
    v.push("--auto".into());
    if let Some(Conversation::Resume(id)) = o.conversation {
        v.extend(["--session".into(), id.clone()]);
    }
    v
}

/// Write orange's config directory for opencode under `agent_dir`: the plugin, and the
/// files that make opencode's dependency install a no-op (see the module doc).
pub fn write_config_dir(agent_dir: &Path) -> Result<PathBuf> {
    let dir = agent_dir.join(CONFIG_DIR);
    ensure_dir(&dir.join("plugins"))?;
    ensure_dir(&dir.join("node_modules"))?;
    let dep = serde_json::json!({"@opencode-ai/plugin": "*"});
    let files = [
        ("plugins/orange.js", PLUGIN.to_string()),
        (
            "package.json",
            serde_json::json!({"private": true, "dependencies": dep}).to_string(),
        ),
        (
            "package-lock.json",
            serde_json::json!({"lockfileVersion": 3, "packages": {"": {"dependencies": dep}}})
                .to_string(),
        ),
    ];
    for (name, text) in files {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            write_bytes_atomic(&path, text.as_bytes())?;
        }
    }
    Ok(dir)
}

/// What an event of orange's plugin (`opencode.<event>`, the event's properties as JSON)
/// says of the agent. `None`: nothing about its turn.
pub fn state_of_event(event: &str, p: &Value) -> Option<HookSays> {
    let text = |ptr: &str| p.pointer(ptr).and_then(Value::as_str).map(str::to_string);
    match event.strip_prefix("opencode.")? {
        // A new conversation, or the interface open on one: nothing asked yet.
        "session.created" => Some(HookSays::state(State::Waiting)),
        "session.status" => match p.pointer("/status/type").and_then(Value::as_str)? {
            "busy" => Some(HookSays::state(State::Working)),
            "idle" => Some(HookSays::state(State::Waiting)),
            "retry" => Some(HookSays {
                detail: Some(format!(
                    "{} (attempt {})",
                    text("/status/message").unwrap_or_else(|| "an API error".into()),
                    p.pointer("/status/attempt")
                        .and_then(Value::as_u64)
                        .unwrap_or(1)
                )),
                ..HookSays::state(State::Retrying)
            }),
            _ => None,
        },
        "session.idle" => Some(HookSays::state(State::Waiting)),
        "session.error" => {
            let err = p.get("error")?;
            let name = text("/error/name").unwrap_or_default();
            // Esc in the interface: the person stopped the turn, no error.
            if name == "MessageAbortedError" {
                return Some(HookSays::state(State::Waiting));
            }
            let message = text("/error/data/message")
                .or_else(|| text("/error/message"))
                .unwrap_or_else(|| name.clone());
            let status = err
                .pointer("/data/statusCode")
                .and_then(Value::as_u64)
                .and_then(|s| u16::try_from(s).ok());
            // No provider of the person's own: opencode 1.18 falls back to its own
            // service (OpenCode Zen); failing there, or an auth error, is a login to do.
            let own_service =
                text("/error/data/metadata/url").is_some_and(|u| u.contains("opencode.ai/zen"));
            if name == "ProviderAuthError" || own_service {
                return Some(HookSays {
                    blocker: Some(Blocker::Login),
                    detail: Some(format!(
                        "{message} (opencode has no model provider of yours and fell back to its own service)"
                    )),
                    ..HookSays::state(State::Blocked)
                });
            }
            let kind = classify_api_error(status, &format!("{message} {name}"));
            Some(HookSays {
                error: Some(kind),
                detail: Some(message),
                ..HookSays::state(State::Error)
            })
        }
        "permission.asked" => {
            let what = text("/permission").unwrap_or_else(|| "a tool".into());
            let patterns: Vec<&str> = p
                .get("patterns")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let detail = if patterns.is_empty() {
                format!("asks to use {what}")
            } else {
                format!("asks to use {what}: {}", patterns.join(", "))
            };
            Some(HookSays {
                blocker: Some(Blocker::Approval),
                detail: Some(detail),
                ..HookSays::state(State::Blocked)
            })
        }
        // Answered: the turn goes on (a rejection ends it; session.idle follows).
        "permission.replied" | "question.replied" | "question.rejected" => {
            Some(HookSays::state(State::Working))
        }
        "question.asked" => {
            let asked = p
                .get("questions")
                .and_then(Value::as_array)
                .map(|qs| {
                    qs.iter()
                        .filter_map(|q| q.get("question").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "a question".into());
            Some(HookSays {
                detail: Some(asked),
                ..HookSays::state(State::Waiting)
            })
        }
        // A message sent to the agent (typed, or orange's own prompt): its turn begins.
        "chat.message" => Some(HookSays::state(State::Working)),
        "tool.execute.before" | "tool.execute.after" => Some(HookSays {
            progress: true,
            ..HookSays::state(State::Working)
        }),
        _ => None,
    }
}

/// Distinctive text (lowercase) of opencode 1.18's screens.
const SCREEN_BLOCKERS: &[(Blocker, &[&str])] = &[];

static SCREEN: ScreenTexts = ScreenTexts {
    blocked: SCREEN_BLOCKERS,
    marked: &[],
    dialog_marks: &[],
    retrying: &["[retrying in"],
    error: &[],
    working: &[],
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execution::harness::state::ErrorKind;
    use serde_json::json;

    #[test]
    fn plugin_events_say_what_opencode_means() {
        let s = |e: &str, p: Value| state_of_event(e, &p);
        let busy = s(
            "opencode.session.status",
            json!({"sessionID": "ses_1", "status": {"type": "busy"}}),
        )
        .unwrap();
        assert_eq!(busy.state, State::Working);
        let idle = s(
            "opencode.session.status",
            json!({"status": {"type": "idle"}}),
        );
        assert_eq!(idle.unwrap().state, State::Waiting);
        let retry = s(
            "opencode.session.status",
            json!({"status": {"type": "retry", "attempt": 2, "message": "Overloaded", "next": 1}}),
        )
        .unwrap();
        assert_eq!(retry.state, State::Retrying);
        assert_eq!(retry.detail.as_deref(), Some("Overloaded (attempt 2)"));
        let ask = s(
            "opencode.permission.asked",
            json!({"permission": "bash", "patterns": ["rm -rf x"]}),
        )
        .unwrap();
        assert_eq!(
            (ask.state, ask.blocker),
            (State::Blocked, Some(Blocker::Approval))
        );
        assert_eq!(ask.detail.as_deref(), Some("asks to use bash: rm -rf x"));
        let q = s(
            "opencode.question.asked",
            json!({"questions": [{"question": "Which color?", "header": "Color"}]}),
        )
        .unwrap();
        assert_eq!(
            (q.state, q.detail.as_deref()),
            (State::Waiting, Some("Which color?"))
        );
        let err = s(
            "opencode.session.error",
            json!({"error": {"name": "APIError", "data": {"message": "Unauthorized", "statusCode": 401}}}),
        )
        .unwrap();
        assert_eq!(
            (err.state, err.error),
            (State::Error, Some(ErrorKind::Unauthorized))
        );
        let login = s(
            "opencode.session.error",
            json!({"error": {"name": "APIError", "data": {"message": "Cannot connect to API: Unable to connect.",
                "isRetryable": true, "metadata": {"url": "https://opencode.ai/zen/v1/chat/completions"}}}}),
        )
        .unwrap();
        assert_eq!(
            (login.state, login.blocker),
            (State::Blocked, Some(Blocker::Login))
        );
        let stop = s(
            "opencode.session.error",
            json!({"error": {"name": "MessageAbortedError", "data": {"message": "aborted"}}}),
        )
        .unwrap();
        assert_eq!(stop.state, State::Waiting);
        assert!(
            s("opencode.tool.execute.after", json!({"tool": "write"}))
                .unwrap()
                .progress
        );
        assert!(s("opencode.message.updated", json!({})).is_none());
        assert!(s("Stop", json!({})).is_none());
        assert_eq!(
            Opencode.hook_conversation(
                "opencode.session.created",
                &json!({"info": {"id": "ses_abc"}})
            ),
            Some("ses_abc".into())
        );
        assert_eq!(
            Opencode.hook_conversation("opencode.session.idle", &json!({"sessionID": "ses_abc"})),
            None
        );
    }

    #[test]
    fn the_config_dir_has_the_plugin_and_needs_no_install() {
        let d = tempfile::tempdir().unwrap();
        let dir = write_config_dir(d.path()).unwrap();
        assert_eq!(dir, d.path().join("opencode"));
        let plugin = std::fs::read_to_string(dir.join("plugins/orange.js")).unwrap();
        assert!(plugin.contains("\"hook\", \"agent\""));
        assert!(dir.join("node_modules").is_dir());
        let lock: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("package-lock.json")).unwrap())
                .unwrap();
        assert!(lock
            .pointer("/packages//dependencies/@opencode-ai~1plugin")
            .is_some());
        // Again: the same files, nothing fails.
        write_config_dir(d.path()).unwrap();
        // A resume leaves the prompt for the plugin; a first start leaves none.
        let env = Opencode.env(d.path(), Some(("ses_1", "-- go on"))).unwrap();
        assert_eq!(
            env,
            [("OPENCODE_CONFIG_DIR".to_string(), dir.display().to_string())]
        );
        let r: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(RESUME_FILE)).unwrap()).unwrap();
        assert_eq!(
            r,
            serde_json::json!({"session": "ses_1", "prompt": "-- go on"})
        );
        Opencode.env(d.path(), None).unwrap();
        assert!(!dir.join(RESUME_FILE).exists());
    }
}
