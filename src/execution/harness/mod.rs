//! Agent harnesses: the built-in ones (claude, pi, codex, opencode) and the user's own
//! from config.toml. A harness turns a prompt into an argv; the prompt is never given
//! to a shell unquoted. What orange knows of each kind of program is in one file behind
//! one trait ([`kind::AgentKind`]): `claude/`, `pi.rs`, `codex.rs`, `opencode.rs`, and
//! `declared.rs` for a harness from config.toml. [`state`] is the vocabulary they share.

pub mod claude;
pub mod codex;
pub mod declared;
mod files;
pub mod kind;
pub mod limit;
pub mod opencode;
pub mod osc;
pub mod pi;
pub mod state;

use std::path::Path;

use serde::Serialize;

use crate::adapters::shell;
use crate::error::{OrangeError, Result};
use crate::execution::config::Config;

pub use kind::{new_uuid, AgentKind, Conversation, Mode, Start};

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
    /// Interactive (default) or headless (one-shot): config.toml's `mode`, else the
    /// task's (`task create --headless`, recorded in the task).
    pub mode: Mode,
    /// Started under orange's pty layer, which keeps its OSC 7501 status reports
    /// (`[harness.NAME] status_reports = true`; off by default).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub status_reports: bool,
}

/// What orange knows of the program a harness named `name` runs: a built-in's knowledge
/// by its name (a harness in config.toml that takes a built-in's name gets its workspace
/// setup, sandbox state and screens too), nothing for any other name.
pub fn kind_of(name: &str) -> &'static dyn AgentKind {
    match name {
        "claude" => &claude::Claude,
        "pi" => &pi::Pi,
        "codex" => &codex::Codex,
        "opencode" => &opencode::Opencode,
        _ => &declared::Declared,
    }
}

