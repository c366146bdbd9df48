//! Everything orange knows of Claude Code (`claude`): its command line (its permission
//! mode, its conversation by id), the settings and hooks it gets in a workspace, where it
//! keeps its state ([`paths`]), how to read its transcript and its hooks ([`transcript`]),
//! its screens, what a sandbox must give it, and `orange doctor`'s checks ([`doctor`]).

pub mod doctor;
pub mod paths;
pub mod resume;
pub mod transcript;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::adapters::bwrap::Mount;
use crate::error::{OrangeError, Result};
use crate::execution::harness::kind::{
    AgentKind, Conversation, Doctor, DoctorAsk, Options, ScreenTexts, Start,
};
use crate::execution::harness::state::Blocker;

/// claude's `--permission-mode` choices (2.1).
pub const PERMISSION_MODES: &[&str] = &[
    "bypassPermissions",
    "acceptEdits",
    "auto",
    "manual",
    "dontAsk",
    "plan",
];

/// The permission mode orange starts claude in when config.toml names none: no prompts
/// (`--dangerously-skip-permissions`), as the original orange did.
pub const DEFAULT_PERMISSION_MODE: &str = "bypassPermissions";

pub struct Claude;

/// `[harness.claude] resume`: how its resume dialog is answered (`ask`: by the person).
pub const RESUME_CHOICES: &[&str] = &["ask", "summary", "full"];

/// The keys that answer Claude Code 2.1's resume dialog with `choice` (its options, in
/// order: "Resume from summary (instant, recommended)" focused, "Resume full session
/// as-is", "Don't ask again"): the keys before, and the key that confirms. `None`: the
/// person answers.
pub fn resume_keys(choice: &str) -> Option<(&'static [&'static str], &'static str)> {
    match choice {
        "summary" => Some((&[], "Enter")),
        "full" => Some((&["Down"], "Enter")),
        _ => None,
    }
}

