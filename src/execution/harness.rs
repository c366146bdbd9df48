//! Agent harnesses: the built-in ones (claude, pi, codex, opencode) and the user's own
//! from config.toml. A harness turns a prompt into an argv; the prompt is never given
//! to a shell unquoted.

use std::path::Path;

use serde::Serialize;

use crate::adapters::shell;
use crate::error::{OrangeError, Result};
use crate::execution::config::Config;

/// Fallback order when no harness is named: the first one installed.
pub const FALLBACK_ORDER: &[&str] = &["pi", "opencode", "claude", "codex"];
pub use crate::execution::config::BUILTIN;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Harness {
    pub name: String,
    /// For a user harness: the command template from config.toml.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub respawn_command: Option<String>,
    /// Keys sent before a nudge's text (e.g. `C-u` to clear a half-typed line). Empty for
    /// every built-in harness: Escape on Claude Code means "No, exit" on its dialogs and
    /// rejects a pending tool call; in codex it interrupts the turn.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nudge_keys: Vec<String>,
    /// claude's permission mode (`[harness.claude] permission_mode`); `None` or
    /// `bypassPermissions`: `--dangerously-skip-permissions`, as the original orange did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    /// What an idle nudge types when the policy names no message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nudge_message: Option<String>,
    /// The key that submits a nudge (`Enter` unless config.toml says another).
    pub nudge_submit: String,
}

/// Claude's conversation: a new one with this id, or the one to continue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conversation<'a> {
    New(&'a str),
    Resume(&'a str),
}

/// How an agent is being started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launch {
    First,
    Respawn,
}

impl Harness {
    /// The harness named `name`, else config's default, else the first installed one.
    pub fn resolve(name: Option<&str>, config: &Config) -> Result<Harness> {
        let name = match name.or(config.default_harness.as_deref()) {
            Some(n) => n.to_string(),
            None => FALLBACK_ORDER
                .iter()
                .find(|h| shell::on_path(h))
                .map(|h| h.to_string())
                .ok_or_else(|| {
                    OrangeError::BackendNotFound(format!(
                        "no agent harness given and none of {} is installed; pass --harness NAME or add [harness.NAME] to config.toml",
                        FALLBACK_ORDER.join(", ")
                    ))
                })?,
        };
        Self::named(&name, config)
    }

    pub fn named(name: &str, config: &Config) -> Result<Harness> {
        if let Some(h) = config.harness.get(name).filter(|h| h.command.is_some()) {
            return Ok(Harness {
                name: name.to_string(),
                command: h.command.clone(),
                respawn_command: h.respawn_command.clone(),
                nudge_keys: h.nudge_keys.clone().unwrap_or_default(),
                permission_mode: None,
                nudge_message: h.nudge_message.clone(),
                nudge_submit: h.nudge_submit.clone().unwrap_or_else(|| "Enter".into()),
            });
        }
        if BUILTIN.contains(&name) {
            return Ok(Harness {
                name: name.to_string(),
                command: None,
                respawn_command: None,
                nudge_keys: config
                    .harness
                    .get(name)
                    .and_then(|h| h.nudge_keys.clone())
                    .unwrap_or_default(),
                permission_mode: config
                    .harness
                    .get(name)
                    .and_then(|h| h.permission_mode.clone())
                    .filter(|_| name == "claude"),
                nudge_message: config
                    .harness
                    .get(name)
                    .and_then(|h| h.nudge_message.clone()),
                nudge_submit: config
                    .harness
                    .get(name)
                    .and_then(|h| h.nudge_submit.clone())
                    .unwrap_or_else(|| "Enter".into()),
            });
        }
        let mut known: Vec<&str> = BUILTIN.to_vec();
        known.extend(config.harness.keys().map(|s| s.as_str()));
        Err(OrangeError::invalid(format!(
            "unknown harness {name:?}; known: {}",
            known.join(", ")
        )))
    }

    pub fn is_builtin(&self) -> bool {
        self.command.is_none()
    }

    /// The program that must be on PATH (built-ins only; a user command is checked by
    /// the shell that runs it).
    pub fn program(&self) -> Option<&str> {
        self.is_builtin().then_some(self.name.as_str())
    }

    /// The program a user command starts, when its first word plainly names one (not an
    /// assignment, a shell keyword or syntax): checked on PATH before a task is recorded.
    pub fn command_program(&self) -> Option<&str> {
        let first = self.command.as_deref()?.split_whitespace().next()?;
        let plain = first
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./+".contains(c));
        let keyword = matches!(
            first,
            "if" | "for" | "while" | "case" | "exec" | "env" | "command" | "time" | "nohup"
        );
        (plain && !keyword).then_some(first)
    }

