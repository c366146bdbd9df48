//! Everything orange knows of codex (`codex`, 0.169): its command line (its interface in
//! the task's pane with the prompt after `--`, or headless `codex exec`; `resume <session
//! id>` on respawn, never `--last`; never its own sandbox or approvals unless a command of
//! one's own asks for them), its own event
//! channel (hooks passed per launch with `-c hooks.<Event>=…` and
//! `--dangerously-bypass-hook-trust`, each calling `orange hook agent EVENT`; nothing is
//! written to the user's config), its screens (folder trust, login, reconnecting, an error
//! it gave up on), the trust `orange doctor --trust` records in its config.toml, where it
//! keeps its state (`$CODEX_HOME`), and the first prompt in its own rollout file.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::{OrangeError, Result};
use crate::execution::harness::files::{
    content_text, folder_key, home, json_lines, same_dir, written_since,
};
use crate::execution::harness::kind::{
    check, AgentKind, Conversation, Doctor, DoctorAsk, Options, ScreenTexts, Start,
};
use crate::execution::harness::state::{Blocker, HookSays, State};

pub struct Codex;

/// The codex 0.169 hook events orange passes at each launch. SessionStart names the
/// session (the task keeps it: respawn resumes it); Interrupt (Esc) ends a turn without
/// Stop; SessionEnd says nothing the pane does not tell.
pub const HOOK_EVENTS: &[&str] = &[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "Stop",
    "Interrupt",
    "SessionEnd",
];

/// What codex 0.169's screens show (lowercase).
static SCREEN: ScreenTexts = ScreenTexts {
    blocked: &[
        (
            Blocker::FolderTrust,
            &["trust this folder?", "1. trust and continue"],
        ),
        (
            Blocker::Login,
            &[
                "sign in with chatgpt",
                "sign in with device code",
                "welcome to codex, openai's command-line coding agent",
            ],
        ),
    ],
    marked: &[],
    dialog_marks: &[],
    // `• Reconnecting... 2/5 (3s • esc to interrupt)` while it retries a failed request.
    retrying: &["reconnecting..."],
    // `■ <the error>` once it gave up (no hook tells it). An interrupt draws `■ Conversation
    // interrupted` too, but its Interrupt hook says the turn ended first.
    error: &["■ "],
    // `• Working (4s • esc to interrupt)`: a turn under way.
    working: &["esc to interrupt"],
};

impl AgentKind for Codex {
    /// codex 0.169: `You’ve hit your usage limit. … Try again at 3:05 PM.` (or with a
    /// date, `Nov 28th, 2026 3:05 PM`), on its screen as the error it stopped on.
    fn limit(&self, text: &str) -> bool {
        let t = text.to_lowercase().replace('\u{2019}', "'");
        t.contains("you've hit your usage limit")
    }

