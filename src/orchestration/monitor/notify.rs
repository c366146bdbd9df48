//! Notifications (`@orange-notify`, DESIGN.md "Notifications"): when a task starts to need
//! you, the monitor tells the people attached to its tmux server, once per change.
//!
//! - What needs you is [`classify::needs_you`] (named by [`classify::need`]): blocked,
//!   error, dead, escalated, waiting, review. An agent whose turn ended rings only after it
//!   was seen working: one that started idle does not.
//! - Once per change: what was told is kept in `run/notified-<socket>.json` (written
//!   atomically), keyed by task and need. An item that stops needing you leaves it, so a
//!   recurrence rings again; a different need of the same task is a change.
//! - Never for the session the person looks at: an item whose session is an attached
//!   client's current one is recorded as seen, and not told. A remote host's item never
//!   claims a local session.
//! - No storm: everything new in one pass is ONE message (a summary when several), one
//!   bell, one desktop notification; and notifications are at least [`GAP`] apart (what
//!   comes in between waits for the next pass after it, and is summarized then).
//! - How (`@orange-notify`, read in the observation's one tmux call; unset: `bell,message`):
//!   `bell` (a BEL written to each attached client's terminal), `message`
//!   (`display-message` on each attached client), `osc` (OSC 9 and OSC 777 written to each
//!   client's terminal: desktop notifications from terminals that take them, through tmux
//!   without `allow-passthrough`), `desktop` (`notify-send`, when on PATH, never waited on
//!   for more than a few seconds), `off`. Unknown words are ignored (logged once).
//! - Beyond the terminal: `[notify]` in config.toml (ntfy, webhook, slack; `phone.rs`),
//!   told the same message at the same moment, sent in the background.
//!
//! Only the monitor's passes notify (the background monitor, `monitor --once`, a hook's
//! pass when no monitor runs), under the pass lock: never two processes for one change.
//! Nothing new: no tmux call, no write.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::adapters::shell;
use crate::adapters::store::{self, Home};
use crate::adapters::tmux::{ClientInfo, Tmux};
use crate::orchestration::attention::classify::{self, Bucket, Item, Need};
use crate::orchestration::attention::next::NextStep;
use crate::orchestration::observe::snapshot::{self, Snapshot};

/// What an unset (or empty) `@orange-notify` means.
pub const DEFAULT: &str = "bell,message";
/// The least time between two notifications.
pub const GAP: Duration = Duration::from_secs(3);
/// How long `notify-send` may take before it is killed.
const DESKTOP_LIMIT: Duration = Duration::from_secs(5);
/// Names listed in a summary; the rest are counted.
const LISTED: usize = 4;
/// The longest message, in characters.
const MAX_CHARS: usize = 200;

/// The ways to notify that `@orange-notify` turns on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Channels {
    pub bell: bool,
    pub message: bool,
    pub desktop: bool,
    pub osc: bool,
    /// `off`: nothing at all, not even `[notify]`'s channels (ntfy, webhook, slack: on
    /// when config.toml configures them; their words are accepted here).
    pub off: bool,
}

impl Channels {
    /// The option's value (`None` or empty: [`DEFAULT`]): words separated by commas or
    /// spaces; `off` turns everything off. The unknown words are returned.
    pub fn parse(value: Option<&str>) -> (Channels, Vec<String>) {
        let value = value
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .unwrap_or(DEFAULT);
        let mut c = Channels::default();
        let mut unknown = Vec::new();
        let mut off = false;
        for word in value.split([',', ' ']).filter(|w| !w.is_empty()) {
            match word.to_ascii_lowercase().as_str() {
                "bell" => c.bell = true,
                "message" => c.message = true,
                "desktop" => c.desktop = true,
                "osc" => c.osc = true,
                "ntfy" | "webhook" | "slack" => {}
                "off" => off = true,
                _ => unknown.push(word.to_string()),
            }
        }
        if off {
            c = Channels {
                off: true,
                ..Channels::default()
            };
        }
        (c, unknown)
    }

