//! What orange knows of one kind of agent program, behind one trait ([`AgentKind`]): how
//! its command line is made, what it needs in a workspace, its conversation, the prompt it
//! wrote down itself, where it keeps its state (a sandbox makes that writable), what its
//! screen shows, and what `orange doctor` checks. Each built-in program has one file
//! beside this one (`claude/`, `pi.rs`, `codex.rs`, `opencode.rs`); a harness declared in
//! config.toml (`declared.rs`) knows none of it.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

use crate::adapters::bwrap::Mount;
use crate::error::Result;
use crate::execution::harness::state::{Blocker, HookSays};

/// How an agent is being started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    First,
    Respawn,
}

/// How a built-in agent runs: its interactive interface in the task's pane (the default:
/// a person can attach and answer, the agent waits at the end of its turn), or headless,
/// one-shot (`codex exec`, `pi -p`, `opencode run`: the agent exits at the end of its
/// turn, and an exit 0 then means it finished, not that it crashed). Chosen per task
/// (`task create --headless`) or per harness (`[harness.NAME] mode = "headless"`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Interactive,
    Headless,
}

/// The agent's conversation (claude's): a new one with this id, or the one to continue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conversation {
    New(String),
    Resume(String),
}

impl Conversation {
    pub fn id(&self) -> &str {
        match self {
            Conversation::New(id) | Conversation::Resume(id) => id,
        }
    }
}

/// A random (version 4) UUID: a conversation's id (claude's `--session-id`), a lane's
/// session id.
pub fn new_uuid() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut bytes = [0u8; 16];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
        );
        chunk.copy_from_slice(&h.finish().to_le_bytes());
    }
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// What the options of a built-in program's command line depend on.
#[derive(Debug, Clone, Copy)]
pub struct Options<'a> {
    /// A prompt follows the options.
    pub prompt: bool,
    pub start: Start,
    pub conversation: Option<&'a Conversation>,
    /// claude's permission mode (`None`: bypass, as the original orange did).
    pub permission_mode: Option<&'a str>,
    /// Headless (one-shot) rather than interactive (see [`Mode`]).
    pub headless: bool,
    /// A directory orange owns for this agent (a task's `agent/`, writable in a sandbox):
    /// where a program's per-task files go (pi's extension). `None`: none known.
    pub agent_dir: Option<&'a Path>,
}

/// How the prompt follows a program's options: after `--`, or (a program without `--`) as
/// it is, with a leading space when it starts with `-`, `@` or a space (never taken for an
/// option or a file to attach).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptAfter {
    DashDash,
    Bare,
    /// Glued to this option (`--prompt=…`): a program whose positional is no prompt
    /// (opencode's is a directory) and whose parser takes a separate value starting with
    /// `-` for an option.
    Glued(&'static str),
}

/// One line of `orange doctor`.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub ok: bool,
    pub detail: String,
    /// What to do when it is not ok.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// A check; its `fix` is kept only when it failed.
pub fn check(
    name: &'static str,
    ok: bool,
    detail: impl Into<String>,
    fix: Option<String>,
) -> Check {
    Check {
        name,
        ok,
        detail: detail.into(),
        fix: fix.filter(|_| !ok),
    }
}

/// What a program's own checks found (`orange doctor`).
#[derive(Debug, Default)]
pub struct Doctor {
    pub checks: Vec<Check>,
    /// `--trust` recorded the repository's trust in this file.
    pub trust_recorded: Option<PathBuf>,
}

/// What `orange doctor` asks of a program's own checks.
#[derive(Debug, Clone, Copy)]
pub struct DoctorAsk<'a> {
    /// The program runs without permission prompts.
    pub bypass: bool,
    /// The project's repository, when known.
    pub repo: Option<&'a Path>,
    /// Record the repository's trust first.
    pub trust: bool,
}