/// The conversation a start continues, if it continues one.
pub fn resumes(conversation: Option<&Conversation>) -> Option<&str> {
    match conversation {
        Some(Conversation::Resume(id)) => Some(id),
        _ => None,
    }
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
            for (key, template) in [
                ("command", &h.command),
                ("respawn_command", &h.respawn_command),
            ] {
                if let Err(e) = template.as_deref().map_or(Ok(()), declared::check) {
                    return Err(OrangeError::invalid(format!(
                        "config.toml: [harness.{name}] {key}: {e}"
                    )));
                }
            }
            return Ok(Harness {
                name: name.to_string(),
                command: h.command.clone(),
                respawn_command: h.respawn_command.clone(),
                nudge_keys: h.nudge_keys.clone().unwrap_or_default(),
                permission_mode: None,
                nudge_message: h.nudge_message.clone(),
                nudge_submit: h.nudge_submit.clone().unwrap_or_else(|| "Enter".into()),
                mode: Mode::Interactive,
                status_reports: h.status_reports.unwrap_or(false),
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
                mode: config
                    .harness
                    .get(name)
                    .and_then(|h| h.mode)
                    .unwrap_or_default(),
                status_reports: config
                    .harness
                    .get(name)
                    .and_then(|h| h.status_reports)
                    .unwrap_or(false),
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
        declared::command_program(self.command.as_deref()?)
    }

    /// What orange knows of the program it runs (see [`kind_of`]).
    pub fn kind(&self) -> &'static dyn AgentKind {
        kind_of(&self.name)
    }

    /// Its program (a built-in's, or the one a user command plainly names) is on PATH.
    pub fn preflight(&self) -> Result<()> {
        if let Some(program) = self.program().or_else(|| self.command_program()) {
            if !shell::on_path(program) {
                return Err(OrangeError::BackendNotFound(format!(
                    "harness {:?}: {program:?} is not installed (not on PATH); install it or pass --harness",
                    self.name
                )));
            }
        }
        Ok(())
    }

    /// The argv that starts the agent. `conversation` is its conversation when known (a
    /// built-in that takes one: a new one or one to continue).
    pub fn argv(
        &self,
        prompt: Option<&str>,
        start: Start,
        conversation: Option<&Conversation>,
        places: &declared::Places,
    ) -> Vec<String> {
        let prompt = prompt.filter(|p| !p.trim().is_empty());
        if let Some(template) = &self.command {
            let argv = declared::argv(
                template,
                self.respawn_command.as_deref(),
                prompt,
                start,
                places,
            );
            return declared::with_options(argv, &self.name, &self.kind().channel_options());
        }
        // Respawn keeps the first launch's permission mode (claude's `acceptEdits` would
        // stop the agent that ran freely at every Bash call) and continues the
        // conversation where the program can. A prompt is always an argument, never an
        // option: `--` before it, or for a program without `--` a leading space when it
        // starts with `-`, `@` (pi: a file to attach) or a space (pi's extension takes
        // exactly one leading space away again).
        let kind = self.kind();
        let headless = self.mode == Mode::Headless;
        let prompt =
            prompt.filter(|_| kind.prompt_on_resume(headless) || resumes(conversation).is_none());
        let mut v: Vec<String> = vec![self.name.clone()];
        v.extend(kind.options(&kind::Options {
            prompt: prompt.is_some(),
            start,
            conversation,
            permission_mode: self.permission_mode.as_deref(),
            headless,
            agent_dir: places.agent_dir.as_deref(),
        }));
        if let Some(p) = prompt {
            match kind.prompt_after(headless) {
                kind::PromptAfter::DashDash => v.extend(["--".to_string(), p.to_string()]),
                kind::PromptAfter::Bare if p.starts_with(['-', '@', ' ']) => {
                    v.push(format!(" {p}"))
                }
                kind::PromptAfter::Bare => v.push(p.to_string()),
                kind::PromptAfter::Glued(flag) => v.push(format!("{flag}{p}")),
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
                None | Some(claude::DEFAULT_PERMISSION_MODE)
            )
    }

    /// Harness-specific workspace setup, done at spawn time (claude: its settings and
    /// orange's hooks).
    pub fn setup_workspace(&self, project_path: &Path, workspace: &Path) -> Result<()> {
        self.kind()
            .setup_workspace(project_path, workspace, self.bypasses_permissions())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                resume: None,
                policy: Default::default(),
                sandbox: None,
                sandbox_paths: Default::default(),
                limits: Default::default(),
                screen: None,
                nudge_message: None,
                nudge_submit: None,
                mode: None,
                status_reports: None,
            },
        );
        c.harness.insert(
            "tail".into(),
            HarnessConfig {
                command: Some("tail-agent".into()),
                respawn_command: Some("tail-agent --again".into()),
                nudge_keys: Some(vec!["C-u".into()]),
                permission_mode: None,
                resume: None,
                policy: Default::default(),
                sandbox: None,
                sandbox_paths: Default::default(),
                limits: Default::default(),
                screen: None,
                nudge_message: None,
                nudge_submit: None,
                mode: None,
                status_reports: None,
            },
        );
        c
    }

    #[test]
    fn claude_s_command_matches_the_original() {
        let c = Config::default();
        let claude = Harness::named("claude", &c).unwrap();
        assert_eq!(
            claude.argv(
                Some("do it"),
                Start::First,
                Some(&Conversation::New("u-1".into())),
                &Default::default(),
            ),
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
                Start::Respawn,
                Some(&Conversation::Resume("u-1".into())),
                &Default::default(),
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
        // A chosen permission mode is used on first launch and on respawn alike.
        let asks = Config::parse("[harness.claude]\npermission_mode = \"manual\"\n").unwrap();
        let claude = Harness::named("claude", &asks).unwrap();
        assert!(!claude.bypasses_permissions());
        assert_eq!(
            claude.argv(
                Some("x"),
                Start::Respawn,
                Some(&Conversation::Resume("u-1".into())),
                &Default::default(),
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
        // A one-shot mode only where the program has one.
        let headless = Config::parse("[harness.codex]\nmode = \"headless\"\n").unwrap();
        assert_eq!(
            Harness::named("codex", &headless).unwrap().mode,
            Mode::Headless
        );
        assert_eq!(
            Harness::named("pi", &headless).unwrap().mode,
            Mode::Interactive
        );
        assert!(Config::parse("[harness.claude]\nmode = \"headless\"\n").is_err());
        assert!(Config::parse("[harness.codex]\nmode = \"oneshot\"\n").is_err());
        assert!(Config::parse("[harness.pi]\npermission_mode = \"manual\"\n").is_err());
    }

    #[test]
    fn pi_codex_and_opencode_commands_match_the_original() {
        let c0 = Config::default;
        let c = c0();
        let argv = |h: &str, p: Option<&str>, l: Start| {
            Harness::named(h, &c)
                .unwrap()
                .argv(p, l, None, &Default::default())
        };
        // pi: interactive, never `--continue` (its session file is its conversation, see
        // pi.rs); a prompt starting with `-`, `@` or a space gets one more space.
        assert_eq!(argv("pi", Some("p"), Start::First), ["pi", "p"]);
        assert_eq!(argv("pi", Some("p"), Start::Respawn), ["pi", "p"]);
        assert_eq!(argv("pi", Some("-v x"), Start::First), ["pi", " -v x"]);
        assert_eq!(argv("pi", Some("@f"), Start::First), ["pi", " @f"]);
        assert_eq!(argv("pi", Some(" a"), Start::First), ["pi", "  a"]);
        assert_eq!(argv("pi", None, Start::First), ["pi"]);
        // codex: interactive by default, headless on request; its hooks on every start
        // (see codex.rs), resumed by its session id (never `--last`).
        let codex = |p: Option<&str>, l: Start, c: Option<&Conversation>, headless: bool| {
            let mut h = Harness::named("codex", &c0()).unwrap();
            if headless {
                h.mode = Mode::Headless;
            }
            let v = h.argv(p, l, c, &Default::default());
            let hooks =
                codex::hook_options(&std::env::current_exe().unwrap().display().to_string());
            let at = v.iter().position(|a| *a == hooks[0]).expect("its hooks");
            assert_eq!(v[at..at + hooks.len()], hooks[..]);
            let mut rest = v[..at].to_vec();
            rest.extend_from_slice(&v[at + hooks.len()..]);
            rest
        };
        let resume = Conversation::Resume("019a-id".into());
        assert_eq!(
            codex(Some("p"), Start::First, None, false),
            [
                "codex",
                "--dangerously-bypass-approvals-and-sandbox",
                "--",
                "p"
            ]
        );
        assert_eq!(
            codex(Some("--version x"), Start::Respawn, Some(&resume), false),
            [
                "codex",
                "resume",
                "019a-id",
                "--dangerously-bypass-approvals-and-sandbox",
                "--",
                "--version x"
            ]
        );
        assert_eq!(
            codex(Some("p"), Start::First, None, true),
            [
                "codex",
                "exec",
                "--dangerously-bypass-approvals-and-sandbox",
                "--",
                "p"
            ]
        );
        assert_eq!(
            codex(Some("p"), Start::Respawn, Some(&resume), true),
            [
                "codex",
                "exec",
                "resume",
                "019a-id",
                "--dangerously-bypass-approvals-and-sandbox",
                "--",
                "p"
            ]
        );
        // No session id known: a new conversation, not "the last one" of the directory.
        assert_eq!(
            codex(None, Start::Respawn, None, false),
            ["codex", "--dangerously-bypass-approvals-and-sandbox"]
        );
        // opencode: its interface, the prompt glued to `--prompt=` (never an option, even
        // one that starts with `-`), its own conversation by id on a respawn (never `-c`).
        assert_eq!(
            argv("opencode", Some("p"), Start::First),
            ["opencode", "--auto", "--prompt=p"]
        );
        assert_eq!(
            argv("opencode", Some("--version x"), Start::First),
            ["opencode", "--auto", "--prompt=--version x"]
        );
        let oc = Harness::named("opencode", &c).unwrap();
        assert_eq!(
            oc.argv(
                Some("p"),
                Start::Respawn,
                Some(&Conversation::Resume("ses_1".into())),
                &Default::default()
            ),
            ["opencode", "--auto", "-s", "ses_1"]
        );
        // (opencode leaves `--prompt` unsent with `-s`: its plugin sends it; see opencode.rs.)
        assert_eq!(
            argv("opencode", Some("p"), Start::Respawn),
            ["opencode", "--auto", "--prompt=p"]
        );
        assert_eq!(argv("opencode", None, Start::First), ["opencode", "--auto"]);
        assert_eq!(
            opencode::headless_options(&kind::Options {
                prompt: true,
                start: Start::Respawn,
                conversation: Some(&Conversation::Resume("ses_1".into())),
                permission_mode: None,
                headless: true,
                agent_dir: None,
            }),
            ["run", "--auto", "--session", "ses_1"]
        );
        assert!(Harness::named("nope", &c).is_err());
    }

    #[test]
    #[allow(clippy::disallowed_methods)] // the test runs a shell on purpose
    fn user_harness_prompts_are_quoted_once_and_survive_a_shell() {
        let c = cfg();
        let hostile = "it's \"quoted\" $(touch pwned) `id`; echo no\nsecond line;";
        let argv = Harness::named("mine", &c).unwrap().argv(
            Some(hostile),
            Start::First,
            None,
            &Default::default(),
        );
        assert_eq!(argv[0], "/bin/sh");
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
            t.argv(Some("x y"), Start::First, None, &Default::default())[2],
            "tail-agent 'x y'"
        );
        assert_eq!(
            t.argv(Some("x"), Start::Respawn, None, &Default::default())[2],
            "tail-agent --again x"
        );
        assert_eq!(
            t.argv(None, Start::First, None, &Default::default())[2],
            "tail-agent"
        );
        // No prompt: the command without it (`{prompt}` gone), on respawn too.
        assert_eq!(
            t.argv(None, Start::Respawn, None, &Default::default())[2],
            "tail-agent --again"
        );
        assert_eq!(
            Harness::named("mine", &c)
                .unwrap()
                .argv(None, Start::First, None, &Default::default())[2],
            "mine --yes  --end"
        );
    }
}
