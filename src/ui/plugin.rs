//! The tmux plugin side: sidebar panes, the task-session marker, "next task waiting for
//! you" and the prompt that sends text to an agent ([`send_prompt`]), driven through the tmux adapter (`orange.tmux` and `tmux/*.sh` bind the keys and
//! install the hooks; everything they bind calls the binary).
//!
//! Names shared with `orange.tmux`, `tmux/*.sh` and the other modules:
//! - user options `@orange-*` (global; orange reads them, never sets them): see [`OPTIONS`];
//! - orange's own options `@orange_*`: [`TASK_MARK`] (session: the task id of an orange
//!   task session), [`PANE_SIDEBAR`] (pane: `1` on a sidebar pane), [`PANE_SIDEBAR_FOR`]
//!   (pane: the agent pane a sidebar sits beside), `@orange_bin`/`@orange_dir` (global: set by
//!   `orange.tmux`: the binary and the plugin directory in use).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::adapters::store::Home;
use crate::adapters::tmux::{shell_quote, tmux_quote, OptionScope, Tmux};
use crate::error::{OrangeError, Result};
use crate::orchestration::attention::{self, Item};
use crate::orchestration::task::{Task, TaskStore};

/// Session option naming the task of an orange task session (its id). Set at spawn and
/// respawn; `orange.tmux`'s root keys (Ctrl+\, Ctrl+]) act only where it is set.
use crate::execution::session::TASK_MARK;
/// Pane option set to `1` on a sidebar pane, so a toggle finds it again.
pub const PANE_SIDEBAR: &str = "@orange_sidebar";
/// Pane option of a sidebar pane: the id of the agent pane it sits beside.
pub const PANE_SIDEBAR_FOR: &str = "@orange_sidebar_for";
/// Environment of a sidebar pane: the agent pane it sits beside.
pub const ENV_AGENT_PANE: &str = "ORANGE_AGENT_PANE";

pub const OPT_BIN: &str = "@orange-bin";
pub const OPT_KEY: &str = "@orange-key";
pub const OPT_SIDEBAR_KEY: &str = "@orange-sidebar-key";
pub const OPT_ZOOM_KEY: &str = "@orange-zoom-key";
pub const OPT_SIDEBAR_WIDTH: &str = "@orange-sidebar-width";
pub const OPT_SIDEBAR_SIDE: &str = "@orange-sidebar-side";
pub const OPT_SIDEBAR_AUTO: &str = "@orange-sidebar-auto";
pub const OPT_REFRESH_INTERVAL: &str = "@orange-refresh-interval";
pub const OPT_STATUS_FORMAT: &str = "@orange-status-format";
pub const OPT_HOOKS: &str = "@orange-hooks";
pub const OPT_MONITOR: &str = "@orange-monitor";
/// Read by the monitor's observation (a lower layer): defined there, listed here.
pub const OPT_NOTIFY: &str = crate::orchestration::observe::snapshot::NOTIFY_OPTION;

/// THE table of user options with their defaults. `orange.tmux`'s header documents the
/// same names, and the observer reads some of them: the tests below hold all three to it.
pub const OPTIONS: &[(&str, &str)] = &[
    (OPT_BIN, ""),
    (OPT_KEY, "O"),
    (OPT_SIDEBAR_KEY, "C-\\"),
    (OPT_ZOOM_KEY, "C-]"),
    (OPT_SIDEBAR_WIDTH, "30%"),
    (OPT_SIDEBAR_SIDE, "left"),
    (OPT_SIDEBAR_AUTO, "off"),
    (OPT_REFRESH_INTERVAL, "10"),
    (OPT_STATUS_FORMAT, "tmux"),
    (OPT_HOOKS, "on"),
    (OPT_MONITOR, "on"),
    (OPT_NOTIFY, "bell,message"),
];

/// Below this window size the sidebar is refused (the original hid it below 80×15).
pub const SIDEBAR_MIN_WINDOW: (u32, u32) = (80, 15);
/// The sidebar's width is kept between these percentages of the window.
pub const SIDEBAR_WIDTH_RANGE: (u32, u32) = (15, 50);