    fn name(&self) -> &'static str {
        "codex"
    }

    fn package(&self) -> &'static str {
        "@openai/codex"
    }

    /// Interactive: `[resume <id>]`; headless with a prompt: `exec [resume <id>]`. codex
    /// 0.169 has no `--full-auto`: it runs without approvals and without its own sandbox
    /// (orange's is the sandbox), and with orange's hooks, trusted for this launch only.
    fn options(&self, o: &Options) -> Vec<String> {
        let mut v: Vec<String> = vec![];
        if o.headless && o.prompt {
            v.push("exec".into());
        }
        if let Some(Conversation::Resume(id)) = o.conversation {
            v.extend(["resume".into(), id.clone()]);
        }
        v.push("--dangerously-bypass-approvals-and-sandbox".into());
        v.extend(hook_options(&orange_bin()));
        v
    }

    /// Respawn continues the conversation its SessionStart hook (in a sandbox: its rollout's
    /// name) named (none known: a new
    /// one; never "the last one" of the directory, which can be another task's).
    fn conversation(
        &self,
        start: Start,
        known: Option<&str>,
        _workspace: &Path,
    ) -> Option<Conversation> {
        match start {
            Start::Respawn => known.map(|id| Conversation::Resume(id.to_string())),
            Start::First => None,
        }
    }

    /// The first user message of a rollout of the workspace written since the task was
    /// created.
    fn first_prompt(
        &self,
        _conversation: Option<&str>,
        workspace: &Path,
        since: Option<SystemTime>,
    ) -> Option<String> {
        first_prompt(&codex_home_in(home().as_deref())?, workspace, since?)
    }

    /// Its session id from its rollout's name (its SessionStart hook could not record it:
    /// in a sandbox).
    fn session_from_files(&self, workspace: &Path, since: SystemTime) -> Option<String> {
        session_in_rollouts(&codex_home_in(home().as_deref())?, workspace, since)
    }

    fn state(&self, home: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
        (codex_home_in(Some(home)).into_iter().collect(), vec![])
    }

    /// Its hooks; silent when they said "working" and nothing for 10 s while the screen
    /// stayed quiet past the idle grace (codex's own spinner and timer move while it works).
    fn channel(&self) -> Option<(&'static str, std::time::Duration)> {
        Some(("codex's hooks", std::time::Duration::from_secs(10)))
    }

    /// Its hooks ride along a codex command line of one's own too (`codex -a untrusted
    /// …`: its approvals are then `blocked: approval`, by its PermissionRequest hook).
    fn channel_options(&self) -> Vec<String> {
        hook_options(&orange_bin())
    }

    fn screen(&self) -> Option<&'static ScreenTexts> {
        Some(&SCREEN)
    }

    fn hook_says(&self, event: &str, payload: &serde_json::Value) -> Option<HookSays> {
        state_of_hook(event, payload)
    }

    /// The repository's trust (codex asks "Trust this folder?" until it is recorded; a
    /// trusted repository's worktrees are not asked), recorded first with `--trust`.
    fn doctor(&self, ask: &DoctorAsk) -> Result<Doctor> {
        let mut out = Doctor::default();
        let Some(config) = codex_home_in(home().as_deref()).map(|h| h.join("config.toml")) else {
            return Ok(out);
        };
        let Some(repo) = ask.repo else {
            return Ok(out);
        };
        if ask.trust && record_trust(&config, repo)? {
            out.trust_recorded = Some(config.clone());
        }
        let trusted = is_trusted(&std::fs::read_to_string(&config).unwrap_or_default(), repo);
        out.checks.push(check(
            "trust",
            trusted,
            if trusted {
                format!("{} is trusted ({})", repo.display(), config.display())
            } else {
                format!(
                    "{} is not trusted yet: codex will ask \"Trust this folder?\"",
                    repo.display()
                )
            },
            Some(format!(
                "`orange doctor --trust --harness codex` records it in {} ([projects.\"…\"] trust_level = \"trusted\"; a backup is kept)",
                config.display()
            )),
        ));
        Ok(out)
    }
}

/// The orange that codex's hooks call: this very binary.
fn orange_bin() -> String {
    std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "orange".into())
}

/// `-c hooks.<Event>=[{hooks=[{type="command",command="'<orange>' hook agent <Event>"}]}]`
/// for each of [`HOOK_EVENTS`], then `--dangerously-bypass-hook-trust`: codex runs hooks
/// only once trusted, and keeps that trust in the user's config; this flag runs them for
/// this launch without writing anything.
pub fn hook_options(orange: &str) -> Vec<String> {
    let mut v = vec!["--dangerously-bypass-hook-trust".to_string()];
    for event in HOOK_EVENTS {
        let command = format!(
            "{} hook agent {event}",
            crate::adapters::shell::quote(orange)
        );
        // A JSON string is a TOML basic string (the `-c` value is parsed as TOML).
        let command = serde_json::to_string(&command).expect("a string serializes");
        v.push("-c".into());
        v.push(format!(
            "hooks.{event}=[{{hooks=[{{type=\"command\",command={command}}}]}}]"
        ));
    }
    v
}

