//! Agent state (seed 003): what an agent is doing, read from the best signal available —
//! agent hooks, the agent's own log, pane liveness and exit status, screen activity — and
//! kept in `tasks/<project>/<id>/agent/agent.json` (system-owned). What each program's
//! signals mean is its harness's knowledge (`execution::harness`); this file keeps the
//! observation.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::adapters::store;
use crate::error::Result;
pub use crate::execution::harness::state::{
    classify_api_error, classify_error, question_in, Blocker, ErrorKind, HookSays, LogState,
    Signal, State,
};
pub use crate::execution::sandbox::agent_dir;

// The old paths of what moved to Claude's harness file (`execution::harness::claude`), for
// the callers that still use them.
pub use crate::execution::harness::claude::paths::{
    log_path as claude_log_path, log_path_in as claude_log_path_in,
    project_dir_name as claude_project_dir_name, session_status as claude_session_status,
    session_status_in as claude_session_status_in,
};
pub use crate::execution::harness::claude::transcript::{
    first_prompt_in_log, has_conversation as claude_has_conversation, line_time, state_of_hook,
    state_of_line, state_of_log, state_of_log_at,
};

/// `agent.json`: the last observation and what the monitor did about it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentInfo {
    pub state: Option<State>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub signal: Option<Signal>,
    /// When the state was observed (RFC 3339).
    #[serde(default)]
    pub at: String,
    /// When orange last rang the bell in the agent's pane (an escalation writes BEL to its
    /// terminal; Unix seconds, the real clock): that output is orange's, not the agent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rang_at: Option<u64>,
    /// The agent's own event channel said "working" and then nothing while its screen went
    /// quiet: what `task explain` and `orange doctor` say (orange reads the screen instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_silent: Option<String>,
    /// When the current state began (unchanged across observations of the same state).
    #[serde(default)]
    pub since: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    /// The last state an agent hook reported, and when (hooks outrank the log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_state: Option<State>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_event: Option<String>,
    /// What the last hook said beyond its state: a dialog, an error kind, a message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_blocker: Option<Blocker>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_error: Option<ErrorKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_detail: Option<String>,
    /// The newest status report (OSC 7501) of the live agent: its pty layer keeps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<Reported>,
    /// What holds a blocked agent (with `state: blocked`, and for a root refusal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocker: Option<Blocker>,
    /// The last lines of a dead agent's pane (scrollback included): why it ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub last_lines: Vec<String>,
    /// The last question the agent asked (its turn ended on one): never nudged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked: Option<String>,
    /// When the agent last did work (a tool call), and the nudges sent since then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_at: Option<String>,
    #[serde(default)]
    pub idle_nudges: u32,
    /// The idle period (its `since`) that was already nudged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nudged_for: Option<String>,
    #[serde(default)]
    pub nudges: u32,
    /// The death (`<session id>:<pane pid>`) already handled by the exit policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handled_death: Option<String>,
    /// The error (its `since`) already handled by the error policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handled_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalated: Option<Escalation>,
    /// Size of the Claude log at the last pass (the idle debounce: a log that grew is not idle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_len: Option<u64>,
    /// The usage limit it stopped on (state `limited`), and the monitor's resumes of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<LimitHold>,
    /// The kernel killed it at its memory limit (these bytes): its cgroup counted an OOM
    /// kill. `None`: it was not, or orange cannot tell (prlimit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub killed_at_limit: Option<u64>,
}

/// A status report (OSC 7501) as the monitor last read it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reported {
    /// The report in short: `working`, `blocked (permission)`.
    pub said: String,
    /// When it came (RFC 3339, the monitor's clock).
    pub at: String,
}

/// `killed: memory limit 4G`: the reason of an agent the kernel killed at its limit.
pub fn killed_reason(limit: u64) -> String {
    format!(
        "killed: memory limit {}",
        crate::execution::resources::human_bytes(limit)
    )
}

/// What to do about an agent that never started because joining its cgroup failed.
pub fn never_started_advice(task: &str) -> String {
    format!(
        "see `orange doctor`'s resources line, then `orange task respawn {task}` (with other \
         limits: --memory, --cpu, --pids)"
    )
}

