//! An agent's teammates: the panes its program splits off its own window (Claude Code's
//! agent teams: `split-window -d -t <lead pane>` for each teammate, titled with its name).
//! The task stays bound to its lead pane by id (`task.tmux_pane_id`: every keystroke, the
//! monitor's verdict); the panes of that window that Claude Code started as teammates (their
//! start command carries `--agent-id`/`--team-name`) are its teammates, each shown under
//! the task with the state its screen tells — a shell the person splits off is none. The monitor
//! writes them (`teammates.json` in the task's directory); `task show` and the sidebar
//! read them.

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::adapters::store;
use crate::adapters::tmux::Tmux;
use crate::orchestration::agent::State;
use crate::orchestration::attention::session::Panes;
use crate::orchestration::screen::{Rules, Screen};
use crate::orchestration::task::Task;

/// The pane option a sidebar pane carries (set by `ui::plugin`): never a teammate.
const SIDEBAR_MARK: &str = "@orange_sidebar";
const FILE: &str = "teammates.json";

/// One teammate pane beside the lead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Teammate {
    pub pane_id: String,
    /// Its pane title (Claude Code titles a teammate's pane with its name), else the
    /// program it runs.
    pub name: String,
    pub state: State,
    /// What its screen shows that decided (a dialog's label, a retry).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The teammates of `task`'s agent now: the other panes of its lead pane's window, each
/// judged by its screen. Empty when the lead pane is unknown or alone in its window but
/// for sidebars (no tmux call then: `index` is the pass's snapshot). `sidebars`: the panes
/// known to be sidebars (learned here, kept by the monitor: a pane id is never reused by
/// a server), so a window with only its sidebar beside the agent costs one call, once.
pub fn observe(
    tmux: &Tmux,
    rules: &Rules,
    task: &Task,
    index: &Panes<'_>,
    sidebars: &mut HashSet<String>,
) -> Vec<Teammate> {
    let Some(lead) = index.agent_pane(task) else {
        return vec![];
    };
    let panes = index.all();
    // Others in its window, sidebars (orange itself) aside: only then one more tmux call.
    if !panes.iter().any(|p| {
        p.window_id == lead.window_id && p.pane_id != lead.pane_id && !sidebars.contains(&p.pane_id)
    }) {
        return vec![];
    }
    let rows = tmux
        .window_pane_values(
            &lead.window_id,
            &[
                "pane_id",
                SIDEBAR_MARK,
                "pane_title",
                "pane_current_command",
                "pane_dead",
                "pane_start_command",
            ],
        )
        .unwrap_or_default();
    for r in rows.iter().filter(|r| r.len() == 6 && r[1] == "1") {
        sidebars.insert(r[0].clone());
    }
    rows.into_iter()
        .filter(|r| r.len() == 6 && r[0] != lead.pane_id && r[1] != "1")
        .filter_map(|r| Some((agent_name(&r[5])?, r)))
        .map(|(named, r)| {
            // Claude Code titles its pane with a status glyph first ("✳ general-purpose").
            let title = r[2].trim_start_matches(|c: char| !c.is_alphanumeric());
            let name = if !named.is_empty() {
                named
            } else if title.trim().is_empty() || r[2] == hostname() {
                r[3].clone()
            } else {
                title.to_string()
            };
            let (state, detail) = if r[4] == "1" {
                (State::Dead, None)
            } else {
                judge(rules, &tmux.capture_pane(&r[0], 0).unwrap_or_default())
            };
            Teammate {
                pane_id: r[0].clone(),
                name: crate::text::safe_line(&name).into_owned(),
                state,
                detail,
            }
        })
        .collect()
}

/// Whether a pane's start command is a Claude Code teammate's, and its name if it says
/// one. Claude Code 2.1.330 splits the lead's window with `cat` as a placeholder, then
/// `respawn-pane -k` runs the teammate there: its command carries `--agent-id ID
/// --agent-name NAME --team-name TEAM`, which tmux keeps as `pane_start_command`. Any
/// other pane of the window (a shell the person split off, an editor) is no teammate:
/// `None`. `Some("")`: a teammate whose command names it not.
fn agent_name(start: &str) -> Option<String> {
    // Each flag as `--flag VALUE` or `--flag=VALUE` (claude writes either).
    let words: Vec<&str> = start.split_whitespace().collect();
    let flag = |w: &str, f: &str| w == f || w.strip_prefix(f).is_some_and(|r| r.starts_with('='));
    if !words
        .iter()
        .any(|w| flag(w, "--agent-id") || flag(w, "--team-name"))
    {
        return None;
    }
    let name = words.iter().enumerate().find_map(|(i, w)| {
        let v = w.strip_prefix("--agent-name")?;
        match v.strip_prefix('=') {
            Some(v) => Some(v),
            None if v.is_empty() => words.get(i + 1).copied(),
            None => None,
        }
    });
    let name = name
        .unwrap_or_default()
        .trim_matches(|c| matches!(c, '\'' | '"' | '\\'));
    Some(name.to_string())
}

