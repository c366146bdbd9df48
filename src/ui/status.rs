//! The status-line widgets: the counts of [`attention::classify`]'s buckets, rendered for
//! tmux, for people and for scripts, and published as tmux options.
//!
//! # Publishing
//!
//! [`publish`] sets the global user option `@orange_summary` ([`render_tmux`]) and, on every
//! task session, `@orange_status` ([`render_session_tmux`]), writing only the values that
//! changed: the observer's snapshot holds the values tmux has, read in the same single call
//! that listed the panes, so an unchanged state costs no process at all, and a changed one
//! one. `@orange_status` is owned by `publish`: a value of ours left on a session that no
//! longer belongs to an open task is unset.
//!
//! The monitor publishes after every pass. A command that changed something calls
//! [`changed`]: it pokes the monitor, which observes and publishes at once; only when no
//! monitor runs does the command observe and publish itself.
//!
//! # `orange status`
//!
//! `orange status` runs in status lines every few seconds. It reads the observer's
//! snapshot (`snapshot::current`): no process while the snapshot is fresh, one tmux call
//! otherwise.

use std::collections::HashMap;

use crate::adapters::store::{self, Home};
use crate::adapters::tmux::{OptionScope, Tmux};
use crate::error::Result;
use crate::orchestration::observe::snapshot::{self, Snapshot};

pub use crate::orchestration::attention::{self, classify, Bucket, Counts, Item, Summary, BUCKETS};
pub use crate::orchestration::observe::snapshot::{SESSION_OPTION, SUMMARY_OPTION};

/// Every value we set starts with this: it keeps the user's colours around our text.
const STYLE_OPEN: &str = "#[push-default]";
const STYLE_CLOSE: &str = "#[pop-default]";

const UNREADABLE_ICON: &str = "⚠";
const UNREADABLE_STYLE: &str = "fg=red";

// ---------------------------------------------------------------------------------------
// Rendering (pure)
// ---------------------------------------------------------------------------------------

/// Make text safe inside a tmux format value ([`crate::text::for_tmux`]): `#` is doubled,
/// so user data can never open a style (`#[`) or a format (`#{`), and control characters
/// are shown, never sent to the terminal. A session's label carries its task's branch.
pub fn escape_tmux(text: &str) -> String {
    crate::text::for_tmux(text)
}

fn styled(style: &str, text: &str) -> String {
    format!("#[{style}]{}#[default]", escape_tmux(text))
}

/// The status-line text: the non-zero counts with icons and colours, e.g.
/// `#[push-default]#[fg=yellow]⚙ 3#[default] #[fg=red,bold]✗ 1#[default]#[pop-default]`;
/// empty when there is nothing open. The push/pop keeps the user's own colours for the text
/// around it. It holds no user data, so it means the same whether tmux inserts it raw
/// (`#{@orange_summary}`) or expands it again (`#(orange status --format tmux)`).
pub fn render_tmux(summary: &Summary) -> String {
    let mut parts: Vec<String> = BUCKETS
        .iter()
        .filter(|b| summary.total.get(**b) > 0)
        .map(|b| {
            styled(
                b.style(),
                &format!("{} {}", b.icon(), summary.total.get(*b)),
            )
        })
        .collect();
    if summary.unreadable > 0 {
        parts.push(styled(
            UNREADABLE_STYLE,
            &format!("{UNREADABLE_ICON} {}", summary.unreadable),
        ));
    }
    for h in summary.hosts.iter().filter(|h| !h.reachable) {
        parts.push(styled(UNREACHABLE_STYLE, &unreachable_text(h)));
    }
    if parts.is_empty() {
        return String::new();
    }
    format!("{STYLE_OPEN}{}{STYLE_CLOSE}", parts.join(" "))
}

/// A host that cannot be reached: its name and the age of what is shown of it.
pub fn unreachable_text(h: &crate::orchestration::attention::HostView) -> String {
    match h.age_s {
        Some(age) => format!("{UNREACHABLE_ICON} {} {}", h.name, short_age(age)),
        None => format!("{UNREACHABLE_ICON} {}", h.name),
    }
}