    pub fn any(&self) -> bool {
        self.bell || self.message || self.desktop || self.osc
    }
}

/// What was told, kept between passes (`run/notified-<socket>.json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Notified {
    /// The items that need you and were told or seen: `host|kind|project|id#need`.
    #[serde(default)]
    pub told: BTreeSet<String>,
    /// Tasks seen working since they last needed you: their turn's end rings.
    #[serde(default)]
    pub worked: BTreeSet<String>,
    /// When the last notification went out (ms since the epoch).
    #[serde(default)]
    pub last_ms: u64,
    /// The option value whose unknown words were logged (logged once per value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warned: Option<String>,
}

/// One item of a pass, and the state to keep after it.
#[derive(Debug)]
pub struct Plan<'a> {
    pub next: Notified,
    /// What newly needs you, to tell now.
    pub fresh: Vec<(&'a Item, Need)>,
    /// New ones held back for the next pass after [`GAP`].
    pub deferred: usize,
}

fn task_key(item: &Item) -> String {
    format!(
        "{}|{}|{}|{}",
        item.host.as_deref().unwrap_or(""),
        item.kind,
        item.project,
        item.id
    )
}

/// THE decision (pure): given what was told before and this pass's items, what is new.
pub fn plan<'a>(prev: &Notified, items: &'a [Item], now_ms: u64) -> Plan<'a> {
    let mut next = Notified {
        last_ms: prev.last_ms,
        warned: prev.warned.clone(),
        ..Notified::default()
    };
    let mut new = Vec::new();
    for item in items {
        let task = task_key(item);
        let Some(need) = classify::need(item) else {
            if item.bucket == Bucket::Working || prev.worked.contains(&task) {
                next.worked.insert(task);
            }
            continue;
        };
        let key = format!("{task}#{}", need.as_str());
        if prev.told.contains(&key) {
            next.told.insert(key);
        } else if classify::turn_ended(item) && !prev.worked.contains(&task) {
            // Idle since it started (or since it last needed you): seen, not told.
            next.told.insert(key);
        } else {
            new.push((item, need, key, task));
        }
    }
    let due = now_ms < prev.last_ms || now_ms - prev.last_ms >= GAP.as_millis() as u64;
    let mut fresh = Vec::new();
    let mut deferred = 0;
    for (item, need, key, task) in new {
        if due {
            next.told.insert(key);
            fresh.push((item, need));
        } else {
            // Still new at the next pass: its mark of work kept until then.
            if prev.worked.contains(&task) {
                next.worked.insert(task);
            }
            deferred += 1;
        }
    }
    Plan {
        next,
        fresh,
        deferred,
    }
}

/// How an item is named to people: `project/branch`, `… on HOST` for a remote one.
fn name(item: &Item) -> String {
    let base = format!("{}/{}", item.project, item.branch);
    match &item.host {
        Some(h) => format!("{base} on {h}"),
        None => base,
    }
}

/// Text safe for a status line and inside an escape sequence (an OSC payload): one line,
/// every control character shown, never sent ([`crate::text::safe_line`]).
fn clean(s: &str) -> String {
    crate::text::safe_line(s).into_owned()
}

