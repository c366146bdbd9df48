//! `$ORANGE_HOME/config.toml`: user harnesses and defaults (policies come with the monitor).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::adapters::store::Home;
use crate::error::{OrangeError, Result};
use crate::execution::harness::claude;

/// The harnesses orange knows without a `command` (a config entry may tune them).
pub const BUILTIN: &[&str] = &["claude", "pi", "codex", "opencode"];
/// The built-in harnesses with a one-shot (headless) mode: `pi -p`, `codex exec`, `opencode run`.
pub const HEADLESS: &[&str] = &["pi", "codex", "opencode"];

#[derive(Debug, Default, Clone, Deserialize)]
pub struct Config {
    /// Harness used when `--harness` is not given.
    #[serde(default)]
    pub default_harness: Option<String>,
    #[serde(default)]
    pub harness: BTreeMap<String, HarnessConfig>,
    /// Monitor policies for every agent (seed 003).
    #[serde(default)]
    pub policy: Policy,
    /// Per-project settings, `[project.<name>]`: used where `orange project update`
    /// left a field empty.
    #[serde(default)]
    pub project: BTreeMap<String, ProjectConfig>,
    /// Per-task settings, keyed by task id: `[task.<id>.policy]`.
    #[serde(default)]
    pub task: BTreeMap<String, TaskConfig>,
    /// The sandbox agents run in: `"none"` (default) or `"bwrap"`.
    #[serde(default)]
    pub sandbox: Option<String>,
    #[serde(flatten)]
    pub sandbox_paths: SandboxPaths,
    /// `[fleet]`: how many agents run at once over every project.
    #[serde(default)]
    pub fleet: crate::execution::fleet::FleetConfig,
    /// `[notify]`: ntfy, webhook and Slack channels, and answers from the phone.
    #[serde(default)]
    pub notify: crate::execution::fleet::NotifyConfig,
    /// Pull requests: `[pr] merge = "squash"`.
    #[serde(default)]
    pub pr: PrConfig,
    /// `[review]`: what happens when a task becomes ready for review.
    #[serde(default)]
    pub review: ReviewConfig,
}

/// `[pr]`: how `task merge` merges a task's pull request.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct PrConfig {
    /// `gh pr merge`'s method: merge (default), squash or rebase.
    #[serde(default)]
    pub merge: Option<String>,
}

/// `[review]` in config.toml.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewConfig {
    /// `on_complete = { agent = "claude", send = false }`: a reviewer agent started by the
    /// monitor each time a task becomes ready for review.
    #[serde(default)]
    pub on_complete: Option<OnComplete>,
    /// `"none"`: reviewers run without a sandbox (their worktree checked afterwards);
    /// unset or `"bwrap"`: in a read-only bwrap sandbox when one can run here.
    #[serde(default)]
    pub sandbox: Option<String>,
}

/// The reviewer `[review] on_complete` starts.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnComplete {
    /// Its harness.
    pub agent: String,
    /// Its round is sent to the task's agent at once.
    #[serde(default)]
    pub send: bool,
    /// What it should look at in particular.
    #[serde(default)]
    pub prompt: Option<String>,
}

/// More paths a sandboxed agent may write or read (`~/` is the home directory), at the
/// top level, per project or per harness; all that apply are added together.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct SandboxPaths {
    #[serde(default)]
    pub sandbox_writable: Vec<String>,
    #[serde(default)]
    pub sandbox_readable: Vec<String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
pub struct ProjectConfig {
    #[serde(default)]
    pub copy: Vec<String>,
    #[serde(default)]
    pub symlink: Vec<String>,
    #[serde(default)]
    pub setup_cmd: Option<String>,
    #[serde(default)]
    pub port_base: Option<u16>,
    #[serde(default)]
    pub sandbox: Option<String>,
    /// `group judge`'s check command and its timeout (see `Project::check_cmd`).
    #[serde(default)]
    pub check_cmd: Option<String>,
    #[serde(default)]
    pub check_timeout: Option<String>,
    #[serde(flatten)]
    pub sandbox_paths: SandboxPaths,
    /// Resource limits of this project's agents (over the harness's).
    #[serde(flatten)]
    pub limits: crate::execution::resources::LimitConfig,
}

#[derive(Debug, Default, Clone, Deserialize)]
pub struct TaskConfig {
    #[serde(default)]
    pub policy: Policy,
}