/// What a codex 0.169 hook says of its turn: Claude Code's events (codex's take their
/// names and payloads: `session_id`, `prompt`, `tool_name`, `last_assistant_message`),
/// and Interrupt (Esc ended the turn; no Stop follows): waiting. SessionEnd says nothing
/// (the pane tells the exit).
pub fn state_of_hook(event: &str, payload: &serde_json::Value) -> Option<HookSays> {
    match event {
        "Interrupt" => Some(HookSays::state(State::Waiting)),
        "SessionEnd" => None,
        _ => crate::execution::harness::claude::transcript::state_of_hook(event, payload),
    }
}

/// `[projects."<repo>"] trust_level = "trusted"` in codex's config.toml text.
fn is_trusted(text: &str, repo: &Path) -> bool {
    toml::from_str::<toml::Value>(text)
        .ok()
        .and_then(|v| {
            v.get("projects")?
                .get(folder_key(repo))?
                .get("trust_level")?
                .as_str()
                .map(|s| s == "trusted")
        })
        .unwrap_or(false)
}

/// Record `repo` as trusted in codex's config.toml (its worktrees then are too): a
/// `[projects."<repo>"]` table appended, nothing else touched, a backup kept
/// (`config.toml.orange-backup`). A file that does not parse, or that names the
/// repository with another trust level, is left as it is. Returns whether it changed.
pub fn record_trust(path: &Path, repo: &Path) -> Result<bool> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(OrangeError::io(format!("reading {}", path.display()), e)),
    };
    let parsed: toml::Value = toml::from_str(&text).map_err(|e| OrangeError::StateCorrupt {
        path: path.to_path_buf(),
        detail: format!("does not parse ({e}); orange leaves it as it is"),
    })?;
    if is_trusted(&text, repo) {
        return Ok(false);
    }
    let key = folder_key(repo);
    if parsed.get("projects").and_then(|p| p.get(&key)).is_some() {
        return Err(OrangeError::StateCorrupt {
            path: path.to_path_buf(),
            detail: format!(
                "it names {key} with another trust level; orange leaves it as it is (set trust_level = \"trusted\" there yourself)"
            ),
        });
    }
    if !text.is_empty() {
        let backup = path.with_file_name("config.toml.orange-backup");
        std::fs::copy(path, &backup)
            .map_err(|e| OrangeError::io(format!("backing up to {}", backup.display()), e))?;
    } else if let Some(dir) = path.parent() {
        crate::adapters::store::ensure_dir(dir)?;
    }
    let mut out = text.clone();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    let quoted = serde_json::to_string(&key).expect("a string serializes");
    out.push_str(&format!(
        "\n# orange doctor --trust\n[projects.{quoted}]\ntrust_level = \"trusted\"\n"
    ));
    crate::adapters::store::write_bytes_atomic(path, out.as_bytes())?;
    Ok(true)
}