/// The one message for what is new: `orange: app/fix needs you (killed (signal 9)) —
/// next: respawn: orange task respawn 3fa2` (its next step, in the words of every other
/// surface; no key: the person looks at another session, where the key would act on
/// another task), or `orange: 3 tasks need you: app/fix (waiting), web/x (dead), … and 1
/// more`; at most [`MAX_CHARS`] characters.
pub fn render(fresh: &[(&Item, Need)]) -> String {
    let (text, step) = match fresh {
        [] => return String::new(),
        [(item, _)] => (
            format!("orange: {} needs you ({})", name(item), item.reason),
            NextStep::of_item(item, None).map(|s| clean(&format!(" — next: {}", s.text))),
        ),
        many => {
            let listed: Vec<String> = many
                .iter()
                .take(LISTED)
                .map(|(i, n)| format!("{} ({})", name(i), n.as_str()))
                .collect();
            let mut s = format!(
                "orange: {} tasks need you: {}",
                many.len(),
                listed.join(", ")
            );
            if many.len() > LISTED {
                s.push_str(&format!(" and {} more", many.len() - LISTED));
            }
            (s, None)
        }
    };
    // A long reason is cut, never the step after it.
    let step = step.unwrap_or_default();
    let room = MAX_CHARS.saturating_sub(step.chars().count());
    let text = clean(&text);
    if text.chars().count() <= room {
        return text + &step;
    }
    let mut cut: String = text.chars().take(room.saturating_sub(1)).collect();
    cut.push('…');
    cut + &step
}

/// What is written to each client's terminal: the bell (BEL), and with `osc` the message
/// as OSC 9 (`ESC ] 9 ; msg BEL`) and OSC 777 (`ESC ] 777 ; notify ; orange ; msg BEL`).
pub fn escapes(msg: &str, channels: Channels) -> Vec<u8> {
    let mut out = Vec::new();
    if channels.bell {
        out.push(0x07);
    }
    if channels.osc {
        let m = clean(msg);
        out.extend_from_slice(format!("\x1b]9;{m}\x07\x1b]777;notify;orange;{m}\x07").as_bytes());
    }
    out
}

/// `notify-send`'s argv: the title `orange` and the message as its body.
pub fn desktop_args(msg: &str) -> Vec<String> {
    let body = msg.strip_prefix("orange: ").unwrap_or(msg);
    let body = if body.starts_with('-') {
        format!(" {body}")
    } else {
        body.to_string()
    };
    vec!["--app-name=orange".into(), "orange".into(), body]
}

/// Does an attached client look at the item's session? Never a remote host's item.
fn looked_at(item: &Item, clients: &[ClientInfo]) -> bool {
    if item.host.is_some() {
        return false;
    }
    clients
        .iter()
        .any(|c| match (&item.session_id, &item.session) {
            (Some(id), _) => *id == c.session_id,
            (None, Some(name)) => *name == c.session,
            (None, None) => false,
        })
}

/// `run/notified-<socket>.json`.
pub fn path(home: &Home, tmux: &Tmux) -> PathBuf {
    home.run_dir().join(format!(
        "notified-{}.json",
        snapshot::file_key(&snapshot::server_key(tmux))
    ))
}

/// After a monitor pass wrote and published its snapshot (under the pass lock): tell what
/// newly needs you. Errors are logged, never returned: notifying must not stop a pass.
/// Whether it was settled: nothing new to tell or held back, nothing to write (the same
/// items and options again would find it so again, whatever the time).
pub fn after_pass(home: &Home, tmux: &Tmux, snap: &Snapshot) -> bool {
    if snap.server_id.is_none() {
        return false;
    }
    let file = path(home, tmux);
    let prev: Notified = store::read_json(&file).unwrap_or_else(|e| {
        store::log(
            home,
            "warn",
            "notification state unreadable; starting afresh",
            json!({"error": e.to_string(), "path": file}),
        );
        Notified::default()
    });
    let value = snap.notify_value();
    let (channels, unknown) = Channels::parse(value);
    let now = snapshot::now_ms();
    let plan = plan(&prev, &snap.summary.items, now);
    let mut next = plan.next;
    next.warned = None;
    if !unknown.is_empty() {
        let value = value.unwrap_or_default().to_string();
        if prev.warned.as_deref() != Some(value.as_str()) {
            store::log(
                home,
                "warn",
                "@orange-notify: unknown words ignored",
                json!({"value": value, "unknown": unknown}),
            );
        }
        next.warned = Some(value);
    }
    // `[notify]`'s channels (read only when there is something to tell).
    let remote = (!plan.fresh.is_empty() && !channels.off)
        .then(|| crate::execution::config::Config::load(home).ok())
        .flatten()
        .map(|c| c.notify)
        .filter(|n| n.any());
    if (channels.any() || remote.is_some())
        && !plan.fresh.is_empty()
        && deliver(home, tmux, channels, remote.is_some(), &plan.fresh)
    {
        next.last_ms = now;
    }
    let settled = plan.fresh.is_empty() && plan.deferred == 0 && next == prev;
    if next != prev {
        if let Err(e) = store::write_json_atomic(&file, &next) {
            store::log(
                home,
                "warn",
                "notification state not written",
                json!({"error": e.to_string(), "code": e.code()}),
            );
        }
    }
    settled
}