/// A usage limit an agent stopped on: when it resets, and what the monitor did at the reset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitHold {
    /// When the limit resets (RFC 3339): read from the agent's words, or — when they name
    /// no time — the moment `limit_wait` after it stopped.
    pub until: String,
    /// The reset time was in the agent's words (else `limit_wait` chose it).
    pub read: bool,
    /// When the monitor acts: `until` plus this task's random stagger (up to 60 s), so
    /// that a fleet limited at once does not resume at once.
    pub resume_at: String,
    /// Resumes typed in (at most two: a second when the first started no turn).
    #[serde(default)]
    pub resumed: u32,
    /// When the last resume was typed in: a turn must start within 60 s of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Escalation {
    pub reason: String,
    pub at: String,
}

impl AgentInfo {
    /// What is known now: the monitor's last observation, or the last agent hook when it
    /// came at or after that observation (hooks arrive between monitor passes). The one
    /// rule every reader (status line, `task show`, sidebar, picker) applies.
    pub fn current(&self) -> AgentInfo {
        let mut v = self.clone();
        let Some(h) = self.hook_state else {
            return v;
        };
        let hook_is_newer = match (self.hook_at.as_deref(), self.state) {
            (_, None) => true,
            (Some(at), Some(_)) => at_or_after(at, &self.at),
            (None, Some(_)) => false,
        };
        if !hook_is_newer || self.state == Some(State::Dead) {
            return v;
        }
        // The agent moved on since the escalation (a hook after it): it is over.
        if v.escalated
            .as_ref()
            .is_some_and(|e| self.hook_at.as_deref().is_some_and(|h| after(h, &e.at)))
        {
            v.escalated = None;
        }
        v.state = Some(h);
        v.signal = Some(Signal::Hook);
        // It spoke after the pass that found it silent.
        v.channel_silent = None;
        v.blocker = None;
        v.error_kind = None;
        v.asked = None;
        v.detail = None;
        match h {
            State::Blocked => {
                v.blocker = self.hook_blocker;
                v.detail = self.hook_detail.clone();
            }
            State::Error => {
                v.error_kind = self.hook_error;
                v.detail = self.hook_detail.clone();
            }
            State::Waiting => {
                v.asked = self.hook_detail.clone();
                v.detail = v.asked.as_ref().map(|q| format!("asked: {q}"));
            }
            // A channel that tells its retry (pi, opencode) says which attempt, whether
            // the monitor's pass or the hook came last.
            State::Retrying => v.detail = self.hook_detail.clone(),
            _ => {}
        }
        v
    }

    /// The same record but, perhaps, the time it was observed (`at`): what a pass that saw
    /// nothing new leaves (compared field by field, no copy made).
    pub fn same_but_at(&self, other: &AgentInfo) -> bool {
        let AgentInfo {
            state,
            error_kind,
            detail,
            signal,
            at: _,
            channel_silent,
            rang_at,
            since,
            exit_status,
            hook_state,
            hook_at,
            hook_event,
            hook_blocker,
            hook_error,
            hook_detail,
            report,
            blocker,
            last_lines,
            asked,
            progress_at,
            idle_nudges,
            nudged_for,
            nudges,
            handled_death,
            handled_error,
            escalated,
            log_len,
            limit,
            killed_at_limit,
        } = self;
        *state == other.state
            && *error_kind == other.error_kind
            && *detail == other.detail
            && *signal == other.signal
            && *since == other.since
            && *channel_silent == other.channel_silent
            && *rang_at == other.rang_at
            && *exit_status == other.exit_status
            && *hook_state == other.hook_state
            && *hook_at == other.hook_at
            && *hook_event == other.hook_event
            && *hook_blocker == other.hook_blocker
            && *hook_error == other.hook_error
            && *hook_detail == other.hook_detail
            && *report == other.report
            && *blocker == other.blocker
            && *last_lines == other.last_lines
            && *asked == other.asked
            && *progress_at == other.progress_at
            && *idle_nudges == other.idle_nudges
            && *nudged_for == other.nudged_for
            && *nudges == other.nudges
            && *handled_death == other.handled_death
            && *handled_error == other.handled_error
            && *limit == other.limit
            && *escalated == other.escalated
            && *log_len == other.log_len
            && *killed_at_limit == other.killed_at_limit
    }
}