/// Codex's own directory: `$CODEX_HOME` (absolute only), else `<home>/.codex`.
pub fn codex_home_in(home: Option<&Path>) -> Option<PathBuf> {
    std::env::var_os("CODEX_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| home.map(|h| h.join(".codex")))
}

/// The codex rollouts of `workspace` written since `since`
/// (`<codex home>/sessions/YYYY/MM/DD/rollout-*.jsonl`, the days from the day before
/// `since` to the day after now: its days are local time), oldest name first: those whose
/// first line, `session_meta`, names the directory.
fn rollouts_of(codex_home: &Path, workspace: &Path, since: SystemTime) -> Vec<PathBuf> {
    let from = chrono::DateTime::<chrono::Utc>::from(since).date_naive() - chrono::Days::new(1);
    let to = chrono::Utc::now().date_naive() + chrono::Days::new(1);
    let sessions = codex_home.join("sessions");
    from.iter_days()
        .take_while(|d| *d <= to)
        .flat_map(|d| written_since(&sessions.join(d.format("%Y/%m/%d").to_string()), since))
        .filter(|file| {
            json_lines(file).next().is_some_and(|meta| {
                meta.get("type").and_then(|t| t.as_str()) == Some("session_meta")
                    && meta
                        .pointer("/payload/cwd")
                        .and_then(|c| c.as_str())
                        .is_some_and(|c| same_dir(c, workspace))
            })
        })
        .collect()
}

/// The session id of the newest codex rollout of `workspace` written since `since`: the
/// uuid its name ends with (`rollout-<time>-<uuid>.jsonl`), which is its `session_meta`'s
/// id. For a codex whose SessionStart hook could not record it (in a sandbox, orange's
/// state is read-only).
pub fn session_in_rollouts(
    codex_home: &Path,
    workspace: &Path,
    since: SystemTime,
) -> Option<String> {
    let newest = rollouts_of(codex_home, workspace, since).pop()?;
    let stem = newest.file_stem()?.to_str()?;
    let id = stem.get(stem.len().checked_sub(36)?..)?;
    uuid_like(id).then(|| id.to_string())
}

/// `8-4-4-4-12` hexadecimal digits.
fn uuid_like(s: &str) -> bool {
    s.split('-').map(str::len).eq([8, 4, 4, 4, 12])
        && s.chars().all(|c| c == '-' || c.is_ascii_hexdigit())
}

/// The first user message of a codex rollout of `workspace` written since `since`; the
/// context codex itself sends as user messages (`<environment_context>…`) is no prompt.
pub fn first_prompt(codex_home: &Path, workspace: &Path, since: SystemTime) -> Option<String> {
    rollouts_of(codex_home, workspace, since)
        .into_iter()
        .find_map(|file| {
            json_lines(&file).skip(1).find_map(|v| {
                let p = v.get("payload")?;
                let text = match (
                    v.get("type").and_then(|t| t.as_str()),
                    p.get("type").and_then(|t| t.as_str()),
                ) {
                    (Some("response_item"), Some("message"))
                        if p.get("role").and_then(|r| r.as_str()) == Some("user") =>
                    {
                        content_text(p.get("content")?, &["input_text", "text"])
                    }
                    (Some("event_msg"), Some("user_message")) => {
                        p.get("message")?.as_str()?.to_string()
                    }
                    _ => return None,
                };
                let t = text.trim();
                let context = t.starts_with('<') && t.ends_with('>');
                (!t.is_empty() && !context).then_some(text)
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execution::harness::files::tests::write;
    use serde_json::json;

    /// Each hook is a `-c` value codex parses as TOML: a table of one command.
    #[test]
    fn hooks_are_toml_that_calls_orange_hook_agent() {
        let v = hook_options("/o d/orange");
        assert_eq!(v[0], "--dangerously-bypass-hook-trust");
        assert_eq!(v.len(), 1 + 2 * HOOK_EVENTS.len());
        let stop = v.iter().find(|a| a.starts_with("hooks.Stop=")).unwrap();
        let value: toml::Value =
            toml::from_str(&format!("x = {}", &stop["hooks.Stop=".len()..])).unwrap();
        assert_eq!(
            value["x"][0]["hooks"][0]["command"].as_str(),
            Some("'/o d/orange' hook agent Stop")
        );
    }

    #[test]
    fn interrupt_ends_a_turn_and_session_end_says_nothing() {
        let p = json!({"session_id": "s"});
        assert_eq!(
            state_of_hook("Interrupt", &p).unwrap().state,
            State::Waiting
        );
        assert!(state_of_hook("SessionEnd", &p).is_none());
        assert_eq!(
            state_of_hook("PreToolUse", &p).unwrap().state,
            State::Working
        );
        let ask = state_of_hook("PermissionRequest", &json!({"tool_name": "Bash"})).unwrap();
        assert_eq!(ask.blocker, Some(Blocker::Approval));
    }

    #[test]
    fn trust_is_one_table_appended_once_with_a_backup() {
        let d = tempfile::tempdir().unwrap();
        let repo = d.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        let cfg = d.path().join("codex/config.toml");
        assert!(record_trust(&cfg, &repo).unwrap());
        assert!(!d.path().join("codex/config.toml.orange-backup").exists());
        std::fs::write(&cfg, "model = \"m\"\n# mine\n").unwrap();
        assert!(record_trust(&cfg, &repo).unwrap());
        let text = std::fs::read_to_string(&cfg).unwrap();
        assert!(text.starts_with("model = \"m\"\n# mine\n"), "{text}");
        assert!(is_trusted(&text, &repo), "{text}");
        assert!(!record_trust(&cfg, &repo).unwrap(), "once");
        assert!(d.path().join("codex/config.toml.orange-backup").exists());
        std::fs::write(&cfg, "model = [").unwrap();
        assert!(record_trust(&cfg, &repo).is_err());
    }

    /// A sandboxed codex's session id: the uuid of the newest rollout of its workspace.
    #[test]
    fn the_session_id_is_the_uuid_of_the_newest_rollout_of_the_workspace() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let since = SystemTime::now() - std::time::Duration::from_secs(60);
        let day = d.path().join("sessions").join(
            chrono::Utc::now()
                .date_naive()
                .format("%Y/%m/%d")
                .to_string(),
        );
        let id = "019a0b1c-2d3e-7f40-8a5b-6c7d8e9f0a1b";
        let other = "019a0b1c-2d3e-7f40-8a5b-000000000000";
        let meta = |cwd: &Path| json!({"type":"session_meta","payload":{"cwd":cwd}});
        assert_eq!(session_in_rollouts(d.path(), &ws, since), None);
        write(
            &day.join(format!("rollout-2026-11-27T05-00-00-{other}.jsonl")),
            &[meta(&d.path().join("elsewhere"))],
        );
        write(
            &day.join(format!("rollout-2026-11-27T05-00-01-{id}.jsonl")),
            &[meta(&ws)],
        );
        assert_eq!(
            session_in_rollouts(d.path(), &ws, since).as_deref(),
            Some(id)
        );
        let later = SystemTime::now() + std::time::Duration::from_secs(60);
        assert_eq!(session_in_rollouts(d.path(), &ws, later), None, "since");
    }

    /// What codex 0.169 writes as the first prompt is submitted.
    #[test]
    fn codex_s_first_prompt_is_the_first_user_message_that_is_not_its_own_context() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let since = SystemTime::now() - std::time::Duration::from_secs(60);
        let day = chrono::Utc::now()
            .date_naive()
            .format("%Y/%m/%d")
            .to_string();
        let rollout = d.path().join("sessions").join(day).join("rollout-x.jsonl");
        let user = |text: &str| json!({"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":text}]}});
        write(
            &rollout,
            &[
                json!({"type":"session_meta","payload":{"id":"s","cwd":ws}}),
                json!({"type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]}}),
                user("<environment_context>\n  <cwd>/x</cwd>\n</environment_context>"),
                user("Fix the login form"),
                user("later"),
            ],
        );
        assert_eq!(
            first_prompt(d.path(), &ws, since).as_deref(),
            Some("Fix the login form")
        );
        assert_eq!(first_prompt(d.path(), &d.path().join("other"), since), None);
        // An older codex: the `user_message` event.
        write(
            &rollout,
            &[
                json!({"type":"session_meta","payload":{"id":"s","cwd":ws}}),
                json!({"type":"event_msg","payload":{"type":"user_message","message":"Old style"}}),
            ],
        );
        assert_eq!(
            first_prompt(d.path(), &ws, since).as_deref(),
            Some("Old style")
        );
    }
}