/// What the monitor does when an agent idles, exits or errs. Every field is optional:
/// a task's policy falls back to its harness's, then to the global one, then to the
/// defaults (nudge once after 60 s idle; escalate on exit without an outcome; escalate on
/// error).
#[derive(Debug, Default, Clone, Deserialize, PartialEq)]
pub struct Policy {
    /// How long an agent must be waiting before on_idle fires (e.g. "60s").
    #[serde(default)]
    pub idle_grace: Option<String>,
    #[serde(default)]
    pub on_idle: Option<Action>,
    /// Idle periods nudged without progress (no tool call since) before the monitor
    /// escalates instead of nudging again (default 2).
    #[serde(default)]
    pub max_nudges: Option<u32>,
    #[serde(default)]
    pub on_exit: Option<Action>,
    /// One action for every error kind, or a table per kind (unauthorized, out_of_credits,
    /// rate_limited, no_network, other, and `default` as the catch-all).
    #[serde(default)]
    pub on_error: Option<ErrorPolicy>,
    /// At a usage limit's reset: `{ action = "resume", message = "continue" }` (the
    /// default), `"wait"` (the person resumes it) or `"escalate"`.
    #[serde(default)]
    pub on_limit: Option<Action>,
    /// How long to wait on a usage limit whose message names no reset time (default "1h").
    #[serde(default)]
    pub limit_wait: Option<String>,
}

/// `"escalate"`, or `{ action = "nudge", message = "…" }`, or
/// `{ action = "recover", message = "…", mode = "prompt" | "append" }`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Action {
    Name(String),
    Full {
        action: String,
        #[serde(default)]
        message: Option<String>,
        #[serde(default)]
        mode: Option<String>,
    },
}