/// A user option's value: the global value when set and not empty, else its default.
pub fn user_option(tmux: &Tmux, name: &str) -> Result<String> {
    let default = OPTIONS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, d)| *d)
        .unwrap_or("");
    Ok(tmux
        .get_option(OptionScope::Global, name)?
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| default.to_string()))
}

/// Is an on/off option on?
pub fn is_on(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "on" | "1" | "yes" | "true"
    )
}

/// The sidebar width for `split-window -l`: `N%` kept within [`SIDEBAR_WIDTH_RANGE`], or
/// `N` columns kept within the same share of a `window_width`-wide window. Anything else
/// is the default, 30%.
pub fn sidebar_width(value: &str, window_width: u32) -> String {
    let (lo, hi) = SIDEBAR_WIDTH_RANGE;
    let v = value.trim();
    if let Some(p) = v
        .strip_suffix('%')
        .and_then(|p| p.trim().parse::<u32>().ok())
    {
        return format!("{}%", p.clamp(lo, hi));
    }
    if let Ok(cols) = v.parse::<u32>() {
        let min = (window_width * lo).div_ceil(100).max(1);
        let max = (window_width * hi / 100).max(min);
        return cols.clamp(min, max).to_string();
    }
    "30%".to_string()
}

/// Mark `session` (name or id) as the session of `task_id` ([`TASK_MARK`]). Call it
/// whenever a task's session is created.
pub fn mark_task_session(tmux: &Tmux, session: &str, task_id: &str) -> Result<()> {
    tmux.set_option(OptionScope::Session(session), TASK_MARK, task_id)
}

/// The task whose session is `session_id` (or, for records without an id, `session_name`):
/// the [`TASK_MARK`] option when it names a task, else a scan of the task store.
/// The local session `task attach` opens for a remote task holds its id.
pub const SESSION_REMOTE_TASK: &str = "@orange_remote_task";

pub fn task_of_session(
    home: &Home,
    tmux: &Tmux,
    session_id: &str,
    session_name: &str,
) -> Result<Option<Task>> {
    let store = TaskStore::new(home);
    if let Some(id) = tmux.get_option(OptionScope::Session(session_id), TASK_MARK)? {
        if let Ok(t) = store.find(&id, None) {
            return Ok(Some(t));
        }
    }
    let found = store.list_open(None)?.into_iter().find(|t| {
        !t.status.is_final()
            && (t.tmux_session_id.as_deref() == Some(session_id)
                || (t.tmux_session_id.is_none() && t.tmux_session.as_deref() == Some(session_name)))
    });
    Ok(found)
}

/// The task of the session `$TMUX_PANE` is in (what a key pressed there means).
pub fn task_of_pane(home: &Home, tmux: &Tmux) -> Result<Task> {
    let pane = std::env::var("TMUX_PANE")
        .ok()
        .filter(|p| p.starts_with('%'))
        .ok_or_else(|| OrangeError::invalid("no task: TMUX_PANE is not set (pass --task ID)"))?;
    let here = tmux
        .pane_values(&pane, &["session_id", "session_name"])?
        .ok_or_else(|| OrangeError::invalid(format!("no tmux pane {pane:?}")))?;
    task_of_session(home, tmux, &here[0], &here[1])?
        .ok_or_else(|| OrangeError::invalid(format!("{} is not an orange task session", here[1])))
}

/// `orange sidebar toggle`: open the sidebar beside the current pane (`$TMUX_PANE`), or
/// close it when the window has one. See [`toggle_sidebar_at`].
pub fn toggle_sidebar(home: &Home, tmux: &Tmux) -> Result<Value> {
    let pane = std::env::var("TMUX_PANE")
        .ok()
        .filter(|p| p.starts_with('%'))
        .ok_or_else(|| {
            OrangeError::invalid(
                "`orange sidebar toggle` runs inside tmux: TMUX_PANE is not set (from a key binding, pass the pane: TMUX_PANE=#{pane_id})",
            )
        })?;
    toggle_sidebar_at(home, tmux, &pane)
}

