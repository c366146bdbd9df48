//! The sidebar's model: what one frame shows, as plain data (what `orange sidebar --once
//! --json` prints), and the pure steps that turn a task's records into it (history events
//! in a few words, TASK.md's lines, the pull request, the footer for the keys bound).
//! Reading those records is [`super::gather`]'s; laying the model out is [`super::render`]'s.

use chrono::DateTime;
use serde::{Deserialize, Serialize};

use crate::orchestration::attention::next::NextStep;
use crate::orchestration::task::Event;
use crate::ui::diff::ChangedFile;

/// The hint line at the bottom of the sidebar while the agent's pane has the focus (seed
/// 002's footer, terminal focused): the plugin's keys there, as bound by default.
pub const FOOTER: &str = "Ctrl+\\ sidebar  Ctrl+] full screen";
/// The hint line while the sidebar has the focus: its own keys.
pub const SIDEBAR_FOOTER: &str = "Tab terminal  Esc back  q close";

/// Everything one sidebar frame shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    pub id: String,
    pub project: String,
    pub branch: String,
    /// Task status (`working`, `reviewing`…).
    pub status: String,
    /// Session state: `live`, `dead` (the agent exited, its pane is kept) or `none`.
    pub session: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_signal: Option<i32>,
    pub harness: String,
    /// What the agent is doing (`working`, `waiting`, `dead`, `error: …`), when known.
    #[serde(default)]
    pub agent: Option<String>,
    /// The agent's teammates (panes it split off its window), a row each under it:
    /// `└ name: state`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub teammates: Vec<String>,
    /// Its reviewer agent, a row under it: `reviewer claude: working`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer: Option<String>,
    /// The group it is a member of (best of N): its base branch, then a row per member,
    /// `/2 reviewing`, this one marked `◂`; empty when it is in no group.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub group: Vec<String>,
    /// Token use from the agent's log; `None`: unknown (its harness does not report it).
    #[serde(default)]
    pub tokens: Option<crate::orchestration::usage::Tokens>,
    /// What its agent's process tree uses now (memory, CPU), as the monitor last read it;
    /// `None` while no agent runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::orchestration::footprint::Usage>,
    /// The port reserved for the task's workspace, when there is one.
    #[serde(default)]
    pub port: Option<u16>,
    /// `#12 open`, `#12 merged ✓`…; `None`: no pull request known.
    #[serde(default)]
    pub pr: Option<String>,
    /// Commits on the branch that the default branch does not have; `None` when git could
    /// not be read (no workspace and no branch yet, or an error: see `notice`).
    #[serde(default)]
    pub commits: Option<usize>,
    #[serde(default)]
    pub added: usize,
    #[serde(default)]
    pub removed: usize,
    /// Changed files against the merge base with the default branch: committed, staged,
    /// unstaged and untracked.
    #[serde(default)]
    pub files: Vec<ChangedFile>,
    /// Newest first.
    #[serde(default)]
    pub history: Vec<HistoryEntry>,
    /// TASK.md's text as shown (title line unmarked, empty sections dropped).
    #[serde(default)]
    pub task: Vec<String>,
    /// A line worth the user's attention: the task is done, the workspace is gone, git failed.
    #[serde(default)]
    pub notice: Option<String>,
    /// When the task needs you, what moves it on (the words of every surface).
    #[serde(default)]
    pub next_step: Option<NextStep>,
    /// The keys of the pane in focus: the agent's ([`FOOTER`]) or the sidebar's
    /// ([`SIDEBAR_FOOTER`]).
    pub footer: String,
    /// Unix time the ages are computed against.
    pub now: i64,
}

/// One line of history as the sidebar shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// Unix time of the event; `None` when its timestamp does not parse.
    pub at: Option<i64>,
    /// The `history.jsonl` event name (`status.changed`…).
    pub event: String,
    /// What the sidebar prints (`status → working`).
    pub text: String,
}