/// tmux's default pane title is the host's name: no name at all.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// A teammate's state from its screen: a dialog, a retry, an error or a declared state;
/// else Claude Code's own mark of a turn in progress; else waiting.
fn judge(rules: &Rules, screen: &str) -> (State, Option<String>) {
    match rules.classify(screen) {
        Some(Screen::Blocked(b, _)) => (State::Blocked, Some(b.label().to_string())),
        Some(Screen::Retrying(d)) => (State::Retrying, Some(d)),
        Some(Screen::Error(line)) => (State::Error, Some(line)),
        Some(Screen::Limited(line, _)) => (State::Limited, Some(line)),
        Some(Screen::Working(_)) => (State::Working, None),
        Some(Screen::Waiting(_)) => (State::Waiting, None),
        None if crate::execution::harness::claude::shows_a_turn(screen) => (State::Working, None),
        None => (State::Waiting, None),
    }
}

/// Write what was observed (nothing when it did not change; the file goes when no
/// teammate is left).
pub fn save(dir: &Path, teammates: &[Teammate]) -> crate::error::Result<()> {
    if load(dir) == teammates {
        return Ok(());
    }
    let path = dir.join(FILE);
    if teammates.is_empty() {
        let _ = std::fs::remove_file(&path);
        return Ok(());
    }
    store::write_json_atomic(&path, &teammates)
}

/// The teammates the monitor last saw (none when it saw none).
pub fn load(dir: &Path) -> Vec<Teammate> {
    std::fs::read(dir.join(FILE))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// One line per teammate, for text output and the sidebar: `└ name: state (detail)`.
pub fn line(t: &Teammate) -> String {
    match &t.detail {
        Some(d) => format!(
            "└ {}: {} ({})",
            t.name,
            t.state.as_str(),
            crate::text::safe_line(d)
        ),
        None => format!("└ {}: {}", t.name, t.state.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_teammate_s_screen_tells_its_state() {
        let rules = Rules::builtin("claude");
        assert_eq!(
            judge(
                rules,
                "Bash command\nDo you want to proceed?\n❯ 1. Yes\n  2. No\n"
            ),
            (State::Blocked, Some("approval".into()))
        );
        assert_eq!(
            judge(rules, "✻ Researching… (esc to interrupt)\n"),
            (State::Working, None)
        );
        assert_eq!(
            judge(rules, "❯ \n? for shortcuts\n"),
            (State::Waiting, None)
        );
        let d = tempfile::tempdir().unwrap();
        assert!(load(d.path()).is_empty());
        let t = Teammate {
            pane_id: "%3".into(),
            name: "tester".into(),
            state: State::Blocked,
            detail: Some("approval".into()),
        };
        save(d.path(), std::slice::from_ref(&t)).unwrap();
        assert_eq!(load(d.path()), vec![t.clone()]);
        assert_eq!(line(&t), "└ tester: blocked (approval)");
        save(d.path(), &[]).unwrap();
        assert!(!d.path().join(FILE).exists());
    }

    #[test]
    fn only_a_pane_claude_started_as_a_teammate_is_one() {
        let cmd = r#"/bin/sh -c "cd /w && claude --agent-id 'researcher@t1' --agent-name 'researcher' --team-name 't1' --agent-color blue""#;
        assert_eq!(agent_name(cmd).as_deref(), Some("researcher"));
        assert_eq!(
            agent_name("claude --team-name t1 --agent-id x@t1").as_deref(),
            Some("")
        );
        assert_eq!(
            agent_name("claude --agent-id=x@t1 --agent-name=tester --team-name=t1").as_deref(),
            Some("tester")
        );
        // A shell the person split off, claude's placeholder, an editor: none.
        for other in [
            "",
            "cat",
            "bash",
            "vim notes --agent-name x",
            "\"sleep 100\"",
        ] {
            assert_eq!(agent_name(other), None, "{other}");
        }
    }
}