    /// The argv that starts the agent. `conversation` is Claude's conversation when known:
    /// a new one (`--session-id`) or one to continue (`--resume`).
    pub fn argv(
        &self,
        prompt: Option<&str>,
        launch: Launch,
        conversation: Option<Conversation<'_>>,
    ) -> Vec<String> {
        let prompt = prompt.filter(|p| !p.trim().is_empty());
        if let Some(template) = &self.command {
            let template = match launch {
                Launch::Respawn => self.respawn_command.as_ref().unwrap_or(template),
                Launch::First => template,
            };
            let quoted = prompt.map(shell::quote).unwrap_or_default();
            let line = if template.contains("{prompt}") {
                template.replace("{prompt}", &quoted)
            } else if prompt.is_some() {
                format!("{template} {quoted}")
            } else {
                template.clone()
            };
            return vec!["sh".into(), "-c".into(), line];
        }
        // Respawn keeps the first launch's permission mode (claude's `acceptEdits` would
        // stop the agent that ran freely at every Bash call; codex 0.169 has no
        // `--full-auto`) and continues the conversation where the program can. A prompt
        // is always an argument, never an option: `--` before it, or for pi (which has no
        // `--`) a leading space when it starts with `-`.
        let respawn = launch == Launch::Respawn;
        let mut v: Vec<String> = vec![self.name.clone()];
        let mut dashdash = prompt.is_some();
        match self.name.as_str() {
            "claude" => {
                match self.permission_mode.as_deref() {
                    None | Some("bypassPermissions") => {
                        v.push("--dangerously-skip-permissions".into())
                    }
                    Some(mode) => v.extend(["--permission-mode".into(), mode.into()]),
                }
                match conversation {
                    Some(Conversation::New(id)) => v.extend(["--session-id".into(), id.into()]),
                    Some(Conversation::Resume(id)) => v.extend(["--resume".into(), id.into()]),
                    None => {}
                }
            }
            "pi" => {
                if prompt.is_some() {
                    v.push("-p".into());
                }
                if respawn {
                    v.push("--continue".into());
                }
                dashdash = false;
            }
            "codex" => {
                match (respawn, prompt.is_some()) {
                    (false, true) => v.push("exec".into()),
                    (true, true) => v.extend(["exec".into(), "resume".into(), "--last".into()]),
                    (false, false) => {}
                    (true, false) => v.extend(["resume".into(), "--last".into()]),
                }
                v.push("--dangerously-bypass-approvals-and-sandbox".into());
            }
            "opencode" => {
                if prompt.is_some() {
                    v.push("run".into());
                }
                v.push("--auto".into());
                if respawn {
                    v.push("--continue".into());
                }
            }
            _ => {}
        }
        if let Some(p) = prompt {
            if dashdash {
                v.push("--".into());
                v.push(p.to_string());
            } else if p.starts_with('-') {
                v.push(format!(" {p}"));
            } else {
                v.push(p.to_string());
            }
        }
        v
    }

    /// The agent runs without permission prompts (`--dangerously-skip-permissions`).
    pub fn bypasses_permissions(&self) -> bool {
        self.is_builtin()
            && self.name == "claude"
            && matches!(
                self.permission_mode.as_deref(),
                None | Some("bypassPermissions")
            )
    }

    /// Harness-specific workspace setup, done at spawn time. For claude, seed 003's
    /// settings sync: `<project>/.claude/settings.json` → `<ws>/.claude/settings.local.json`.
    pub fn setup_workspace(&self, project_path: &Path, workspace: &Path) -> Result<()> {
        if self.name == "claude" {
            // Seed 003's settings sync, plus orange's hooks (UserPromptSubmit, Stop, …)
            // so the monitor hears about turns as they happen.
            let src = project_path.join(".claude/settings.json");
            let existing = std::fs::read(&src)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok());
            let bin = std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| "orange".into());
            let settings = claude_settings_with_hooks(existing, &bin, self.bypasses_permissions());
            let dir = workspace.join(".claude");
            std::fs::create_dir_all(&dir)
                .map_err(|e| OrangeError::io(format!("creating {}", dir.display()), e))?;
            let dst = dir.join("settings.local.json");
            std::fs::write(
                &dst,
                serde_json::to_vec_pretty(&settings).expect("settings serialize"),
            )
            .map_err(|e| OrangeError::io(format!("writing {}", dst.display()), e))?;
        }
        Ok(())
    }
}