impl Model {
    /// A model with the task's identity and nothing else known yet.
    pub fn empty(id: &str, project: &str, branch: &str, now: i64) -> Model {
        Model {
            id: id.into(),
            project: project.into(),
            branch: branch.into(),
            status: "pending".into(),
            session: "none".into(),
            exit_status: None,
            exit_signal: None,
            harness: String::new(),
            agent: None,
            teammates: vec![],
            reviewer: None,
            group: vec![],
            tokens: None,
            usage: None,
            port: None,
            pr: None,
            commits: None,
            added: 0,
            removed: 0,
            files: vec![],
            history: vec![],
            task: vec![],
            notice: None,
            next_step: None,
            footer: FOOTER.into(),
            now,
        }
    }
}

/// A remote task (on another host) as its host's last snapshot shows it (`item`, `None` when the
/// host listed it no more: finished, or never seen), rendered here without ssh: no git,
/// no history, and a notice saying which host and how old the view is.
pub fn remote_model(
    id: &str,
    item: Option<&crate::orchestration::attention::Item>,
    host: &crate::orchestration::attention::HostView,
    now: i64,
) -> Model {
    use crate::orchestration::attention::Bucket;
    let mut m = match item {
        Some(i) => {
            let mut m = Model::empty(id, &i.project, &i.branch, now);
            m.status = i.status.clone();
            m.session = match (i.bucket, i.session.is_some()) {
                (Bucket::Dead, _) => "dead".into(),
                (_, true) => "live".into(),
                _ => "none".into(),
            };
            m.exit_status = i.exit_status;
            m.exit_signal = i.exit_signal;
            m.agent = Some(i.reason.clone());
            m.harness = i.harness.clone();
            // Its command routes to its host; the menu's key acts on local tasks only.
            m.next_step = NextStep::of_item(i, None);
            m
        }
        None => Model::empty(id, "?", "?", now),
    };
    let age = host
        .age_s
        .map(|a| format!("{a}s ago"))
        .unwrap_or_else(|| "never".into());
    // Its files, history and TASK.md are there: said, not shown as empty.
    m.task = vec![format!(
        "On host {}: `orange task show {id}` for its TASK.md and history.",
        host.name
    )];
    m.notice = Some(match (host.reachable, item.is_some()) {
        (true, true) => format!("on host {} · seen {age}", host.name),
        (true, false) => format!("not open on host {} (finished, or unknown)", host.name),
        (false, _) => format!("host {} unreachable · last seen {age}", host.name),
    });
    // Its host cannot be reached: the session is not known now (never called dead).
    if !host.reachable {
        m.session = crate::ui::output::unreachable_label(host.age_s)
            .trim_start_matches("? ")
            .to_string();
        m.exit_status = None;
        m.exit_signal = None;
    }
    m
}

/// `#12 open · checks 3/4 ✗ · changes requested` from the PR value stored in task.json
/// (`adapters::gh::PrStatus`; older records: gh's number and pr_state only).
pub fn pr_text(pr: &serde_json::Value) -> Option<String> {
    let number = pr.get("number").and_then(|n| n.as_u64())?;
    let state = pr
        .get("pr_state")
        .or_else(|| pr.get("state"))
        .and_then(|s| s.as_str())
        .unwrap_or("")
        .to_lowercase();
    let draft = pr.get("draft").and_then(|d| d.as_bool()) == Some(true);
    let mut parts = vec![match state.as_str() {
        "merged" => format!("#{number} merged ✓"),
        "" | "found" => format!("#{number}"),
        "open" if draft => format!("#{number} draft"),
        s => format!("#{number} {s}"),
    }];
    let n = |k: &str| {
        pr.get("checks")
            .and_then(|c| c.get(k))
            .and_then(|v| v.as_u64())
            .unwrap_or(0)
    };
    if state != "merged" && n("total") > 0 {
        let mark = if n("failed") > 0 {
            "✗"
        } else if n("pending") > 0 {
            "…"
        } else {
            "✓"
        };
        parts.push(format!("checks {}/{} {mark}", n("passed"), n("total")));
    }
    match pr.get("review").and_then(|r| r.as_str()) {
        Some("CHANGES_REQUESTED") if state != "merged" => parts.push("changes requested".into()),
        Some("APPROVED") if state != "merged" => parts.push("approved".into()),
        _ => {}
    }
    Some(parts.join(" · "))
}

