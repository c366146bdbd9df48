//! What tmux prints, read back: the `-F` formats orange asks for ([`Format`]), the rows
//! they print, and the values they become. Every pane field orange reads is listed ONCE,
//! in [`PANE`], with its parser: every pane listing (`snapshot`, `observe`, a new session's
//! ids, `session_info`) asks that list or its first part ([`PaneFields`]), and only
//! [`Format::pane`] turns a row into a [`PaneInfo`]. The server instance's fields are
//! listed once too ([`SERVER`]).

use serde::Serialize;

use crate::error::{OrangeError, Result};

/// Field separator in format output: cannot occur in session names (see `session_name`) and
/// tmux 3.3a passes it through unescaped.
pub(super) const FS: char = '\x1f';
/// Record terminator in format output, so a path containing a newline cannot split a row.
pub(super) const RS: char = '\x1e';

/// One pane of `Tmux::snapshot`. Each field is named as the tmux format it is read from
/// (see [`PANE`]). `Tmux::observe` asks only what the observer reads ([`PaneFields::Observed`]:
/// the session, the pane, its activity and its life): the others stay at their defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PaneInfo {
    pub session_id: String,
    pub session_name: String,
    /// At least one client is attached to the session.
    #[serde(default, skip_serializing_if = "is_default")]
    pub session_attached: bool,
    #[serde(default, skip_serializing_if = "is_default")]
    pub window_id: String,
    #[serde(default, skip_serializing_if = "is_default")]
    pub window_index: u32,
    /// Unix time of the window's last activity.
    pub window_activity: u64,
    pub pane_id: String,
    #[serde(default, skip_serializing_if = "is_default")]
    pub pane_index: u32,
    pub pane_active: bool,
    pub pane_pid: u32,
    /// The pane's terminal is closed: its program has exited (the pane is kept by
    /// `remain-on-exit`), or, rarely, it closed its terminal and runs on.
    pub pane_dead: bool,
    /// Exit status of a dead pane whose program exited normally.
    pub pane_dead_status: Option<i32>,
    /// Signal that killed a dead pane's program.
    pub pane_dead_signal: Option<i32>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub pane_current_command: String,
    #[serde(default, skip_serializing_if = "is_default")]
    pub pane_current_path: String,
    #[serde(default, skip_serializing_if = "is_default")]
    pub pane_width: u32,
    #[serde(default, skip_serializing_if = "is_default")]
    pub pane_height: u32,
}

/// Not written when empty: the fields an observation does not ask (see [`PaneFields`]).
fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

impl PaneInfo {
    /// How the pane's program ended; `None` while it runs (or while tmux has not collected
    /// the exit status of a dead pane: `Tmux::snapshot` already retried that).
    pub fn exit(&self) -> Option<PaneExit> {
        pane_exit_from(self.pane_dead, self.pane_dead_status, self.pane_dead_signal)
    }

    /// Dead, but tmux has not collected how its program ended (see `Tmux::nudge_reaper`).
    pub(super) fn unreaped(&self) -> bool {
        self.pane_dead && self.pane_dead_status.is_none() && self.pane_dead_signal.is_none()
    }
}

/// How a pane's program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PaneExit {
    /// Exited with this status (0 = success).
    Status(i32),
    /// Killed by this signal.
    Signal(i32),
}

fn pane_exit_from(dead: bool, status: Option<i32>, signal: Option<i32>) -> Option<PaneExit> {
    if !dead {
        return None;
    }
    match (status, signal) {
        (_, Some(sig)) => Some(PaneExit::Signal(sig)),
        (Some(code), None) => Some(PaneExit::Status(code)),
        // The pty is closed but tmux has not reaped the process yet: not known yet.
        (None, None) => None,
    }
}

/// A session as tmux created or reports it. Prefer `id` (`$3`) for later calls: it stays
/// exact even if the session is renamed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionInfo {
    pub id: String,
    pub name: String,
    pub window_id: String,
    pub pane_id: String,
    pub pane_pid: u32,
}

impl From<PaneInfo> for SessionInfo {
    /// The session holding this pane, named by this pane.
    fn from(p: PaneInfo) -> SessionInfo {
        SessionInfo {
            id: p.session_id,
            name: p.session_name,
            window_id: p.window_id,
            pane_id: p.pane_id,
            pane_pid: p.pane_pid,
        }
    }
}

/// One tmux server instance: its socket, and the pid and start time that tell it from a
/// later server on the same socket.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub struct ServerId {
    pub socket: String,
    pub pid: u32,
    pub start_time: u64,
}

/// The fields of a [`ServerId`] (any format may ask them: they describe the server).
pub(super) const SERVER: &[&str] = &["socket_path", "pid", "start_time"];

/// Reads one field's text into a [`PaneInfo`].
type Setter = fn(&mut PaneInfo, &str) -> Result<()>;