impl Action {
    pub fn name(&self) -> &str {
        match self {
            Action::Name(n) => n,
            Action::Full { action, .. } => action,
        }
    }
    pub fn message(&self) -> Option<&str> {
        match self {
            Action::Name(_) => None,
            Action::Full { message, .. } => message.as_deref(),
        }
    }
    pub fn mode(&self) -> Option<&str> {
        match self {
            Action::Name(_) => None,
            Action::Full { mode, .. } => mode.as_deref(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum ErrorPolicy {
    All(Action),
    PerKind(BTreeMap<String, Action>),
}

impl ErrorPolicy {
    pub fn for_kind(&self, kind: &str) -> Option<&Action> {
        match self {
            ErrorPolicy::All(a) => Some(a),
            ErrorPolicy::PerKind(m) => m.get(kind).or_else(|| m.get("default")),
        }
    }
}

impl Policy {
    /// Field-wise: `self` where set, else `other`.
    pub fn or(&self, other: &Policy) -> Policy {
        Policy {
            idle_grace: self.idle_grace.clone().or(other.idle_grace.clone()),
            on_idle: self.on_idle.clone().or(other.on_idle.clone()),
            max_nudges: self.max_nudges.or(other.max_nudges),
            on_exit: self.on_exit.clone().or(other.on_exit.clone()),
            on_error: self.on_error.clone().or(other.on_error.clone()),
            on_limit: self.on_limit.clone().or(other.on_limit.clone()),
            limit_wait: self.limit_wait.clone().or(other.limit_wait.clone()),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct HarnessConfig {
    /// Shell command line; `{prompt}` is replaced by the shell-quoted prompt
    /// (appended when absent). Absent for a built-in harness given only a policy.
    #[serde(default)]
    pub command: Option<String>,
    /// Command used by `orange task respawn` (default: `command`).
    #[serde(default)]
    pub respawn_command: Option<String>,
    /// Keys sent before a nudge's text, in tmux's key names (e.g. `["C-u"]`); none by
    /// default. `Escape` is refused for claude: there it means "No, exit".
    #[serde(default)]
    pub nudge_keys: Option<Vec<String>>,
    /// claude only: its permission mode (`bypassPermissions` by default, as
    /// `--dangerously-skip-permissions`; or `acceptEdits`, `auto`, `manual`, `dontAsk`,
    /// `plan`). Kept by respawn and restore.
    #[serde(default)]
    pub permission_mode: Option<String>,
    /// claude only: how to answer its "Resume from summary / Resume full session" dialog
    /// (`summary`, `full`; default `ask`: the person answers, the task shows
    /// `blocked: resume choice`).
    #[serde(default)]
    pub resume: Option<String>,
    #[serde(default)]
    pub policy: Policy,
    /// The sandbox this harness's agents run in (over the global `sandbox`).
    #[serde(default)]
    pub sandbox: Option<String>,
    #[serde(flatten)]
    pub sandbox_paths: SandboxPaths,
    /// Resource limits of this harness's agents (`memory`, `cpu`, `pids`): under a
    /// project's, under `task create --memory/--cpu/--pids`.
    #[serde(flatten)]
    pub limits: crate::execution::resources::LimitConfig,
    /// How to read the agent's screen (`[harness.NAME.screen]`): its states without a
    /// code change.
    #[serde(default)]
    pub screen: Option<ScreenPatterns>,
    /// What an idle nudge types when its policy names no message (default: orange's).
    #[serde(default)]
    pub nudge_message: Option<String>,
    /// The key that submits a nudge (tmux key name; default `Enter`).
    #[serde(default)]
    pub nudge_submit: Option<String>,
    /// A built-in's mode: `interactive` (default) or `headless` (one-shot: `codex exec`,
    /// `pi -p`, `opencode run`); `task create --headless` chooses it per task.
    #[serde(default)]
    pub mode: Option<crate::execution::harness::kind::Mode>,
    /// Run the agent under orange's pty layer (`orange-pty`), which answers its OSC 7501
    /// probe and keeps its status reports: a state source beside its hooks (default off).
    #[serde(default)]
    pub status_reports: Option<bool>,
}

/// Patterns (regular expressions, case-insensitive, matched against each of the last 30
/// lines of the screen) that tell an agent's state. A `blocked` match wins; otherwise the
/// lowest matching line decides.
#[derive(Debug, Default, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ScreenPatterns {
    /// A turn in progress (a spinner, "esc to interrupt").
    #[serde(default)]
    pub working: Vec<String>,
    /// Its turn ended; it waits for input (its prompt).
    #[serde(default)]
    pub waiting: Vec<String>,
    /// A question or an approval only the person may answer (never nudged).
    #[serde(default)]
    pub blocked: Vec<String>,
    /// An error it stopped on (the kind is read from the line: 401, 429, credits…).
    #[serde(default)]
    pub error: Vec<String>,
    /// An error it is retrying by itself.
    #[serde(default)]
    pub retrying: Vec<String>,
    /// The account's usage limit: the task is `limited` until the reset time the line
    /// names (a group named `reset`, else the first group, read as `3:00 PM`, `15:00`,
    /// `in 2 hours`), or for `limit_wait` when it names none.
    #[serde(default)]
    pub limit: Vec<String>,
}

impl Config {
    /// Read `config.toml`; a missing file is the default configuration.
    pub fn load(home: &Home) -> Result<Config> {
        let path = home.config_file();
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(e) => return Err(OrangeError::io(format!("reading {}", path.display()), e)),
        };
        Self::parse(&text).map_err(|detail| OrangeError::StateCorrupt { path, detail })
    }

    pub fn parse(text: &str) -> Result<Config, String> {
        let cfg: Config = toml::from_str(text).map_err(|e| e.to_string())?;
        crate::execution::fleet::validate(&cfg.fleet, &cfg.notify)?;
        for (name, h) in &cfg.harness {
            if h.command.as_ref().is_some_and(|c| c.trim().is_empty()) {
                return Err(format!("harness.{name}.command is empty"));
            }
            if h.command.is_none() && !BUILTIN.contains(&name.as_str()) {
                return Err(format!("harness.{name} needs a command"));
            }
            if let Some(mode) = &h.permission_mode {
                if name != "claude" {
                    return Err(format!(
                        "harness.{name}.permission_mode: only the built-in claude has one"
                    ));
                }
                if !claude::PERMISSION_MODES.contains(&mode.as_str()) {
                    return Err(format!(
                        "harness.claude.permission_mode {mode:?}: one of {}",
                        claude::PERMISSION_MODES.join(", ")
                    ));
                }
            }
            if let Some(r) = &h.resume {
                if name != "claude" {
                    return Err(format!(
                        "harness.{name}.resume: only the built-in claude has one"
                    ));
                }
                if !claude::RESUME_CHOICES.contains(&r.as_str()) {
                    return Err(format!(
                        "harness.claude.resume {r:?}: one of {}",
                        claude::RESUME_CHOICES.join(", ")
                    ));
                }
            }
            if h.mode == Some(crate::execution::harness::kind::Mode::Headless)
                && !HEADLESS.contains(&name.as_str())
            {
                return Err(format!(
                    "harness.{name}.mode = \"headless\": only {} have a one-shot mode",
                    HEADLESS.join(", ")
                ));
            }
            if let Some(sp) = &h.screen {
                for (what, list) in [
                    ("working", &sp.working),
                    ("waiting", &sp.waiting),
                    ("blocked", &sp.blocked),
                    ("error", &sp.error),
                    ("retrying", &sp.retrying),
                    ("limit", &sp.limit),
                ] {
                    for (i, p) in list.iter().enumerate() {
                        if p.is_empty() {
                            return Err(format!(
                                "harness.{name}.screen.{what}[{i}] is empty (it would match every line)"
                            ));
                        }
                        regex::RegexBuilder::new(p)
                            .size_limit(1 << 20)
                            .build()
                            .map_err(|e| format!("harness.{name}.screen.{what}[{i}] {p:?}: {e}"))?;
                    }
                }
            }
            if h.nudge_submit.as_ref().is_some_and(|k| k.trim().is_empty()) {
                return Err(format!("harness.{name}.nudge_submit is empty"));
            }
            let escape = h
                .nudge_keys
                .iter()
                .flatten()
                .chain(h.nudge_submit.iter())
                .any(|k| matches!(k.to_ascii_lowercase().as_str(), "escape" | "esc" | "c-["));
            if escape && name == "claude" {
                return Err(format!(
                    "harness.{name}.nudge_keys: Escape is never sent to Claude Code (on its dialogs it means \"No, exit\"; on an approval prompt it rejects the call)"
                ));
            }
        }
        let sandboxes = std::iter::once(&cfg.sandbox)
            .chain(cfg.harness.values().map(|h| &h.sandbox))
            .chain(cfg.project.values().map(|p| &p.sandbox));
        for s in sandboxes.flatten() {
            if !matches!(s.as_str(), "none" | "bwrap") {
                return Err(format!("sandbox {s:?}: \"bwrap\" or \"none\""));
            }
        }
        for (what, l) in cfg
            .harness
            .iter()
            .map(|(n, h)| (format!("[harness.{n}]"), &h.limits))
            .chain(
                cfg.project
                    .iter()
                    .map(|(n, p)| (format!("[project.{n}]"), &p.limits)),
            )
        {
            l.parse(&what).map_err(|e| e.to_string())?;
        }
        for p in std::iter::once(&cfg.policy)
            .chain(cfg.harness.values().map(|h| &h.policy))
            .chain(cfg.task.values().map(|t| &t.policy))
        {
            if let Some(g) = &p.idle_grace {
                humantime::parse_duration(g).map_err(|e| format!("idle_grace {g:?}: {e}"))?;
            }
        }
        Ok(cfg)
    }

    /// The resource limits of a new task of `harness` in `project`: each of `flags`
    /// (`--memory/--cpu/--pids`), else `[project.NAME]`'s, else `[harness.NAME]`'s.
    pub fn limits_for(
        &self,
        flags: &crate::execution::resources::LimitConfig,
        project: &str,
        harness: &str,
    ) -> Result<crate::execution::resources::Limits> {
        crate::execution::resources::choose(
            flags,
            (project, self.project.get(project).map(|p| &p.limits)),
            (harness, self.harness.get(harness).map(|h| &h.limits)),
        )
    }

    /// The policy for a task: task, then harness, then global settings.
    pub fn policy_for(&self, task_id: &str, harness: &str) -> Policy {
        let task = self
            .task
            .get(task_id)
            .map(|t| t.policy.clone())
            .unwrap_or_default();
        let harness = self
            .harness
            .get(harness)
            .map(|h| h.policy.clone())
            .unwrap_or_default();
        task.or(&harness).or(&self.policy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_user_harnesses() {
        let c = Config::parse(
            "default_harness = \"mine\"\n[harness.mine]\ncommand = \"mine --yes {prompt}\"\n",
        )
        .unwrap();
        assert_eq!(c.default_harness.as_deref(), Some("mine"));
        assert_eq!(
            c.harness["mine"].command.as_deref(),
            Some("mine --yes {prompt}")
        );
        assert!(Config::parse("[harness.x]\ncommand = \"  \"\n").is_err());
        assert!(Config::parse("[harness.x\n").is_err());
        assert!(Config::parse("").unwrap().harness.is_empty());
        assert!(Config::parse("[harness.nocmd]\n").is_err());
    }

    #[test]
    fn policies_layer_task_over_harness_over_global() {
        let c = Config::parse(
            r#"
[policy]
idle_grace = "30s"
on_exit = "escalate"
on_error = { unauthorized = "escalate", default = { action = "recover", message = "retry" } }
[harness.claude.policy]
on_idle = { action = "nudge", message = "go on" }
[task.abc123.policy]
on_exit = { action = "recover", message = "try again", mode = "append" }
"#,
        )
        .unwrap();
        let p = c.policy_for("abc123", "claude");
        assert_eq!(p.idle_grace.as_deref(), Some("30s"));
        assert_eq!(p.on_idle.as_ref().unwrap().message(), Some("go on"));
        assert_eq!(p.on_exit.as_ref().unwrap().name(), "recover");
        assert_eq!(p.on_exit.as_ref().unwrap().mode(), Some("append"));
        let e = p.on_error.unwrap();
        assert_eq!(e.for_kind("unauthorized").unwrap().name(), "escalate");
        assert_eq!(e.for_kind("rate_limited").unwrap().message(), Some("retry"));
        let other = c.policy_for("zzz", "pi");
        assert_eq!(other.on_exit.unwrap().name(), "escalate");
        assert!(other.on_idle.is_none());
        assert!(Config::parse("[policy]\nidle_grace = \"soon\"\n").is_err());
    }
}