/// Distinctive text (lowercase) of a program's screens: `orchestration::screen` reads
/// every screen through rules made of these.
#[derive(Debug)]
pub struct ScreenTexts {
    /// Dialogs drawn over everything; the more specific first.
    pub blocked: &'static [(Blocker, &'static [&'static str])],
    /// These blockers count only with one of `dialog_marks` on screen too.
    pub marked: &'static [Blocker],
    pub dialog_marks: &'static [&'static str],
    /// An API error it retries by itself.
    pub retrying: &'static [&'static str],
    /// An error it gave up on (outranks a hook that last said "working": a program whose
    /// hooks tell no failed turn, as codex's).
    pub error: &'static [&'static str],
    /// A turn under way (keeps an older error line above it from counting).
    pub working: &'static [&'static str],
}

/// Everything orange knows of one kind of agent program. Every method but `name` has a
/// default that knows nothing (what a declared harness gets).
pub trait AgentKind: Sync {
    /// Its name (`[harness.NAME]`), and for a built-in the program on PATH.
    fn name(&self) -> &'static str;

    /// The npm package that installs it (`orange doctor`'s advice).
    fn package(&self) -> &'static str {
        "<package>"
    }

    /// The options of its command line, before the prompt.
    fn options(&self, _o: &Options) -> Vec<String> {
        vec![]
    }

    /// How the prompt follows its options, interactive or `headless`.
    fn prompt_after(&self, _headless: bool) -> PromptAfter {
        PromptAfter::DashDash
    }

    /// Set up a workspace before the agent starts there (`bypass`: it runs without
    /// permission prompts).
    fn setup_workspace(&self, _project: &Path, _workspace: &Path, _bypass: bool) -> Result<()> {
        Ok(())
    }

    /// The conversation to start with (a built-in program that takes one): `known`, a
    /// conversation an earlier start of this agent had.
    fn conversation(
        &self,
        _start: Start,
        _known: Option<&str>,
        _workspace: &Path,
    ) -> Option<Conversation> {
        None
    }

    /// The permission mode a first start records (kept by respawn and restore).
    fn permission_mode(&self, _configured: Option<&str>) -> Option<String> {
        None
    }

    /// The first prompt a person typed, as the program wrote it down itself: in its
    /// `conversation`'s transcript, or in a session of `workspace` written since `since`.
    fn first_prompt(
        &self,
        _conversation: Option<&str>,
        _workspace: &Path,
        _since: Option<SystemTime>,
    ) -> Option<String> {
        None
    }

    /// The text of the last answer it gave in its `conversation` (what a reviewer said at
    /// the end of its turn, when it wrote no findings file). `None`: not known.
    fn last_answer(&self, _conversation: Option<&str>, _workspace: &Path) -> Option<String> {
        None
    }

    /// Its log tells the tokens it used (`usage.json`).
    fn reports_tokens(&self) -> bool {
        false
    }

    /// The directories and files (under `home`) it keeps its own state in: writable in a
    /// sandbox (directories made when missing, files bound when they exist).
    fn state(&self, _home: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
        (vec![], vec![])
    }

    /// Mounts after the writable ones (`agent_dir`: the agent's part of its task's
    /// directory, made writable).
    fn sandbox_mounts(&self, _agent_dir: &Path, _home: &Path) -> Result<Vec<Mount>> {
        Ok(vec![])
    }

    /// What in its writable state would run commands outside the sandbox the next time
    /// the person starts the program: read-only inside.
    fn sandbox_read_only(&self, _home: &Path) -> Result<Vec<PathBuf>> {
        Ok(vec![])
    }

    /// More environment inside the sandbox.
    fn sandbox_env(&self) -> Vec<(String, String)> {
        vec![]
    }

    /// The environment it gets from orange (a config directory orange owns for the agent,
    /// under `agent_dir`, written here), beside every agent's own ([`crate::execution::launch::env`]).
    /// `resume`: the conversation it continues and the prompt, for a program that takes no
    /// prompt on its command line then ([`AgentKind::prompt_on_resume`]).
    fn env(
        &self,
        _agent_dir: &Path,
        _resume: Option<(&str, &str)>,
    ) -> Result<Vec<(String, String)>> {
        Ok(vec![])
    }

    /// Continuing `conversation` in `workspace`, it may first ask the person how (Claude
    /// Code's resume dialog), which it does only when started without a prompt: a respawn
    /// then starts it so, and its prompt waits in the task until it is idle.
    fn may_ask_before_resuming(&self, _workspace: &Path, _conversation: &str) -> bool {
        false
    }

    /// Its command line takes the prompt when it continues a conversation (opencode 1.18
    /// ignores `--prompt` with `-s`: its [`AgentKind::env`] delivers it).
    fn prompt_on_resume(&self, _headless: bool) -> bool {
        true
    }

    /// What one of its events (`orange hook agent EVENT`, the JSON on standard input) says
    /// of its turn; `None`: nothing. Claude Code's hook vocabulary unless the program has
    /// its own channel (codex's hooks take Claude Code's names, with two of their own).
    fn hook_says(&self, event: &str, payload: &serde_json::Value) -> Option<HookSays> {
        crate::execution::harness::claude::transcript::state_of_hook(event, payload)
    }

    /// The conversation its agent in `workspace` started since `since`, read from the
    /// files the program keeps (codex: its rollout's name): for an agent whose own event
    /// could not record it (in a sandbox). `None`: not known this way.
    fn session_from_files(&self, _workspace: &Path, _since: SystemTime) -> Option<String> {
        None
    }

    /// The options that install its event channel on a command line of the person's own
    /// (`[harness.codex] command = "codex …"`): put right after the program's name, so a
    /// codex that asks for approvals still tells its state. Empty: none (its channel, if
    /// any, lives in files `setup_workspace` writes).
    fn channel_options(&self) -> Vec<String> {
        vec![]
    }

    /// Its own event channel, which orange installs (its name for `task explain`), and how
    /// long it may say "working" without an event while the screen is quiet before orange
    /// calls it silent and reads the screen instead. `None`: no channel of its own.
    fn channel(&self) -> Option<(&'static str, std::time::Duration)> {
        None
    }

    /// The prompt a person typed into the agent, as one of its events tells it (Claude
    /// Code's and codex's UserPromptSubmit hook: `prompt`): an agent started without one
    /// takes it as its summary.
    fn typed_prompt(&self, event: &str, payload: &serde_json::Value) -> Option<String> {
        (event == "UserPromptSubmit")
            .then(|| payload.get("prompt").and_then(|p| p.as_str()))
            .flatten()
            .map(str::to_string)
    }

    /// Whether `event` is the agent announcing it has just started (Claude Code's and
    /// codex's SessionStart at a start-up or a resume — not after `/clear` or a
    /// compaction). Started with its prompt, that prompt's turn follows at once.
    fn announces_start(&self, event: &str, payload: &serde_json::Value) -> bool {
        event == "SessionStart"
            && matches!(
                payload.get("source").and_then(|s| s.as_str()),
                None | Some("startup") | Some("resume")
            )
    }

    /// The conversation an event announces (opencode's `session.created`): the task's
    /// conversation from then on (what a respawn continues).
    fn hook_conversation(&self, _event: &str, _payload: &serde_json::Value) -> Option<String> {
        None
    }

    /// Whether an error it stopped on (its words: a hook's, its transcript's or its
    /// screen's) is the account's usage limit rather than an error: the task is then
    /// `limited` until the reset those words name ([`super::limit::reset_in`]). A program
    /// whose limit is not known says no.
    fn limit(&self, _text: &str) -> bool {
        false
    }

    /// What its screens show.
    fn screen(&self) -> Option<&'static ScreenTexts> {
        None
    }

    /// Its own checks (after the program and its version).
    fn doctor(&self, _ask: &DoctorAsk) -> Result<Doctor> {
        Ok(Doctor::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_have_the_v4_shape() {
        let u = new_uuid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"));
        assert_ne!(new_uuid(), new_uuid());
    }
}