/// Tell `fresh` to the attached clients (and the desktop): one message. `false` when
/// nothing was told (every item is looked at, or nobody to tell).
fn deliver(
    home: &Home,
    tmux: &Tmux,
    channels: Channels,
    remote: bool,
    fresh: &[(&Item, Need)],
) -> bool {
    let clients = tmux.clients().unwrap_or_else(|e| {
        store::log(
            home,
            "warn",
            "notify: listing the clients failed",
            json!({"error": e.to_string()}),
        );
        Vec::new()
    });
    let told: Vec<(&Item, Need)> = fresh
        .iter()
        .filter(|(item, _)| !looked_at(item, &clients))
        .copied()
        .collect();
    if told.is_empty() {
        return false;
    }
    let desktop = channels.desktop && shell::on_path("notify-send");
    if clients.is_empty() && !desktop && !remote {
        return false;
    }
    let msg = render(&told);
    if remote {
        super::phone::send(home, &super::phone::outgoing(&told, &msg));
    }
    let bytes = escapes(&msg, channels);
    if !bytes.is_empty() {
        for (tty, e) in tmux.write_to_clients(&clients, &bytes) {
            store::log(
                home,
                "warn",
                "notify: writing to a client's terminal failed",
                json!({"tty": tty, "error": e.to_string()}),
            );
        }
    }
    if channels.message {
        let names: Vec<&str> = clients.iter().map(|c| c.name.as_str()).collect();
        if let Err(e) = tmux.display_to_clients(&names, &msg) {
            store::log(
                home,
                "warn",
                "notify: display-message failed",
                json!({"error": e.to_string()}),
            );
        }
    }
    if desktop {
        if let Err(e) = shell::spawn_limited("notify-send", &desktop_args(&msg), DESKTOP_LIMIT) {
            store::log(
                home,
                "warn",
                "notify: notify-send failed",
                json!({"error": e.to_string()}),
            );
        }
    }
    store::log(
        home,
        "info",
        "notified",
        json!({
            "message": msg,
            "items": told.iter().map(|(i, n)| json!({"id": i.id, "project": i.project, "host": i.host, "need": n.as_str()})).collect::<Vec<_>>(),
            "clients": clients.len(),
            "desktop": desktop,
            "remote": remote,
        }),
    );
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, bucket: Bucket, reason: &str) -> Item {
        Item {
            kind: classify::ItemKind::Task,
            id: id.into(),
            project: "app".into(),
            branch: format!("b-{id}"),
            status: "working".into(),
            bucket,
            reason: reason.into(),
            session: Some(format!("app/b-{id}")),
            session_id: Some(format!("${id}")),
            exit_status: None,
            exit_signal: None,
            created_at: String::new(),
            host: None,
            harness: String::new(),
            next: None,
        }
    }

    fn working(id: &str) -> Item {
        item(id, Bucket::Working, "working")
    }
    fn waiting(id: &str) -> Item {
        item(id, Bucket::Waiting, "waiting for input")
    }
    fn dead(id: &str) -> Item {
        item(id, Bucket::Dead, "exited 3")
    }

    /// A pass at `t` seconds; the ids told.
    fn pass(state: &mut Notified, items: &[Item], t: u64) -> Vec<String> {
        let p = plan(state, items, t * 1000);
        *state = p.next;
        let told: Vec<String> = p.fresh.iter().map(|(i, _)| i.id.clone()).collect();
        if !told.is_empty() {
            state.last_ms = t * 1000;
        }
        told
    }

    #[test]
    fn an_agent_waiting_for_its_first_prompt_is_never_told() {
        // Seen at work (its screen drew), then waiting: the end of a turn rings; waiting for
        // the first prompt of an agent started without one does not.
        let worked = |id: &str| Notified {
            worked: [format!("|task|app|{id}")].into(),
            ..Notified::default()
        };
        let first = item("f", Bucket::Waiting, classify::FIRST_PROMPT);
        assert!(pass(&mut worked("f"), &[first], 10).is_empty());
        assert_eq!(pass(&mut worked("w"), &[waiting("w")], 10), ["w"]);
    }

    #[test]
    fn option_words() {
        let on = |v: Option<&str>| Channels::parse(v).0;
        let default = Channels {
            bell: true,
            message: true,
            ..Channels::default()
        };
        assert_eq!(on(None), default);
        assert_eq!(on(Some("  ")), default);
        assert_eq!(
            on(Some("desktop, OSC")),
            Channels {
                desktop: true,
                osc: true,
                ..Channels::default()
            }
        );
        assert!(!on(Some("off")).any());
        assert!(!on(Some("bell,off")).any());
        let (c, unknown) = Channels::parse(Some("bell,popup"));
        assert_eq!(
            c,
            Channels {
                bell: true,
                ..Channels::default()
            }
        );
        assert_eq!(unknown, vec!["popup".to_string()]);
    }

    #[test]
    fn once_per_change_and_again_after_it_recurs() {
        let mut s = Notified::default();
        assert!(pass(&mut s, &[working("1")], 0).is_empty());
        assert_eq!(pass(&mut s, &[waiting("1")], 10), ["1"]);
        assert!(pass(&mut s, &[waiting("1")], 20).is_empty());
        assert!(pass(&mut s, &[waiting("1")], 30).is_empty());
        // Works again, stops again: told again.
        assert!(pass(&mut s, &[working("1")], 40).is_empty());
        assert_eq!(pass(&mut s, &[waiting("1")], 50), ["1"]);
        // Another need of the same task is a change; so is its death.
        assert_eq!(pass(&mut s, &[dead("1")], 60), ["1"]);
        assert!(pass(&mut s, &[dead("1")], 70).is_empty());
        // Gone from the snapshot: forgotten.
        pass(&mut s, &[], 80);
        assert!(s.told.is_empty() && s.worked.is_empty(), "{s:?}");
    }

    #[test]
    fn an_agent_idle_since_it_started_does_not_ring_but_a_death_does() {
        let mut s = Notified::default();
        assert!(pass(&mut s, &[waiting("1")], 0).is_empty());
        assert!(pass(&mut s, &[waiting("1")], 10).is_empty());
        let question = item("2", Bucket::Waiting, "question for you");
        assert!(pass(&mut s, &[question], 20).is_empty());
        let stuck = item("3", Bucket::Waiting, "stuck");
        assert_eq!(pass(&mut s, &[stuck], 30), ["3"]);
        assert_eq!(pass(&mut s, &[dead("4")], 40), ["4"]);
        // Told once, its mark of work is spent: escalated then waiting again is no news.
        let mut s = Notified::default();
        pass(&mut s, &[working("5")], 0);
        let esc = item("5", Bucket::Waiting, "escalated: idle");
        assert_eq!(pass(&mut s, std::slice::from_ref(&esc), 10), ["5"]);
        assert!(pass(&mut s, &[waiting("5")], 20).is_empty());
    }

    #[test]
    fn many_at_once_are_one_summary_and_a_burst_waits_for_the_gap() {
        let mut s = Notified::default();
        let ids: Vec<String> = (0..10).map(|i| i.to_string()).collect();
        let w: Vec<Item> = ids.iter().map(|i| working(i)).collect();
        pass(&mut s, &w, 0);
        let stopped: Vec<Item> = ids.iter().map(|i| waiting(i)).collect();
        let p = plan(&s, &stopped, 10_000);
        assert_eq!(p.fresh.len(), 10);
        let msg = render(&p.fresh);
        assert!(
            msg.starts_with("orange: 10 tasks need you: app/b-0 (waiting), app/b-1 (waiting)"),
            "{msg}"
        );
        assert!(msg.ends_with(" and 6 more"), "{msg}");
        // Within the gap after a notification: held, then told together.
        let mut s = Notified::default();
        pass(&mut s, &w, 0);
        let mut now = stopped.clone();
        now.truncate(1);
        now.extend(w[1..].iter().cloned());
        assert_eq!(pass(&mut s, &now, 10), ["0"]);
        let p = plan(&s, &stopped[..5], 11_000);
        assert!(p.fresh.is_empty());
        assert_eq!(p.deferred, 4);
        s = p.next;
        assert_eq!(pass(&mut s, &stopped[..5], 12).len(), 0);
        assert_eq!(pass(&mut s, &stopped[..5], 13), ["1", "2", "3", "4"]);
    }

    #[test]
    fn messages_and_escapes() {
        let one = render(&[(&dead("1"), Need::Dead)]);
        assert_eq!(one, "orange: app/b-1 needs you (exited 3)");
        // With its next step (what the snapshot's item carries), in every surface's words.
        let mut killed = dead("1");
        killed.reason = "killed (signal 9)".into();
        killed.next = Some(crate::orchestration::attention::next::Action::Respawn);
        assert_eq!(
            render(&[(&killed, Need::Dead)]),
            "orange: app/b-1 needs you (killed (signal 9)) — next: respawn: orange task respawn 1"
        );
        // A long reason is cut; the step stays whole.
        killed.reason = "y".repeat(500);
        let long = render(&[(&killed, Need::Dead)]);
        assert_eq!(long.chars().count(), MAX_CHARS);
        assert!(
            long.ends_with("y… — next: respawn: orange task respawn 1"),
            "{long}"
        );
        let mut remote = waiting("2");
        remote.host = Some("box".into());
        remote.reason = "escalated: the agent asks:\x1b[31m what?\n".into();
        let text = render(&[(&remote, Need::Escalated)]);
        assert_eq!(
            text,
            "orange: app/b-2 on box needs you (escalated: the agent asks:␛[31m what?␤)"
        );
        remote.reason = "x".repeat(500);
        assert_eq!(
            render(&[(&remote, Need::Waiting)]).chars().count(),
            MAX_CHARS
        );
        let bell = Channels {
            bell: true,
            ..Channels::default()
        };
        assert_eq!(escapes("hi", bell), b"\x07");
        let osc = Channels {
            osc: true,
            ..Channels::default()
        };
        assert_eq!(
            escapes("a\x07b", osc),
            "\x1b]9;a␇b\x07\x1b]777;notify;orange;a␇b\x07".as_bytes()
        );
        assert_eq!(
            desktop_args(&one),
            [
                "--app-name=orange",
                "orange",
                "app/b-1 needs you (exited 3)"
            ]
        );
    }

    #[test]
    fn the_session_looked_at_is_not_told_and_a_remote_item_never_is_it() {
        let client = ClientInfo {
            name: "/dev/pts/1".into(),
            tty: "/dev/pts/1".into(),
            session: "app/b-1".into(),
            session_id: "$1".into(),
            pane_id: "%1".into(),
            control: false,
        };
        assert!(looked_at(&waiting("1"), std::slice::from_ref(&client)));
        assert!(!looked_at(&waiting("2"), std::slice::from_ref(&client)));
        let mut remote = waiting("1");
        remote.host = Some("box".into());
        assert!(!looked_at(&remote, &[client]));
    }
}