const UNREACHABLE_ICON: &str = "⚠";
const UNREACHABLE_STYLE: &str = "fg=red";

/// `42s`, `5m`, `3h`, `2d`.
fn short_age(s: u64) -> String {
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}

/// Longest per-session text (an escalation reason can be long; status lines are short).
const SESSION_TEXT_MAX: usize = 40;

/// `@orange_status` of the item's session: e.g. `⚙ working`, `✗ exited 3`, `✓ review`,
/// coloured like its bucket, at most 40 characters.
pub fn render_session_tmux(item: &Item) -> String {
    let mut label = item.label();
    if label.chars().count() > SESSION_TEXT_MAX {
        label = label.chars().take(SESSION_TEXT_MAX - 1).collect::<String>() + "…";
    }
    format!(
        "{STYLE_OPEN}{}{STYLE_CLOSE}",
        styled(item.bucket.style(), &label)
    )
}

fn counts_plain(c: &Counts, unreadable: u32) -> String {
    let mut s: Vec<String> = BUCKETS[..4]
        .iter()
        .map(|b| format!("{} {}", b.as_str(), c.get(*b)))
        .collect();
    if c.queued > 0 {
        s.push(format!("queued {}", c.queued));
    }
    if c.limited > 0 {
        s.push(format!("limited {}", c.limited));
    }
    if unreadable > 0 {
        s.push(format!("unreadable {unreadable}"));
    }
    s.join(" · ")
}

/// One line for people, scripts and status lines, no colours and no styles: the four
/// counts always, `queued` and `unreadable` when non-zero, e.g.
/// `working 2 · waiting 1 · dead 0 · review 1 · queued 1`. One line because a status line
/// (`#(orange status --format plain)`) shows only one; per-project counts are in the JSON.
pub fn render_plain(summary: &Summary) -> String {
    let mut out = counts_plain(&summary.total, summary.unreadable);
    for h in summary.hosts.iter().filter(|h| !h.reachable) {
        out.push_str(" · ");
        out.push_str(&unreachable_text(h).replace(UNREACHABLE_ICON, "unreachable"));
    }
    out.push('\n');
    out
}

/// The summary as one JSON value (what `--format json` and `--json` print).
pub fn render_json(summary: &Summary) -> serde_json::Value {
    serde_json::to_value(summary).expect("a summary serializes")
}

/// Token use summed over the summary's open tasks, from their `usage.json` (no transcript
/// is read): `{input, output, cache_creation, cache_read, tasks, unknown}`, where `tasks`
/// counts the tasks summed and `unknown` those whose harness does not report tokens (and
/// lanes and remote hosts' tasks, whose files are not here).
pub fn tokens_json(home: &Home, summary: &Summary) -> serde_json::Value {
    let store = crate::orchestration::task::TaskStore::new(home);
    let mut sum = crate::orchestration::usage::Tokens::default();
    let (mut known, mut unknown) = (0u32, 0u32);
    for i in &summary.items {
        let tokens = (i.kind == attention::ItemKind::Task && i.host.is_none())
            .then(|| crate::orchestration::usage::tokens(&store.dir(&i.project, &i.id), &i.harness))
            .flatten();
        match tokens {
            Some(t) => {
                sum += t;
                known += 1;
            }
            None => unknown += 1,
        }
    }
    let mut v = serde_json::to_value(sum).expect("tokens serialize");
    v["tasks"] = known.into();
    v["unknown"] = unknown.into();
    v
}

// ---------------------------------------------------------------------------------------
// Reading and publishing
// ---------------------------------------------------------------------------------------

/// The summary as `orange status` shows it: from the fresh snapshot (no process), else
/// from one observation (one tmux call).
pub fn current(home: &Home, tmux: &Tmux) -> Result<Summary> {
    Ok(snapshot::current(home, tmux)?.summary)
}