/// One `history.jsonl` event as the sidebar lists it.
pub fn history_entry(e: &Event) -> HistoryEntry {
    HistoryEntry {
        at: DateTime::parse_from_rfc3339(&e.ts)
            .ok()
            .map(|t| t.timestamp()),
        event: e.event.clone(),
        text: describe_event(e),
    }
}

/// A history event in a few words: `spawned (claude)`, `status → working`, `crashed (1)`.
pub fn describe_event(e: &Event) -> String {
    let s = |k: &str| e.data.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let n = |k: &str| e.data.get(k).and_then(|v| v.as_u64());
    // `PR #12 merged` (or `PR merged` when its number is not known).
    let pr = |what: &str| match n("number") {
        Some(num) => format!("PR #{num} {what}"),
        None => format!("PR {what}"),
    };
    match e.event.as_str() {
        "task.created" => "created".into(),
        "agent.spawned" => match s("harness") {
            Some(h) => format!("spawned ({h})"),
            None => "spawned".into(),
        },
        "agent.respawned" => "respawned".into(),
        "auto.spawned" => "started from the queue".into(),
        "agent.spawn_failed" => "spawn failed".into(),
        "status.changed" => match s("to") {
            Some(to) => format!("status → {to}"),
            None => "status changed".into(),
        },
        "agent.crashed" => match n("crash_count") {
            Some(c) => format!("crashed ({c})"),
            None => "crashed".into(),
        },
        "auto.advanced" => match s("to") {
            Some(to) => format!("advanced → {to}"),
            None => "advanced".into(),
        },
        "task.merged" => "merged".into(),
        "task.cancelled" => "cancelled".into(),
        "pr.created" => pr("created"),
        "pr.merged" => pr("merged"),
        "pr.linked" => pr("linked"),
        "pr.checks_failed" => "checks failed".into(),
        "pr.checks_passed" => "checks passed".into(),
        "pr.changes_requested" => "changes requested".into(),
        "pr.approved" => "approved".into(),
        "pr.closed" => "PR closed".into(),
        "summary.changed" => "summary changed".into(),
        "branch.changed" => match s("to") {
            Some(to) => format!("branch → {to}"),
            None => "branch changed".into(),
        },
        other => other.replace(['.', '_'], " "),
    }
}

/// The lines of TASK.md the sidebar shows: YAML front matter skipped, the `# ` title kept
/// as plain text (it is the task's summary), headings of empty sections and runs of blank
/// lines dropped.
pub fn task_lines(md: &str) -> Vec<String> {
    let mut lines: Vec<&str> = md.lines().collect();
    if lines.first().is_some_and(|l| l.trim_end() == "---") {
        if let Some(end) = lines.iter().skip(1).position(|l| l.trim_end() == "---") {
            lines.drain(..end + 2);
        }
    }
    let mut out: Vec<String> = vec![];
    let mut title_done = false;
    for (i, line) in lines.iter().enumerate() {
        let line = line.trim_end();
        if !title_done && !line.is_empty() {
            title_done = true;
            if let Some(t) = line.strip_prefix("# ") {
                let t = t.trim();
                if !t.is_empty() && t != "(no summary)" {
                    out.push(t.to_string());
                }
                continue;
            }
        }
        if is_heading(line) {
            let empty = lines[i + 1..]
                .iter()
                .map(|l| l.trim())
                .take_while(|l| !is_heading(l))
                .all(str::is_empty);
            if empty {
                continue;
            }
        }
        if line.is_empty() && out.last().is_none_or(|l| l.is_empty()) {
            continue;
        }
        out.push(line.to_string());
    }
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    out
}