/// `(name, setter)` for each named field: the field of [`PaneInfo`] and the tmux format
/// share the name, so each is written once.
macro_rules! pane_fields {
    ($($name:ident: $parse:ident),* $(,)?) => {
        &[$((stringify!($name), |p: &mut PaneInfo, v: &str| {
            p.$name = $parse(v, stringify!($name))?;
            Ok(())
        })),*]
    };
}

/// Every field of a [`PaneInfo`], once, in three parts: what the observer reads each pass
/// (identity, activity, life, window), then where the pane is and how big, then the two fields
/// that make the server read `/proc` for every pane. A listing asks a prefix of this list
/// ([`PaneFields`]): each field tmux expands costs the server about as much for every
/// pane, so the observer's query asks only the first part.
pub(super) const PANE: &[(&str, Setter)] = pane_fields![
    session_id: text,
    session_name: text,
    window_activity: num,
    pane_id: text,
    pane_active: flag,
    pane_pid: num,
    pane_dead: flag,
    pane_dead_status: opt_num,
    pane_dead_signal: opt_num,
    // (the window: where an agent's teammates are)
    window_id: text,
    // PaneFields::Placed
    session_attached: count_flag,
    window_index: num,
    pane_index: num,
    pane_width: num,
    pane_height: num,
    // PaneFields::All
    pane_current_command: text,
    pane_current_path: text,
];

/// How many of [`PANE`]'s fields, from the first, the observer reads.
const OBSERVED_FIELDS: usize = 10;
/// How many of [`PANE`]'s fields, at its end, make the server read `/proc`.
const PROC_FIELDS: usize = 2;

/// How much of [`PANE`] a listing asks (each level asks the fields of the one before too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PaneFields {
    /// What the observer reads each pass: the session, the pane, its activity, its life,
    /// its window.
    Observed,
    /// And where the pane is (window, indexes, size) and whether its session is attached.
    Placed,
    /// And its current command and path, which the server reads `/proc` for.
    All,
}

impl PaneFields {
    /// How many of [`PANE`]'s fields, from the first, this level asks.
    fn count(self) -> usize {
        match self {
            PaneFields::Observed => OBSERVED_FIELDS,
            PaneFields::Placed => PANE.len() - PROC_FIELDS,
            PaneFields::All => PANE.len(),
        }
    }
}

/// A `-F` format: the fields asked for (each read as `#{name}`), in order, separated by
/// [`FS`] and each row terminated by [`RS`].
#[derive(Debug, Clone)]
pub(super) struct Format<'a> {
    fields: Vec<&'a str>,
    /// How many of `fields`, from the first, are [`PANE`]'s (read by [`Format::pane`]).
    panes: usize,
}