/// Open or close the sidebar of the window holding `pane`. One sidebar per window: when
/// the window has one (a pane marked [`PANE_SIDEBAR`]), it is closed, whichever pane asked.
/// Otherwise a pane is split off `pane` with `-d` (the focus stays on `pane`), on the side of
/// `@orange-sidebar-side`, `@orange-sidebar-width` wide (a percentage, so it follows
/// resizes), running `orange sidebar` (`--task ID` when the session is a task's). A window
/// smaller than [`SIDEBAR_MIN_WINDOW`] is refused: a message on the status line and an error.
pub fn toggle_sidebar_at(home: &Home, tmux: &Tmux, pane: &str) -> Result<Value> {
    let fields = [
        "pane_id",
        "window_id",
        "session_id",
        "session_name",
        "window_width",
        "window_height",
        "pane_current_path",
    ];
    let here = tmux
        .pane_values(pane, &fields)?
        .ok_or_else(|| OrangeError::invalid(format!("no tmux pane {pane:?}")))?;
    let (pane, window, session_id, session_name) = (&here[0], &here[1], &here[2], &here[3]);
    let open: Vec<String> = tmux
        .window_pane_values(window, &["pane_id", PANE_SIDEBAR])?
        .into_iter()
        .filter(|r| r[1] == "1")
        .map(|r| r[0].clone())
        .collect();
    if !open.is_empty() {
        for p in &open {
            tmux.kill_pane(p)?;
        }
        return Ok(json!({"action": "closed", "panes": open, "window": window}));
    }
    let width: u32 = here[4].parse().unwrap_or(0);
    let height: u32 = here[5].parse().unwrap_or(0);
    let (min_w, min_h) = SIDEBAR_MIN_WINDOW;
    if width < min_w || height < min_h {
        return Err(refuse(
            tmux,
            pane,
            format!(
                "orange: the window is too small for the sidebar ({width}×{height}; it needs {min_w}×{min_h})"
            ),
        ));
    }
    let task = task_of_session(home, tmux, session_id, session_name)?;
    let size = sidebar_width(&user_option(tmux, OPT_SIDEBAR_WIDTH)?, width);
    let side = user_option(tmux, OPT_SIDEBAR_SIDE)?;
    let left = side.trim() != "right";
    let command = sidebar_command(tmux, pane, task.as_ref(), session_id, session_name)?;
    let mut env = vec![
        ("ORANGE_HOME".to_string(), home.root.display().to_string()),
        (ENV_AGENT_PANE.to_string(), pane.clone()),
    ];
    if let Ok(sock) = std::env::var("ORANGE_TMUX_SOCKET") {
        if !sock.trim().is_empty() {
            env.push(("ORANGE_TMUX_SOCKET".to_string(), sock));
        }
    }
    let cwd = Path::new(&here[6]);
    let cwd = cwd.is_dir().then_some(cwd);
    let new = tmux.split_pane(pane, left, &size, cwd, &env, &command)?;
    tmux.set_options(&[
        (OptionScope::Pane(&new), PANE_SIDEBAR, Some("1")),
        (
            OptionScope::Pane(&new),
            PANE_SIDEBAR_FOR,
            Some(pane.as_str()),
        ),
    ])?;
    if let Some(t) = &task {
        // Sessions made before orange marked them: mark now, so the root keys know them.
        if tmux
            .get_option(OptionScope::Session(session_id), TASK_MARK)?
            .is_none()
        {
            mark_task_session(tmux, session_id, &t.id)?;
        }
    }
    Ok(json!({
        "action": "opened",
        "pane": new,
        "agent_pane": pane,
        "window": window,
        "session": session_name,
        "task": task.as_ref().map(|t| t.id.clone()),
        "side": if left { "left" } else { "right" },
        "width": size,
    }))
}

/// The error for a sidebar that cannot open, its message shown on `pane`'s status line
/// too (best effort: the error says the same to a caller without a client).
fn refuse(tmux: &Tmux, pane: &str, msg: String) -> OrangeError {
    let _ = tmux.display_message_to(None, Some(pane), &msg);
    OrangeError::invalid(msg.trim_start_matches("orange: "))
}