/// How RFC 3339 times `a` and `b` compare: an unparsable `b` is earlier than any `a`, an
/// unparsable `a` later than nothing.
fn cmp_times(a: &str, b: &str) -> Option<std::cmp::Ordering> {
    match (
        chrono::DateTime::parse_from_rfc3339(a),
        chrono::DateTime::parse_from_rfc3339(b),
    ) {
        (Ok(a), Ok(b)) => Some(a.cmp(&b)),
        (Ok(_), Err(_)) => Some(std::cmp::Ordering::Greater),
        _ => None,
    }
}

/// `a` is at or after `b` (RFC 3339).
pub fn at_or_after(a: &str, b: &str) -> bool {
    cmp_times(a, b).is_some_and(|o| o.is_ge())
}

/// `a` is strictly after `b` (RFC 3339).
pub fn after(a: &str, b: &str) -> bool {
    cmp_times(a, b).is_some_and(|o| o.is_gt())
}

pub fn info_path(task_dir: &Path) -> PathBuf {
    agent_dir(task_dir).join("agent.json")
}

pub fn load(task_dir: &Path) -> AgentInfo {
    // agent.json is advisory: a missing or unreadable one is "nothing known yet" (and one
    // that is not a regular file — an agent may write this directory — too). A task from
    // before the agent directory keeps its agent.json beside task.json.
    let read = |p: &Path| {
        store::read_regular(p, 1 << 20)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
    };
    read(&info_path(task_dir))
        .or_else(|| read(&task_dir.join("agent.json")))
        .unwrap_or_default()
}

pub fn save(task_dir: &Path, info: &AgentInfo) -> Result<()> {
    store::write_json_atomic(&info_path(task_dir), info)
}

/// The lock agent hooks and the monitor take to change `agent.json`.
pub fn lock(task_dir: &Path) -> Result<store::LockGuard> {
    store::LockGuard::acquire_within(
        &agent_dir(task_dir).join(".agent.lock"),
        std::time::Duration::from_secs(5),
    )
}

/// Save the monitor's observation without losing what agent hooks wrote since it read
/// `agent.json` (a pass can take seconds: a nudge pauses): the hook fields, and the
/// progress a hook reported, are taken from the file as it is now. Such a hook is newer
/// than the pass's verdict, which did not weigh it, whatever the clocks say: a pass that
/// looked just after the hook wrote, but before its poke, judged from its kept copy of
/// the record (seen: a screen's "Do you want to proceed?" over the PermissionRequest hook
/// that named the tool, 10 ms later). The observation then counts from the hook's time,
/// so every reader ([`AgentInfo::current`]) tells the hook until the next pass weighs it.
/// The record as written.
pub fn save_observation(task_dir: &Path, info: &AgentInfo, read: &AgentInfo) -> Result<AgentInfo> {
    let _lock = lock(task_dir)?;
    let now = load(task_dir);
    let mut merged = info.clone();
    if now.hook_at != read.hook_at {
        if let Some(h) = now.hook_at.as_deref().filter(|h| after(&merged.at, h)) {
            merged.at = h.to_string();
        }
        merged.hook_state = now.hook_state;
        merged.hook_at = now.hook_at;
        merged.hook_event = now.hook_event;
        merged.hook_blocker = now.hook_blocker;
        merged.hook_error = now.hook_error;
        merged.hook_detail = now.hook_detail;
    }
    if now.progress_at != read.progress_at {
        merged.progress_at = now.progress_at;
        merged.idle_nudges = 0;
    }
    // A resume another pass typed meanwhile (a `monitor --once` beside the running one):
    // kept, unless this pass changed the limit itself.
    if now.limit != read.limit && info.limit == read.limit {
        merged.limit = now.limit;
    }
    save(task_dir, &merged)?;
    Ok(merged)
}