fn is_heading(line: &str) -> bool {
    let hashes = line.bytes().take_while(|b| *b == b'#').count();
    (1..=6).contains(&hashes) && line[hashes..].starts_with(' ')
}

/// The footer of the agent's pane for the keys really bound: `@orange-sidebar-key` and
/// `@orange-zoom-key` (unset: the defaults `C-\\` and `C-]`; `off` or empty: not bound, not
/// shown), each only when the plugin did bind it (`bound`: its `@orange_bound_keys`,
/// `table:key` words; `None`: not known), else the plugin's help key (`prefix O ?`), else
/// nothing.
pub fn footer_for_keys(
    sidebar: Option<&str>,
    zoom: Option<&str>,
    table: Option<&str>,
    bound: Option<&str>,
) -> String {
    let is_bound = |t: &str, k: &str| {
        bound.is_none_or(|b| b.split_whitespace().any(|w| w == format!("{t}:{k}")))
    };
    let shown = |k: Option<&str>, default: &str| -> Option<String> {
        match k.map(str::trim) {
            None => Some(default.to_string()),
            Some("") | Some("off") | Some("none") => None,
            Some(k) => Some(k.to_string()),
        }
    };
    let s = shown(sidebar, "C-\\").filter(|k| is_bound("root", k));
    let z = shown(zoom, "C-]").filter(|k| is_bound("root", k));
    if s.as_deref() == Some("C-\\") && z.as_deref() == Some("C-]") {
        return FOOTER.into();
    }
    let pretty = |k: &str| {
        k.strip_prefix("C-")
            .map_or(k.to_string(), |r| format!("Ctrl+{r}"))
    };
    let mut parts = vec![];
    if let Some(k) = s {
        parts.push(format!("{} sidebar", pretty(&k)));
    }
    if let Some(k) = z {
        parts.push(format!("{} full screen", pretty(&k)));
    }
    if parts.is_empty() {
        return match shown(table, "O").filter(|k| is_bound("prefix", k)) {
            Some(key) => format!("prefix {key} ? keys"),
            None => String::new(),
        };
    }
    parts.join("  ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_footer_names_the_keys_really_bound() {
        assert_eq!(footer_for_keys(None, None, None, None), FOOTER);
        assert_eq!(
            footer_for_keys(Some("C-\\"), Some("C-]"), None, None),
            FOOTER
        );
        assert_eq!(FOOTER, "Ctrl+\\ sidebar  Ctrl+] full screen");
        assert_eq!(
            footer_for_keys(Some("off"), Some("M-z"), None, None),
            "M-z full screen"
        );
        assert_eq!(
            footer_for_keys(Some("C-s"), Some(""), None, None),
            "Ctrl+s sidebar"
        );
        assert_eq!(
            footer_for_keys(Some("C-s"), Some("M-f"), None, None),
            "Ctrl+s sidebar  M-f full screen"
        );
        assert_eq!(
            footer_for_keys(Some("off"), Some("off"), Some("T"), None),
            "prefix T ? keys"
        );
        // What the plugin left alone (the person had bound it) is not named.
        let bound = Some("prefix:O root:C-]");
        assert_eq!(
            footer_for_keys(None, None, None, bound),
            "Ctrl+] full screen"
        );
        assert_eq!(
            footer_for_keys(Some("off"), Some("off"), Some("off"), Some("")),
            ""
        );
    }

    #[test]
    fn task_lines_keep_the_title_and_drop_empty_sections() {
        let md =
            crate::orchestration::task::task_md("Fix the login\n\nmore words", Some("ctx line"));
        let lines = task_lines(&md);
        assert_eq!(lines[0], "Fix the login");
        assert!(lines.contains(&"## Context".to_string()));
        assert!(!lines.iter().any(|l| l == "## Notes"), "{lines:?}");
        assert!(task_lines(&crate::orchestration::task::task_md("", None)).is_empty());
        assert_eq!(
            task_lines("---\na: b\n---\n# T\n\nbody\n"),
            vec!["T", "", "body"]
        );
    }
}