/// The command a sidebar pane runs: `orange sidebar --task ID` for the session's task, or
/// for the remote task whose local session it is; refused (said on `pane`) elsewhere.
fn sidebar_command(
    tmux: &Tmux,
    pane: &str,
    task: Option<&Task>,
    session_id: &str,
    session_name: &str,
) -> Result<Vec<String>> {
    let mut command = vec![exe_path()?.display().to_string(), "sidebar".to_string()];
    if let Some(t) = task {
        command.extend(["--task".to_string(), t.id.clone()]);
    } else if let Some(id) =
        tmux.get_option(OptionScope::Session(session_id), SESSION_REMOTE_TASK)?
    {
        // The local session of a remote task (`task attach`): its sidebar, drawn here.
        command.extend(["--task".to_string(), id]);
    } else {
        // A sidebar shows one task: here there is none. Said, not a pane that opens and
        // closes at once.
        let msg = format!(
            "orange: {session_name} is not a task session; the sidebar shows a task: pick one with prefix {} l",
            user_option(tmux, OPT_KEY)
                .ok()
                .filter(|k| !k.trim().is_empty())
                .unwrap_or_else(|| "O".into())
        );
        return Err(refuse(tmux, pane, msg));
    }
    Ok(command)
}

/// Open the sidebar in a new task session when `@orange-sidebar-auto` is on (call after
/// the session is created). `Ok(None)` when the option is off or the window has a sidebar.
pub fn auto_sidebar(home: &Home, tmux: &Tmux, session: &str) -> Result<Option<Value>> {
    if !is_on(&user_option(tmux, OPT_SIDEBAR_AUTO)?) {
        return Ok(None);
    }
    let Some(info) = tmux.session_info(session)? else {
        return Ok(None);
    };
    let has_one = tmux
        .window_pane_values(&info.window_id, &[PANE_SIDEBAR])?
        .iter()
        .any(|r| r[0] == "1");
    if has_one {
        return Ok(None);
    }
    toggle_sidebar_at(home, tmux, &info.pane_id).map(Some)
}

/// The orange binary that is running (what the panes and keys it sets up call again).
/// The paste buffer the send prompt leaves a task's text in ([`send_prompt`]): the exact
/// copy; `<name>-1` holds the other.
pub fn send_buffer(task_id: &str) -> String {
    format!("orange-send-{task_id}")
}

/// `prefix O t`, the task menu's "Send text…" and the sidebar's `t`: ask `client` for a
/// text in tmux's `command-prompt`, then `orange task send --from-buffer` it to the agent
/// of task `task_id` (through `tmux/run.sh`, which shows the outcome on the status line).
///
/// What the person types must arrive literally: it never goes through tmux's parser, a
/// format or a shell line. The prompt's command is a `{ … }` block, whose arguments tmux
/// fills with the answer without parsing them again; the answer goes into a paste buffer.
/// tmux 3.3a fills a block's arguments twice — the answer as `%1`, then again as `%2`,
/// and that second pass also replaces a `%%` the person typed — so `%1` may be mangled
/// there while `%2` is exact; a tmux that fills once leaves `%2` as it is. Both copies go
/// to buffers and [`prompt_text`] picks.
pub fn send_prompt(tmux: &Tmux, task_id: &str, client: Option<&str>) -> Result<()> {
    let buffer = send_buffer(task_id);
    let bin = shell_quote(&exe_path()?.display().to_string());
    let send = format!("task send --from-buffer {buffer} {task_id}");
    let line = match tmux.get_option(OptionScope::Global, "@orange_dir")? {
        Some(dir) if Path::new(&dir).join("tmux/run.sh").is_file() => {
            let run = shell_quote(&format!("{dir}/tmux/run.sh"));
            format!("{run} -m - {bin} {send}")
        }
        // No plugin (a sidebar started by hand): an error opens in the pane's view mode.
        _ => format!("{bin} {send} >/dev/null"),
    };
    // run-shell expands formats: a `#` is doubled, and a `%` (which the prompt's filling
    // would take for `%1`) is written as a format that gives one.
    let line = line.replace('#', "##").replace('%', "#{l:%}");
    let then = format!(
        "set-buffer -b {buffer}-1 -- \"%1\" ; set-buffer -b {buffer} -- \"%2\" ; run-shell -b {}",
        tmux_quote(&line)
    );
    tmux.prompt_then(client, &format!("send to task {task_id}: "), &then)
}