impl AgentKind for Claude {
    fn name(&self) -> &'static str {
        "claude"
    }

    fn package(&self) -> &'static str {
        "@anthropic-ai/claude-code"
    }

    /// Its permission mode (bypass: `--dangerously-skip-permissions`), and its
    /// conversation: a new one (`--session-id`) or one to continue (`--resume`).
    fn options(&self, o: &Options) -> Vec<String> {
        let mut v = vec![];
        match o.permission_mode {
            None | Some(DEFAULT_PERMISSION_MODE) => v.push("--dangerously-skip-permissions".into()),
            Some(mode) => v.extend(["--permission-mode".into(), mode.into()]),
        }
        match o.conversation {
            Some(Conversation::New(id)) => v.extend(["--session-id".into(), id.clone()]),
            Some(Conversation::Resume(id)) => v.extend(["--resume".into(), id.clone()]),
            None => {}
        }
        v
    }

    /// Seed 003's settings sync, `<project>/.claude/settings.json` →
    /// `<ws>/.claude/settings.local.json`, plus orange's hooks (UserPromptSubmit, Stop, …)
    /// so the monitor hears about turns as they happen.
    fn setup_workspace(&self, project: &Path, workspace: &Path, bypass: bool) -> Result<()> {
        let src = project.join(".claude/settings.json");
        let existing = std::fs::read(&src)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        let bin = std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "orange".into());
        let settings = settings_with_hooks(existing, &bin, bypass);
        let dir = workspace.join(".claude");
        std::fs::create_dir_all(&dir)
            .map_err(|e| OrangeError::io(format!("creating {}", dir.display()), e))?;
        let dst = dir.join("settings.local.json");
        std::fs::write(
            &dst,
            serde_json::to_vec_pretty(&settings).expect("settings serialize"),
        )
        .map_err(|e| OrangeError::io(format!("writing {}", dst.display()), e))
    }

    /// A first start: a new conversation, with `known` as its id when the caller chose
    /// one. A respawn continues `known` when claude saved it (a claude killed early may
    /// not have written it, and `--resume` of an unknown id exits at once, "No
    /// conversation found"); else a new one.
    fn conversation(
        &self,
        start: Start,
        known: Option<&str>,
        workspace: &Path,
    ) -> Option<Conversation> {
        Some(match (start, known) {
            (Start::Respawn, Some(id))
                if transcript::has_conversation(&paths::log_path(workspace, id)) =>
            {
                Conversation::Resume(id.to_string())
            }
            (Start::First, Some(id)) => Conversation::New(id.to_string()),
            _ => Conversation::New(crate::execution::harness::kind::new_uuid()),
        })
    }

    /// A long, old conversation ([`resume::may_ask`]).
    fn may_ask_before_resuming(&self, workspace: &Path, conversation: &str) -> bool {
        resume::may_ask(
            &paths::log_path(workspace, conversation),
            &paths::user_file(),
            SystemTime::now(),
        )
    }

    fn permission_mode(&self, configured: Option<&str>) -> Option<String> {
        Some(configured.unwrap_or(DEFAULT_PERMISSION_MODE).to_string())
    }

    /// The first typed user line of its conversation's transcript.
    fn first_prompt(
        &self,
        conversation: Option<&str>,
        workspace: &Path,
        _since: Option<SystemTime>,
    ) -> Option<String> {
        transcript::first_prompt_in_log(&paths::log_path(workspace, conversation?))
    }

    /// The text of the last assistant line of its conversation's transcript.
    fn last_answer(&self, conversation: Option<&str>, workspace: &Path) -> Option<String> {
        transcript::last_answer_in_log(&paths::log_path(workspace, conversation?))
    }

    fn reports_tokens(&self) -> bool {
        true
    }

    /// Its config directory and its user file.
    fn state(&self, home: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
        (
            vec![paths::config_dir_in(home)],
            vec![paths::user_file_in(home)],
        )
    }

    /// A sandboxed claude's `sessions/<pid>.json`: its task's own directory.
    fn sandbox_mounts(&self, agent_dir: &Path, home: &Path) -> Result<Vec<Mount>> {
        let sessions = paths::sandbox_sessions(agent_dir);
        crate::adapters::store::ensure_dir(&sessions)?;
        let at = sessions.canonicalize().unwrap_or(sessions);
        Ok(vec![
            Mount::Writable(at.clone()),
            Mount::Rebind {
                from: at,
                to: paths::config_dir_in(home).join("sessions"),
            },
        ])
    }

    /// Its settings' hooks, its plugins, agents and commands would run outside the
    /// sandbox the next time the person starts claude: read-only inside. A missing
    /// `settings.json` is made (`{}`) so that it can be.
    fn sandbox_read_only(&self, home: &Path) -> Result<Vec<PathBuf>> {
        let dir = paths::config_dir_in(home);
        let settings = dir.join("settings.json");
        if !settings.exists() {
            std::fs::write(&settings, "{}\n")
                .map_err(|e| OrangeError::io(format!("writing {}", settings.display()), e))?;
        }
        Ok(["settings.json", "hooks", "agents", "commands", "plugins"]
            .iter()
            .map(|n| dir.join(n))
            .filter(|p| p.exists())
            .collect())
    }

    /// Claude Code refuses --dangerously-skip-permissions as root unless told it runs in
    /// a sandbox: it does now (and only here).
    fn sandbox_env(&self) -> Vec<(String, String)> {
        if crate::adapters::shell::is_root() {
            vec![("IS_SANDBOX".into(), "1".into())]
        } else {
            vec![]
        }
    }

    fn screen(&self) -> Option<&'static ScreenTexts> {
        Some(&SCREEN)
    }

    /// Claude Code 2.1.330 composes its own line on a 429 with the unified rate-limit
    /// headers (`anthropic-ratelimit-unified-status: rejected`, `-reset`,
    /// `-representative-claim`), for a subscriber or a gateway sign-in: `You've hit your
    /// 5-hour limit · resets 4:16am (UTC)` (session, weekly, Opus, usage, spend limits
    /// alike), or `You're out of usage credits · resets …`. Its StopFailure hook says
    /// `error: "rate_limit"` with that line as `last_assistant_message`. A plain 429 (an
    /// API key's per-minute limit) reads `API Error: Request rejected (429) · …`: an error.
    fn limit(&self, text: &str) -> bool {
        let t = text.to_lowercase().replace('\u{2019}', "'");
        (t.contains("you've hit your") && t.contains("limit"))
            || t.contains("you're out of usage credits")
    }

    fn doctor(&self, ask: &DoctorAsk) -> Result<Doctor> {
        doctor::checks(ask)
    }
}

/// Distinctive text (lowercase) of each blocking screen of Claude Code 2.1.
const SCREEN_BLOCKERS: &[(Blocker, &[&str])] = &[
    (
        Blocker::RootRefusal,
        &["cannot be used with root/sudo privileges"],
    ),
    (
        Blocker::BypassWarning,
        &["running in bypass permissions mode", "yes, i accept"],
    ),
    (
        Blocker::FolderTrust,
        &[
            "is this a project you created or one you trust",
            "yes, i trust this folder",
            "do you trust the files in this folder",
        ],
    ),
    (
        Blocker::ApiKey,
        &[
            "detected a custom api key",
            "do you want to use this api key",
        ],
    ),
    (
        Blocker::Login,
        &[
            "select login method",
            "not logged in · please run /login",
            "not logged in · run /login",
            "claude account with subscription",
            "anthropic console account",
        ],
    ),
    (
        Blocker::Onboarding,
        &[
            "choose the text style that looks best",
            "security notes:",
            "unable to connect to anthropic services",
            "failed to connect to api.anthropic.com",
            "let's get started",
        ],
    ),
    (
        Blocker::ResumeChoice,
        &[
            "resume from summary (instant, recommended)",
            "resume full session as-is",
            "resuming the full session uses a lot of your usage limits",
        ],
    ),
    (
        Blocker::Approval,
        &[
            "do you want to proceed?",
            "do you want to make this edit",
            "do you want to create",
            "do you want to allow",
            "do you want to run",
            "auto mode can't check actions",
        ],
    ),
];