/// Read the tail of a (possibly large) log file: its last 64 KiB (from a line start), and
/// where that text starts in the file (bytes).
pub fn read_log_tail(path: &Path) -> Option<(String, u64)> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = store::open_regular(path).ok()?;
    let len = f.metadata().ok()?.len();
    let mut start = len.saturating_sub(64 * 1024);
    f.seek(SeekFrom::Start(start)).ok()?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).ok()?;
    if start > 0 {
        // Drop the partial first line.
        let cut = buf
            .iter()
            .position(|b| *b == b'\n')
            .map_or(buf.len(), |i| i + 1);
        buf.drain(..cut);
        start += cut as u64;
    }
    // A line being written (no newline yet) is not read: it would be read again, whole, later.
    let whole = buf.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    buf.truncate(whole);
    Some((String::from_utf8_lossy(&buf).into_owned(), start))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A retry a channel told (pi's, opencode's `attempt N`) keeps its detail whether the
    /// monitor's last observation or the hook came last (seen once in CI: the hook came
    /// 0.1 s after the pass, and the detail was dropped).
    #[test]
    fn a_retry_told_by_a_hook_after_the_pass_keeps_its_attempt() {
        let info = AgentInfo {
            state: Some(State::Retrying),
            at: "2026-11-27T02:15:45.174898Z".into(),
            detail: Some("Rate limit (attempt 1)".into()),
            hook_state: Some(State::Retrying),
            hook_at: Some("2026-11-27T02:15:45.294389Z".into()),
            hook_detail: Some("Rate limit (attempt 2)".into()),
            ..AgentInfo::default()
        };
        let now = info.current();
        assert_eq!(now.state, Some(State::Retrying));
        assert_eq!(now.detail.as_deref(), Some("Rate limit (attempt 2)"));
    }

    /// A hook the pass did not read (it judged from a copy kept from before the hook's
    /// poke) but that wrote before the pass's stamp is still what readers see after the
    /// pass saves: the pass did not weigh it (seen in real_claude: the screen's
    /// "Do you want to proceed?" over the PermissionRequest hook that named the tool).
    #[test]
    fn a_hook_the_pass_did_not_read_outranks_its_verdict_whatever_the_clocks() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(agent_dir(dir.path())).unwrap();
        let read = AgentInfo {
            state: Some(State::Working),
            signal: Some(Signal::Hook),
            at: "2026-11-29T04:00:00.000000Z".into(),
            hook_state: Some(State::Working),
            hook_at: Some("2026-11-29T04:00:00.000000Z".into()),
            hook_event: Some("PreToolUse".into()),
            ..AgentInfo::default()
        };
        // The hook wrote at .010, before the pass's stamp (.020), after the pass's read.
        let mut on_disk = read.clone();
        on_disk.hook_state = Some(State::Blocked);
        on_disk.hook_at = Some("2026-11-29T04:00:00.010000Z".into());
        on_disk.hook_event = Some("PermissionRequest".into());
        on_disk.hook_blocker = Some(Blocker::Approval);
        on_disk.hook_detail = Some("asks to use Bash: touch typed.txt".into());
        save(dir.path(), &on_disk).unwrap();
        let mut judged = read.clone();
        judged.state = Some(State::Blocked);
        judged.signal = Some(Signal::Screen);
        judged.blocker = Some(Blocker::Approval);
        judged.detail = Some("Do you want to proceed?".into());
        judged.at = "2026-11-29T04:00:00.020000Z".into();
        save_observation(dir.path(), &judged, &read).unwrap();
        let now = load(dir.path()).current();
        assert_eq!(now.state, Some(State::Blocked));
        assert_eq!(now.signal, Some(Signal::Hook), "{now:?}");
        assert_eq!(
            now.detail.as_deref(),
            Some("asks to use Bash: touch typed.txt")
        );
        // A hook the pass read is weighed: its verdict, stamped later, stands.
        let seen = load(dir.path());
        let mut again = seen.clone();
        again.signal = Some(Signal::Screen);
        again.detail = Some("Do you want to proceed?".into());
        again.at = "2026-11-29T04:00:01.000000Z".into();
        save_observation(dir.path(), &again, &seen).unwrap();
        assert_eq!(load(dir.path()).current().signal, Some(Signal::Screen));
    }
}