/// `v` in a task's sidebar: `task review` of the task in a popup on `client` (the
/// plugin's popup.sh when it is loaded: it waits for a key after an error), started in
/// the background (the sidebar goes on drawing while the person writes the review).
pub fn review_popup(tmux: &Tmux, task_id: &str, client: Option<&str>) -> Result<()> {
    let bin = shell_quote(&exe_path()?.display().to_string());
    let inner = match tmux.get_option(OptionScope::Global, "@orange_dir")? {
        Some(dir) if Path::new(&dir).join("tmux/popup.sh").is_file() => format!(
            "{} {bin} review {}",
            shell_quote(&format!("{dir}/tmux/popup.sh")),
            shell_quote(task_id)
        ),
        _ => format!("{bin} task review {}", shell_quote(task_id)),
    };
    let client = client
        .map(|c| format!(" -c {}", shell_quote(c)))
        .unwrap_or_default();
    tmux.run_shell_background(&format!(
        "tmux display-popup{client} -E -w 90% -h 85% -T {} {}",
        shell_quote(&format!(" orange: review task {task_id} ")),
        shell_quote(&inner)
    ))
}

/// The text [`send_prompt`] left in `buffer` (and `<buffer>-1`), both buffers deleted: the
/// exact copy, unless tmux filled only `%1` (then `buffer` holds `%2` as written).
pub fn prompt_text(tmux: &Tmux, buffer: &str) -> Result<String> {
    let exact = tmux.take_buffer(buffer)?;
    let first = tmux.take_buffer(&format!("{buffer}-1"))?;
    match (exact, first) {
        (Some(e), Some(f)) if e == "%2" => Ok(f),
        (Some(e), _) => Ok(e),
        (None, Some(f)) => Ok(f),
        (None, None) => Err(OrangeError::invalid(format!(
            "no text to send: tmux has no buffer {buffer} (the prompt was empty or cancelled)"
        ))),
    }
}

fn exe_path() -> Result<PathBuf> {
    std::env::current_exe().map_err(|e| OrangeError::io("finding the orange binary", e))
}

/// The next task (or lane) that needs its person ([`attention::needs_you`]: the one
/// definition) after the current one, in creation order and round again: a local one only
/// when its session exists (`sessions`: the ids tmux has); a remote one always
/// (it is attached through ssh). The current one is the item of `current_session` (a
/// session id), or the remote task `current_task` (the local session of an attached
/// remote task holds its id).
pub fn next_waiting<'i>(
    items: &'i [Item],
    sessions: &[&str],
    current_session: Option<&str>,
    current_task: Option<&str>,
) -> Option<&'i Item> {
    let key = |i: &'i Item| (i.created_at.as_str(), i.id.as_str());
    let mut waiting: Vec<&Item> = items
        .iter()
        .filter(|i| {
            i.host.is_some()
                || i.session_id
                    .as_deref()
                    .is_some_and(|s| sessions.contains(&s))
        })
        .filter(|i| attention::needs_you(i))
        .collect();
    waiting.sort_by_key(|i| key(i));
    let here = items
        .iter()
        .find(|i| match &i.host {
            None => current_session.is_some() && i.session_id.as_deref() == current_session,
            Some(_) => current_task == Some(i.id.as_str()),
        })
        .map(key);
    match here {
        Some(k) => waiting
            .iter()
            .find(|i| key(i) > k)
            .or(waiting.first())
            .copied(),
        None => waiting.first().copied(),
    }
}

/// `plugin next`: the item to go to, or `None` (said on the client's status line).
pub fn pick_next(
    home: &Home,
    tmux: &Tmux,
    client: Option<&str>,
    session: Option<&str>,
) -> Result<Option<Item>> {
    let snap = crate::orchestration::observe::snapshot::current(home, tmux)?;
    let sessions: Vec<&str> = snap.sessions.iter().map(|s| s.id.as_str()).collect();
    let remote_task = match session {
        Some(s) => tmux.get_option(OptionScope::Session(s), SESSION_REMOTE_TASK)?,
        None => None,
    };
    let next = next_waiting(
        &snap.summary.items,
        &sessions,
        session,
        remote_task.as_deref(),
    )
    .cloned();
    if next.is_none() {
        let _ = tmux.display_message_to(client, None, "orange: no task is waiting for you");
    }
    Ok(next)
}