/// The Claude Code hook events orange installs.
pub const CLAUDE_HOOK_EVENTS: &[&str] = &[
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
pub fn claude_settings_with_hooks(
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
    for event in CLAUDE_HOOK_EVENTS.iter().copied() {
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
    fn hooks_merge_into_existing_settings_once() {
        let s = claude_settings_with_hooks(
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
        let again = claude_settings_with_hooks(Some(s.clone()), "/o/orange", true);
        let plain = claude_settings_with_hooks(None, "/o/orange", false);
        assert!(plain.get("skipDangerousModePermissionPrompt").is_none());
        assert_eq!(again, s, "merging twice adds nothing");
        assert!(s["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .ends_with("hook agent UserPromptSubmit"));
    }

    use crate::execution::config::HarnessConfig;

    fn cfg() -> Config {
        let mut c = Config::default();
        c.harness.insert(
            "mine".into(),
            HarnessConfig {
                command: Some("mine --yes {prompt} --end".into()),
                respawn_command: None,
                nudge_keys: None,
                permission_mode: None,
                policy: Default::default(),
                sandbox: None,
                sandbox_paths: Default::default(),
                screen: None,
                nudge_message: None,
                nudge_submit: None,
            },
        );
        c.harness.insert(
            "tail".into(),
            HarnessConfig {
                command: Some("tail-agent".into()),
                respawn_command: Some("tail-agent --again".into()),
                nudge_keys: Some(vec!["C-u".into()]),
                permission_mode: None,
                policy: Default::default(),
                sandbox: None,
                sandbox_paths: Default::default(),
                screen: None,
                nudge_message: None,
                nudge_submit: None,
            },
        );
        c
    }

    #[test]
    fn builtin_commands_match_the_original() {
        let c = Config::default();
        let argv =
            |h: &str, p: Option<&str>, l: Launch| Harness::named(h, &c).unwrap().argv(p, l, None);
        let claude = Harness::named("claude", &c).unwrap();
        assert_eq!(
            claude.argv(Some("do it"), Launch::First, Some(Conversation::New("u-1"))),
            [
                "claude",
                "--dangerously-skip-permissions",
                "--session-id",
                "u-1",
                "--",
                "do it"
            ]
        );
        assert_eq!(
            claude.argv(
                Some("again"),
                Launch::Respawn,
                Some(Conversation::Resume("u-1"))
            ),
            [
                "claude",
                "--dangerously-skip-permissions",
                "--resume",
                "u-1",
                "--",
                "again"
            ]
        );
        assert_eq!(argv("pi", Some("p"), Launch::First), ["pi", "-p", "p"]);
        assert_eq!(
            argv("pi", Some("p"), Launch::Respawn),
            ["pi", "-p", "--continue", "p"]
        );
        assert_eq!(
            argv("pi", Some("-v x"), Launch::First),
            ["pi", "-p", " -v x"]
        );
        assert_eq!(argv("pi", None, Launch::First), ["pi"]);
        assert_eq!(
            argv("codex", Some("p"), Launch::First),
            [
                "codex",
                "exec",
                "--dangerously-bypass-approvals-and-sandbox",
                "--",
                "p"
            ]
        );
        assert_eq!(
            argv("codex", Some("p"), Launch::Respawn),
            [
                "codex",
                "exec",
                "resume",
                "--last",
                "--dangerously-bypass-approvals-and-sandbox",
                "--",
                "p"
            ]
        );
        assert_eq!(
            argv("codex", None, Launch::First),
            ["codex", "--dangerously-bypass-approvals-and-sandbox"]
        );
        assert_eq!(
            argv("opencode", Some("p"), Launch::First),
            ["opencode", "run", "--auto", "--", "p"]
        );
        assert_eq!(
            argv("opencode", Some("p"), Launch::Respawn),
            ["opencode", "run", "--auto", "--continue", "--", "p"]
        );
        assert_eq!(
            argv("opencode", None, Launch::First),
            ["opencode", "--auto"]
        );
        assert!(Harness::named("nope", &c).is_err());
        // A chosen permission mode is used on first launch and on respawn alike.
        let asks = Config::parse("[harness.claude]\npermission_mode = \"manual\"\n").unwrap();
        let claude = Harness::named("claude", &asks).unwrap();
        assert!(!claude.bypasses_permissions());
        assert_eq!(
            claude.argv(
                Some("x"),
                Launch::Respawn,
                Some(Conversation::Resume("u-1"))
            ),
            [
                "claude",
                "--permission-mode",
                "manual",
                "--resume",
                "u-1",
                "--",
                "x"
            ]
        );
        assert!(Config::parse("[harness.claude]\npermission_mode = \"yolo\"\n").is_err());
        assert!(Config::parse("[harness.pi]\npermission_mode = \"manual\"\n").is_err());
    }

    #[test]
    #[allow(clippy::disallowed_methods)] // the test runs a shell on purpose
    fn user_harness_prompts_are_quoted_once_and_survive_a_shell() {
        let c = cfg();
        let hostile = "it's \"quoted\" $(touch pwned) `id`; echo no\nsecond line;";
        let argv = Harness::named("mine", &c)
            .unwrap()
            .argv(Some(hostile), Launch::First, None);
        assert_eq!(argv[0], "sh");
        let script = argv[2]
            .replace("mine --yes", "printf %s")
            .replace(" --end", "");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), hostile);
        let t = Harness::named("tail", &c).unwrap();
        assert_eq!(
            t.argv(Some("x y"), Launch::First, None)[2],
            "tail-agent 'x y'"
        );
        assert_eq!(
            t.argv(Some("x"), Launch::Respawn, None)[2],
            "tail-agent --again x"
        );
        assert_eq!(t.argv(None, Launch::First, None)[2], "tail-agent");
        // No prompt: the command without it (`{prompt}` gone), on respawn too.
        assert_eq!(t.argv(None, Launch::Respawn, None)[2], "tail-agent --again");
        assert_eq!(
            Harness::named("mine", &c)
                .unwrap()
                .argv(None, Launch::First, None)[2],
            "mine --yes  --end"
        );
    }
}