impl<'a> Format<'a> {
    pub(super) fn of(fields: &[&'a str]) -> Format<'a> {
        Format {
            fields: fields.to_vec(),
            panes: 0,
        }
    }

    /// The fields of a [`PaneInfo`] this level asks (the others stay at their defaults).
    pub(super) fn panes(level: PaneFields) -> Format<'static> {
        let n = level.count();
        Format {
            fields: PANE[..n].iter().map(|(name, _)| *name).collect(),
            panes: n,
        }
    }

    /// These fields too, after those asked so far.
    pub(super) fn and(mut self, more: &[&'a str]) -> Format<'a> {
        self.fields.extend_from_slice(more);
        self
    }

    pub(super) fn fields(&self) -> &[&'a str] {
        &self.fields
    }

    /// Where `name` is in a row. Asking for a field the format does not hold is a bug.
    pub(super) fn at(&self, name: &str) -> usize {
        self.fields
            .iter()
            .position(|f| *f == name)
            .unwrap_or_else(|| panic!("tmux format without {name}"))
    }

    /// The argument of `-F`.
    pub(super) fn arg(&self) -> String {
        let mut f = self
            .fields
            .iter()
            .map(|name| format!("#{{{name}}}"))
            .collect::<Vec<_>>()
            .join(&FS.to_string());
        f.push(RS);
        f
    }

    /// The rows of `out`, each split into its fields.
    pub(super) fn rows<'o>(&self, out: &'o str) -> Result<Vec<Vec<&'o str>>> {
        records(out, self.fields.len())
    }

    /// The [`PaneInfo`] of a row of a format made by [`Format::panes`].
    pub(super) fn pane<S: AsRef<str>>(&self, row: &[S]) -> Result<PaneInfo> {
        let mut p = PaneInfo::default();
        for ((_, set), v) in PANE[..self.panes].iter().zip(row) {
            set(&mut p, v.as_ref())?;
        }
        Ok(p)
    }

    /// The [`ServerId`] of a row of a format that asks [`SERVER`].
    pub(super) fn server<S: AsRef<str>>(&self, row: &[S]) -> Result<ServerId> {
        let get = |name: &str| row[self.at(name)].as_ref();
        Ok(ServerId {
            socket: get("socket_path").to_string(),
            pid: num(get("pid"), "pid")?,
            start_time: num(get("start_time"), "start_time")?,
        })
    }
}

/// Rows of format output, each split into `n` fields.
fn records(out: &str, n: usize) -> Result<Vec<Vec<&str>>> {
    let mut rows = Vec::new();
    for rec in out.split(RS) {
        let rec = rec.strip_prefix('\n').unwrap_or(rec);
        if rec.is_empty() {
            continue;
        }
        let fields: Vec<&str> = rec.split(FS).collect();
        if fields.len() != n {
            return Err(OrangeError::BackendCommandFailed(format!(
                "unexpected tmux output: {} fields instead of {n} in {rec:?}",
                fields.len()
            )));
        }
        rows.push(fields);
    }
    Ok(rows)
}

fn text(field: &str, _: &str) -> Result<String> {
    Ok(field.to_string())
}

/// `1` is true: what tmux prints for a flag.
fn flag(field: &str, _: &str) -> Result<bool> {
    Ok(field == "1")
}

/// A count (such as `session_attached`) read as "any?".
fn count_flag(field: &str, what: &str) -> Result<bool> {
    num::<u32>(field, what).map(|n| n > 0)
}

pub(super) fn num<T: std::str::FromStr>(field: &str, what: &str) -> Result<T> {
    field.parse().map_err(|_| {
        OrangeError::BackendCommandFailed(format!("unexpected tmux output: {what} = {field:?}"))
    })
}

/// Empty is `None` (tmux prints nothing for an unset number such as a live pane's status).
fn opt_num(field: &str, what: &str) -> Result<Option<i32>> {
    if field.is_empty() {
        Ok(None)
    } else {
        num(field, what).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dead_without_status_is_not_an_exit_yet() {
        assert_eq!(pane_exit_from(false, None, None), None);
        assert_eq!(pane_exit_from(true, None, None), None);
        assert_eq!(
            pane_exit_from(true, Some(3), None),
            Some(PaneExit::Status(3))
        );
        assert_eq!(
            pane_exit_from(true, None, Some(9)),
            Some(PaneExit::Signal(9))
        );
    }

    #[test]
    fn records_split_on_separators() {
        let out = format!("a{FS}b{RS}\nc{FS}d\ne{RS}\n");
        let rows = records(&out, 2).unwrap();
        assert_eq!(rows, vec![vec!["a", "b"], vec!["c", "d\ne"]]);
        assert!(records(&format!("a{RS}\n"), 2).is_err());
    }

    /// Each pane field lands in the field of the same name, whatever else the format asks.
    #[test]
    fn a_pane_row_is_read_by_name() {
        let fmt = Format::panes(PaneFields::All).and(&["pid"]);
        let row: Vec<String> = fmt
            .fields()
            .iter()
            .map(|f| match *f {
                "session_attached" => "2".into(),
                "pane_active" | "pane_dead" => "1".into(),
                "pane_dead_status" => "".into(),
                "pane_dead_signal" => "9".into(),
                "window_index" | "window_activity" | "pane_index" | "pane_pid" => "7".into(),
                "pane_width" | "pane_height" | "pid" => "80".into(),
                other => format!("<{other}>"),
            })
            .collect();
        let p = fmt.pane(&row).unwrap();
        assert_eq!(p.session_id, "<session_id>");
        assert_eq!(p.pane_current_path, "<pane_current_path>");
        assert!(p.session_attached && p.pane_active && p.pane_dead);
        assert_eq!(
            (p.pane_dead_status, p.exit()),
            (None, Some(PaneExit::Signal(9)))
        );
        assert_eq!((p.window_index, p.pane_width), (7, 80));
        // Without the /proc fields, they stay empty.
        let cheap = Format::panes(PaneFields::Placed);
        assert!(!cheap.fields().contains(&"pane_current_command"));
        let p = cheap.pane(&row[..cheap.fields().len()]).unwrap();
        assert_eq!(p.pane_current_command, "");
        assert_eq!((p.window_index, p.pane_width), (7, 80));
        // The observer's fields: no size, no indexes.
        let observed = Format::panes(PaneFields::Observed);
        assert_eq!(observed.fields()[..2], ["session_id", "session_name"]);
        let p = observed.pane(&row[..observed.fields().len()]).unwrap();
        assert!(p.pane_dead && p.pane_active && !p.session_attached);
        assert_eq!((p.window_activity, p.pane_pid, p.pane_width), (7, 7, 0));
        assert!(cheap.pane(&["x"; 15]).is_err(), "a number that is not one");
        assert_eq!(
            PANE[OBSERVED_FIELDS - 1..OBSERVED_FIELDS + 1]
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>(),
            ["window_id", "session_attached"],
            "the observer's part of PANE ends where the comment says"
        );
    }
}