/// An approval question counts only inside a prompt: with its choices (`1. Yes`) or its
/// key hints (`Esc to cancel`) below it. The same words in the agent's own text ("Do you
/// want to create a PR?") are no dialog.
const DIALOG_MARKS: &[&str] = &["1. yes", "esc to cancel", "enter to stay in auto mode"];

/// Claude Code 2.1's screens (tests/fixtures/claude/screens/).
static SCREEN: ScreenTexts = ScreenTexts {
    blocked: SCREEN_BLOCKERS,
    marked: &[Blocker::Approval],
    dialog_marks: DIALOG_MARKS,
    retrying: &["retrying"],
    error: &[],
    working: &[],
};

/// Claude Code 2.1 shows a turn in progress with "esc to interrupt" under its prompt (a
/// teammate's pane, which sends orange no hooks, is read so).
pub fn shows_a_turn(screen: &str) -> bool {
    screen.to_ascii_lowercase().contains("esc to interrupt")
}

/// The Claude Code hook events orange installs.
pub const HOOK_EVENTS: &[&str] = &[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "Notification",
    "PermissionRequest",
    "StopFailure",
];

/// The hooks orange adds to a workspace's `.claude/settings.local.json`, merged into
/// whatever the project's settings already hold. `bypass`: claude is launched with
/// `--dangerously-skip-permissions`, so its Bypass Permissions warning (default "No,
/// exit") is turned off (`skipDangerousModePermissionPrompt`) — only then.
pub fn settings_with_hooks(
    existing: Option<serde_json::Value>,
    orange_bin: &str,
    bypass: bool,
) -> serde_json::Value {
    let mut settings = match existing {
        Some(serde_json::Value::Object(o)) => serde_json::Value::Object(o),
        _ => serde_json::json!({}),
    };
    if bypass {
        settings["skipDangerousModePermissionPrompt"] = serde_json::json!(true);
    }
    let hooks = settings
        .as_object_mut()
        .unwrap()
        .entry("hooks")
        .or_insert_with(|| serde_json::json!({}));
    if !hooks.is_object() {
        *hooks = serde_json::json!({});
    }
    for event in HOOK_EVENTS.iter().copied() {
        let cmd = format!(
            "{} hook agent {event}",
            crate::adapters::shell::quote(orange_bin)
        );
        let entry = serde_json::json!({"hooks": [{"type": "command", "command": cmd}]});
        let list = hooks
            .as_object_mut()
            .unwrap()
            .entry(event)
            .or_insert_with(|| serde_json::json!([]));
        if let Some(arr) = list.as_array_mut() {
            if !arr.iter().any(|e| e.to_string().contains("hook agent")) {
                arr.push(entry);
            }
        }
    }
    settings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_choices_have_their_keys() {
        assert_eq!(resume_keys("summary"), Some((&[][..], "Enter")));
        assert_eq!(resume_keys("full"), Some((&["Down"][..], "Enter")));
        assert_eq!(resume_keys("ask"), None);
        assert!(shows_a_turn("✻ Working… (esc to interrupt)"));
        assert!(!shows_a_turn("? for shortcuts"));
    }

    #[test]
    fn hooks_merge_into_existing_settings_once() {
        let s = settings_with_hooks(
            Some(
                serde_json::json!({"model": "x", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "mine"}]}]}}),
            ),
            "/o/orange",
            true,
        );
        assert_eq!(s["model"], "x");
        assert_eq!(s["skipDangerousModePermissionPrompt"], true);
        assert_eq!(s["hooks"]["Stop"].as_array().unwrap().len(), 2);
        assert_eq!(s["hooks"]["Stop"][0]["hooks"][0]["command"], "mine");
        let again = settings_with_hooks(Some(s.clone()), "/o/orange", true);
        let plain = settings_with_hooks(None, "/o/orange", false);
        assert!(plain.get("skipDangerousModePermissionPrompt").is_none());
        assert_eq!(again, s, "merging twice adds nothing");
        assert!(s["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .ends_with("hook agent UserPromptSubmit"));
    }
}