/// After a state change: poke (sidebars redraw, the monitor observes and publishes at
/// once); without a monitor on this server, observe and publish here. Never fails the
/// caller (no tmux server, a slow one: the next change or monitor pass catches up).
pub fn changed(home: &Home, tmux: &Tmux) {
    // What a command changed in a task's files, it poked with the task.
    store::poke_other(home);
    follow(home, tmux);
}

/// [`changed`] after a poke that said what changed (`store::poke_task`): the widgets follow
/// (here when no monitor runs on this server).
pub fn follow(home: &Home, tmux: &Tmux) {
    // In a sandbox, tmux is out of reach (on purpose): the monitor outside publishes.
    if crate::execution::sandbox::inside() {
        return;
    }
    if snapshot::monitor_running(home, tmux) {
        return;
    }
    if let Ok(snap) = snapshot::take(home, tmux) {
        snapshot::write(home, tmux, &snap);
        let _ = publish(tmux, &snap);
    }
}

/// Publish a snapshot's summary as tmux options, writing only what changed (nothing to do:
/// no process). A no-op when the snapshot saw no server.
pub fn publish(tmux: &Tmux, snap: &Snapshot) -> Result<()> {
    if snap.server_id.is_none() {
        return Ok(());
    }
    let changes = option_changes(&snap.summary, snap);
    if changes.is_empty() {
        return Ok(());
    }
    let scoped: Vec<(OptionScope<'_>, &str, Option<&str>)> = changes
        .iter()
        .map(|(target, name, value)| {
            let scope = match target {
                Some(t) => OptionScope::Session(t.as_str()),
                None => OptionScope::Global,
            };
            (scope, *name, value.as_deref())
        })
        .collect();
    tmux.set_options(&scoped)
}

/// Which options to set (`Some`) or unset (`None`): (session id or `None` for global,
/// option, value).
type Change = (Option<String>, &'static str, Option<String>);

fn option_changes(summary: &Summary, snap: &Snapshot) -> Vec<Change> {
    let mut changes = Vec::new();
    let text = render_tmux(summary);
    if text != snap.summary_value() {
        changes.push((None, SUMMARY_OPTION, Some(text)));
    }
    let mut wanted: HashMap<&str, String> = HashMap::new();
    // A remote item's session is on another server: its id means nothing here.
    for item in summary.items.iter().filter(|i| i.host.is_none()) {
        let session = snap
            .panes
            .iter()
            .find(|p| match item.session_id.as_deref() {
                Some(id) => id == p.session_id,
                None => item.session.as_deref() == Some(p.session_name.as_str()),
            });
        if let Some(p) = session {
            wanted.insert(p.session_id.as_str(), render_session_tmux(item));
        }
    }
    remote_labels(summary, snap, &mut changes);
    let mut sessions: Vec<&str> = snap.sessions.iter().map(|s| s.id.as_str()).collect();
    sessions.sort();
    for sid in sessions {
        let have = snap.session_value(sid);
        match wanted.get(sid) {
            Some(want) if want != have => {
                changes.push((Some(sid.to_string()), SESSION_OPTION, Some(want.clone())))
            }
            // Ours (only we write values starting so), on a session no open item owns.
            None if have.starts_with(STYLE_OPEN) => {
                changes.push((Some(sid.to_string()), SESSION_OPTION, None))
            }
            _ => {}
        }
    }
    changes
}

/// Between a remote task's picker label (`<host>: <branch>`, set by `task attach`) and
/// what it says while its host cannot be reached.
const UNREACHABLE_SEP: &str = " · ";

/// The local session of an attached remote task (`@orange_remote`): its label gains
/// `? unreachable (last seen 4m ago)` while its host cannot be reached, and loses it after.
fn remote_labels(summary: &Summary, snap: &Snapshot, changes: &mut Vec<Change>) {
    for s in &snap.sessions {
        let (Some(host), Some(have)) = (
            s.mark(snapshot::REMOTE_MARK),
            s.mark(snapshot::SESSION_OPTION),
        ) else {
            continue;
        };
        let base = have.split(UNREACHABLE_SEP).next().unwrap_or(have);
        let want = match summary.hosts.iter().find(|h| h.name == host) {
            Some(h) if !h.reachable => format!(
                "{base}{UNREACHABLE_SEP}{}",
                crate::ui::output::unreachable_label(h.age_s)
            ),
            _ => base.to_string(),
        };
        if want != have {
            changes.push((Some(s.id.clone()), SESSION_OPTION, Some(want)));
        }
    }
}

/// Append one JSON line to `$ORANGE_HOME/orange.log` (see `store::log`).
pub fn log(home: &Home, level: &str, msg: &str, extra: serde_json::Value) {
    store::log(home, level, msg, extra)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::tmux::{MarkedSession, PaneInfo, ServerId};
    use unicode_width::UnicodeWidthStr;

    fn summary(w: u32, wt: u32, d: u32, r: u32, q: u32, unreadable: u32) -> Summary {
        Summary {
            total: Counts {
                working: w,
                waiting: wt,
                dead: d,
                review: r,
                queued: q,
                limited: 0,
            },
            unreadable,
            ..Summary::default()
        }
    }

    #[test]
    fn tmux_rendering() {
        assert_eq!(render_tmux(&Summary::default()), "");
        assert_eq!(
            render_tmux(&summary(3, 1, 1, 2, 0, 0)),
            "#[push-default]#[fg=yellow]⚙ 3#[default] #[fg=magenta,bold]⚑ 1#[default] \
             #[fg=red,bold]✗ 1#[default] #[fg=green]✓ 2#[default]#[pop-default]"
        );
        assert_eq!(
            render_tmux(&summary(0, 0, 1, 0, 2, 1)),
            "#[push-default]#[fg=red,bold]✗ 1#[default] #[dim]⏸ 2#[default] \
             #[fg=red]⚠ 1#[default]#[pop-default]"
        );
    }

    /// Every `#` we emit opens a style: nothing tmux could read as a format or as text.
    fn only_styles(s: &str) -> bool {
        s.match_indices('#').all(|(i, _)| s[i..].starts_with("#["))
    }

    #[test]
    fn rendered_text_has_no_stray_hash() {
        for s in [
            summary(1, 2, 3, 4, 5, 6),
            summary(0, 0, 0, 0, 0, 1),
            summary(10, 0, 0, 0, 0, 0),
        ] {
            assert!(only_styles(&render_tmux(&s)), "{}", render_tmux(&s));
        }
        assert_eq!(escape_tmux("a#{b}#[c]"), "a##{b}##[c]");
    }

    #[test]
    fn icons_are_one_column_wide() {
        for b in BUCKETS {
            assert_eq!(b.icon().width(), 1, "{b:?}");
        }
        assert_eq!(UNREADABLE_ICON.width(), 1);
    }

    fn item(bucket: Bucket, reason: &str) -> Item {
        Item {
            kind: attention::ItemKind::Task,
            id: "abc".into(),
            project: "p".into(),
            branch: "b".into(),
            status: "working".into(),
            bucket,
            reason: reason.into(),
            session: None,
            session_id: None,
            exit_status: None,
            exit_signal: None,
            created_at: String::new(),
            host: None,
            harness: String::new(),
            next: None,
        }
    }

    #[test]
    fn session_rendering() {
        assert_eq!(
            render_session_tmux(&item(Bucket::Working, "working")),
            "#[push-default]#[fg=yellow]⚙ working#[default]#[pop-default]"
        );
        assert_eq!(item(Bucket::Dead, "exited 3").label(), "✗ exited 3");
        assert_eq!(item(Bucket::Review, "review").label(), "✓ review");
        let s = render_session_tmux(&item(Bucket::Waiting, "error: other"));
        assert!(only_styles(&s) && s.starts_with(STYLE_OPEN), "{s}");
        // Text from elsewhere (an escalation reason) is escaped and kept short.
        let long = render_session_tmux(&item(
            Bucket::Waiting,
            &format!("escalated: #[fg=red] #{{pane_id}} {}", "x".repeat(80)),
        ));
        assert!(only_styles(&long.replace("##", "")), "{long}");
        assert!(long.contains("…#[default]"), "{long}");
        // Its control characters are shown, never sent to the terminal.
        let hostile = render_session_tmux(&item(
            Bucket::Waiting,
            "escalated: \x1b]0;PWNED\x07\x1b[2J\u{9b}1m\nnext",
        ));
        assert!(!hostile.chars().any(char::is_control), "{hostile:?}");
        assert!(hostile.contains("␛]0;PWNED␇␛[2J␛[1m␤next"), "{hostile}");
    }

    #[test]
    fn plain_rendering_is_one_line() {
        assert_eq!(
            render_plain(&Summary::default()),
            "working 0 · waiting 0 · dead 0 · review 0\n"
        );
        let mut s = summary(2, 1, 0, 1, 1, 1);
        s.projects.insert(
            "app".into(),
            Counts {
                working: 2,
                ..Counts::default()
            },
        );
        assert_eq!(
            render_plain(&s),
            "working 2 · waiting 1 · dead 0 · review 1 · queued 1 · unreadable 1\n"
        );
    }

    #[test]
    fn json_has_flat_totals_projects_and_items() {
        let mut s = summary(1, 0, 0, 0, 0, 0);
        s.items.push(item(Bucket::Working, "working"));
        let v = render_json(&s);
        assert_eq!(v["working"], 1);
        assert_eq!(v["unreadable"], 0);
        assert_eq!(v["lanes"]["working"], 0);
        assert_eq!(v["items"][0]["bucket"], "working");
        // The picker cycles in creation order: the snapshot keeps it.
        assert_eq!(v["items"][0]["created_at"], "");
        let back: Summary = serde_json::from_value(v).unwrap();
        assert_eq!(back.total, s.total);
    }

    fn pane(sid: &str, name: &str) -> PaneInfo {
        PaneInfo {
            session_id: sid.into(),
            session_name: name.into(),
            session_attached: false,
            window_id: String::new(),
            window_index: 0,
            window_activity: 0,
            pane_id: "%1".into(),
            pane_index: 0,
            pane_active: true,
            pane_pid: 1,
            pane_dead: false,
            pane_dead_status: None,
            pane_dead_signal: None,
            pane_current_command: String::new(),
            pane_current_path: String::new(),
            pane_width: 0,
            pane_height: 0,
        }
    }

    fn session(sid: &str, status: &str) -> MarkedSession {
        MarkedSession {
            id: sid.into(),
            name: sid.into(),
            pane_id: "%1".into(),
            marks: vec![(SESSION_OPTION.into(), status.into())],
        }
    }

    #[test]
    fn only_changed_options_are_written_and_stale_ones_of_ours_unset() {
        let mut s = summary(1, 0, 0, 0, 0, 0);
        let mut it = item(Bucket::Working, "working");
        it.session_id = Some("$1".into());
        s.items.push(it.clone());
        let mut snap = Snapshot {
            panes: vec![pane("$1", "p/b"), pane("$2", "mine"), pane("$3", "old")],
            server_id: Some(ServerId {
                socket: "/tmp/x".into(),
                pid: 1,
                start_time: 1,
            }),
            sessions: vec![
                session("$1", ""),
                session("$2", "user's own value"),
                session("$3", &render_session_tmux(&item(Bucket::Dead, "x"))),
            ],
            ..Snapshot::default()
        };
        let c = option_changes(&s, &snap);
        assert_eq!(
            c,
            vec![
                (None, SUMMARY_OPTION, Some(render_tmux(&s))),
                (
                    Some("$1".into()),
                    SESSION_OPTION,
                    Some(render_session_tmux(&it))
                ),
                (Some("$3".into()), SESSION_OPTION, None),
            ]
        );
        snap.sessions = vec![
            session("$1", &render_session_tmux(&it)),
            session("$2", "user's own value"),
        ];
        snap.options = vec![(SUMMARY_OPTION.into(), render_tmux(&s))];
        assert_eq!(option_changes(&s, &snap), vec![]);
    }
}