/// Say on the client's status line where `plugin next` went.
pub fn said_next(tmux: &Tmux, client: Option<&str>, next: &Item) -> String {
    let msg = format!(
        "orange: {} {}/{}{} [{}] {}",
        next.id,
        next.project,
        next.branch,
        next.host
            .as_deref()
            .map(|h| format!(" on {h}"))
            .unwrap_or_default(),
        next.status,
        next.reason
    );
    let _ = tmux.display_message_to(client, None, &msg);
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The user options `orange.tmux`'s header documents (`#   @orange-…`).
    fn documented() -> Vec<String> {
        let text = include_str!("../../orange.tmux");
        text.lines()
            .take_while(|l| l.starts_with('#') || l.is_empty())
            .filter_map(|l| l.strip_prefix("#   @orange-"))
            .map(|l| format!("@orange-{}", l.split_whitespace().next().unwrap_or("")))
            .collect()
    }

    #[test]
    fn one_table_of_user_options() {
        let table: Vec<&str> = OPTIONS.iter().map(|(n, _)| *n).collect();
        let mut doc = documented();
        doc.sort();
        let mut sorted: Vec<String> = table.iter().map(|s| s.to_string()).collect();
        sorted.sort();
        assert_eq!(sorted, doc, "OPTIONS and orange.tmux's header differ");
        for name in crate::orchestration::observe::snapshot::KEY_OPTIONS
            .iter()
            .chain([&crate::orchestration::observe::snapshot::NOTIFY_OPTION])
            .filter(|n| n.starts_with("@orange-"))
        {
            assert!(table.contains(name), "{name} is read but not in OPTIONS");
        }
    }

    use crate::orchestration::attention::Bucket;

    #[test]
    fn sidebar_widths_are_clamped() {
        assert_eq!(sidebar_width("30%", 200), "30%");
        assert_eq!(sidebar_width(" 5% ", 200), "15%");
        assert_eq!(sidebar_width("90%", 200), "50%");
        assert_eq!(sidebar_width("40", 200), "40");
        assert_eq!(sidebar_width("10", 200), "30");
        assert_eq!(sidebar_width("150", 200), "100");
        assert_eq!(sidebar_width("wide", 200), "30%");
        assert_eq!(sidebar_width("", 200), "30%");
    }

    #[test]
    fn on_off_values() {
        for on in ["on", "ON", "1", "yes", "true"] {
            assert!(is_on(on), "{on}");
        }
        for off in ["off", "", "0", "no", "nope"] {
            assert!(!is_on(off), "{off}");
        }
    }

    fn item(id: &str, created: &str, bucket: Bucket) -> Item {
        Item {
            kind: attention::ItemKind::Task,
            id: id.into(),
            project: "p".into(),
            branch: format!("b/{id}"),
            status: "working".into(),
            bucket,
            reason: String::new(),
            session: None,
            session_id: Some(format!("${id}")),
            exit_status: None,
            exit_signal: None,
            created_at: created.into(),
            host: None,
            harness: String::new(),
            next: None,
        }
    }

    #[test]
    fn next_waiting_cycles_in_creation_order() {
        let items = vec![
            item("1", "2024-01-01T00:00:01", Bucket::Working),
            item("2", "2024-01-01T00:00:02", Bucket::Waiting),
            item("3", "2024-01-01T00:00:03", Bucket::Dead),
            item("4", "2024-01-01T00:00:04", Bucket::Review),
            item("5", "2024-01-01T00:00:05", Bucket::Waiting),
            item("6", "2024-01-01T00:00:06", Bucket::Queued),
            item("7", "2024-01-01T00:00:07", Bucket::Review),
        ];
        // Task 4's session is gone: it cannot be switched to.
        let sessions = ["$1", "$2", "$3", "$5", "$6", "$7"];
        let id = |i: Option<&Item>| i.map(|i| i.id.clone());
        let next = |cur| id(next_waiting(&items, &sessions, cur, None));
        assert_eq!(next(None), Some("2".into()));
        assert_eq!(next(Some("$1")), Some("2".into()));
        assert_eq!(next(Some("$2")), Some("3".into()));
        assert_eq!(next(Some("$3")), Some("5".into()));
        assert_eq!(next(Some("$5")), Some("7".into()));
        assert_eq!(next(Some("$7")), Some("2".into()));
        assert_eq!(next(Some("$99")), Some("2".into()));
        assert_eq!(id(next_waiting(&items[..1], &sessions, None, None)), None);
    }
}
