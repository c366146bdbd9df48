//! `orange monitor`: one pass ([`once`]) or the loop ([`watch`]) that runs passes until its
//! tmux server stops: one monitor per tmux server instance and ORANGE_HOME ([`singleton`]),
//! a pass every interval or at once when something is poked, remote hosts fetched beside
//! the passes. After each pass, under its lock: the snapshot written for the readers, the
//! status widgets published, the people attached told what newly needs them
//! ([`publish_and_notify`]).
//!
//! The widgets are drawn by the layer above (`ui::status::publish`): the command hands that
//! function in ([`Widgets`]), so this loop never imports what presents it.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::adapters::store::{self, Home, LockGuard};
use crate::adapters::tmux::{ServerId, Tmux};
use crate::error::{OrangeError, Result};
use crate::orchestration::host;
use crate::orchestration::observe::snapshot::{self, Snapshot};

use super::{notify, Monitor, PassReport};

/// Publishes a snapshot's summary as the status widgets (tmux options).
pub type Widgets = fn(&Tmux, &Snapshot) -> Result<()>;

/// Why [`watch`] returned (`orange monitor` prints it as `{"running": false, "reason"}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It never started: no tmux server runs.
    NoServer,
    /// It never started: another monitor watches this server.
    AlreadyRuns,
    /// Its data root is gone (a removed sandbox): nothing to watch, nothing to write.
    HomeGone,
    /// The server it watched was stopped, or replaced by a new one on the same socket.
    ServerGone,
    /// The server has no sessions left (two passes in a row).
    NoSessions,
}

impl Ended {
    pub fn reason(self) -> &'static str {
        match self {
            Ended::NoServer => "no tmux server runs",
            Ended::AlreadyRuns => "a monitor already runs for this tmux server",
            Ended::HomeGone => "ORANGE_HOME is gone",
            Ended::ServerGone => "the tmux server it watched was stopped or replaced",
            Ended::NoSessions => "the tmux server has no sessions left",
        }
    }
}

/// One pass (`orange monitor --once`): remote hosts fetched first (one ssh call each, at
/// once: the pass's summary shows them), the pass, its snapshot published and told. The
/// report's `pass_ms` covers all of it but the start of the process.
pub fn once(home: &Home, tmux: &Tmux, widgets: Widgets) -> Result<PassReport> {
    let started = Instant::now();
    host::fetch_all(home);
    let mut m = Monitor::new(home, tmux.clone())?;
    let mut r = m.pass()?;
    if let Some(snap) = r.snapshot.take() {
        publish_and_notify(home, tmux, &snap, widgets);
    }
    crate::orchestration::group::auto::judge_due(home);
    r.pass_ms = (started.elapsed().as_secs_f64() * 1e5).round() / 100.0;
    Ok(r)
}

/// `orange monitor --passes N`: N passes back to back, each made and published as the
/// running monitor ([`watch`]) makes its passes (one [`Monitor`], which keeps what it
/// read while nothing changes), with no process start, no remote hosts and no wait between
/// them; their reports, oldest first (each `pass_ms` from the look to
/// the end of publishing). What `scripts/bench.sh` times as the pass in the monitor. None
/// when no tmux server runs. `poke`: what is poked before each pass but the first (not
/// timed), for the pass to read again.
pub fn passes(
    home: &Home,
    tmux: &Tmux,
    n: u32,
    poke: Poke,
    widgets: Widgets,
) -> Result<Vec<PassReport>> {
    let Some(server) = tmux.server_identity()? else {
        return Ok(Vec::new());
    };
    let mut reports = Vec::new();
    let mut m = Monitor::new(home, tmux.clone())?.on_server(server);
    let mut published = Published::default();
    let first = crate::orchestration::task::TaskStore::new(home)
        .list_open_lenient()
        .0
        .into_iter()
        .next();
    for i in 0..n {
        match (&poke, &first) {
            _ if i == 0 => {}
            (Poke::Task, Some(t)) => store::poke_task(home, &t.project, &t.id),
            (Poke::Other, _) => store::poke_other(home),
            (Poke::Task | Poke::All, _) => store::poke(home),
            (Poke::Nothing, _) => {}
        }
        let started = Instant::now();
        m.refresh_config()?;
        let mut r = m.pass()?;
        if let Some(snap) = r.snapshot.take() {
            published.again(home, tmux, snap, widgets);
        }
        r.pass_ms = (started.elapsed().as_secs_f64() * 1e5).round() / 100.0;
        // The next pass takes the pass lock again.
        r.lock = None;
        reports.push(r);
    }
    Ok(reports)
}

/// What [`passes`] pokes before each pass but the first.
pub enum Poke {
    Nothing,
    /// One open task's files, as its agent's hook does.
    Task,
    /// None of the tasks' files, as a command or a tmux hook does after what it saved.
    Other,
    /// Anything (a poke that does not say).
    All,
}

/// The monitor (`orange monitor`): passes every `interval` (sooner when poked) until its
/// tmux server stops or loses its last session, or its data root goes.
pub fn watch(home: &Home, tmux: &Tmux, interval: Duration, widgets: Widgets) -> Result<Ended> {
    let Some(server) = tmux.server_identity()? else {
        return Ok(Ended::NoServer);
    };
    let Some(guard) = singleton(home, &server)? else {
        return Ok(Ended::AlreadyRuns);
    };
    let stop = |ended: Ended| {
        let _ = std::fs::remove_file(guard.path().with_extension("json"));
        let _ = std::fs::remove_file(guard.path());
        Ok(ended)
    };
    watch_hosts(home, interval);
    let mut idle_servers = 0;
    // One monitor for every pass: what it read, it keeps while nothing changes.
    let mut m = Monitor::new(home, tmux.clone())?.on_server(server.clone());
    let mut published = Published::default();
    loop {
        // Its data root is gone (a removed sandbox): nothing to watch, nothing to write.
        if !home.root.exists() {
            return Ok(Ended::HomeGone);
        }
        let started = Instant::now();
        let pokes = store::pokes(home);
        m.refresh_config()?;
        match m.pass() {
            Ok(mut r) => {
                let snap = r.snapshot.take().unwrap_or_default();
                // The server it watches is gone, or replaced by a new one on the same
                // socket: that one is not this monitor's (it gets its own).
                if snap.server_id.as_ref() != Some(&server) {
                    return stop(Ended::ServerGone);
                }
                // Stop with the tmux server: a monitor must not outlive what it watches.
                let no_sessions = snap.sessions.is_empty();
                published.again(home, tmux, snap, widgets);
                crate::orchestration::group::auto::judge_due(home);
                if no_sessions {
                    idle_servers += 1;
                    if idle_servers >= 2 {
                        return stop(Ended::NoSessions);
                    }
                } else {
                    idle_servers = 0;
                }
            }
            Err(e) => store::log(
                home,
                "error",
                "monitor pass failed",
                json!({"error": e.to_string(), "code": e.code()}),
            ),
        }
        wait_for_poke(
            home,
            started,
            pokes,
            interval.max(Duration::from_millis(200)),
        );
    }
}

/// Remote hosts, beside the passes so a slow or unreachable host never delays
/// one: every `interval`, each host's snapshot over its one connection (one ssh call per
/// host, at once), and at once when a command here changed something on a host
/// (`run/hosts/poke`); a poke when what they show changed, so the next pass publishes it.
fn watch_hosts(home: &Home, interval: Duration) {
    let home = home.clone();
    std::thread::spawn(move || {
        let mut last: Vec<(String, bool, Option<String>, serde_json::Value)> = Vec::new();
        let poked = host::poke_path(&home);
        loop {
            let started = Instant::now();
            // Counted before the fetch: a poke during it asks for another one.
            let count = store::pokes_at(&poked);
            let seen: Vec<_> = host::fetch_all(&home)
                .into_iter()
                .map(|s| {
                    let summary = serde_json::to_value(&s.summary).unwrap_or_default();
                    (s.name, s.reachable, s.error, summary)
                })
                .collect();
            if seen != last {
                store::poke_other(&home);
                last = seen;
            }
            // Until the interval is over, or a command changed something on a host.
            std::thread::sleep(Duration::from_millis(250));
            while started.elapsed() < interval && store::pokes_at(&poked) == count {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    });
}

/// Sleep until `interval` has passed since `started`, or until something is poked after
/// the pass began (the count of pokes moved from `pokes`: a command changed a task, a
/// hook fired, the pass itself changed something): one `stat` every 50 ms, and never sooner than
/// 250 ms after the last pass began.
fn wait_for_poke(home: &Home, started: Instant, pokes: u64, interval: Duration) {
    const TICK: Duration = Duration::from_millis(50);
    // Passes at most four times a second, even when each pokes (its own changes do).
    const MIN_GAP: Duration = Duration::from_millis(250);
    if let Some(rest) = MIN_GAP.checked_sub(started.elapsed()) {
        std::thread::sleep(rest);
    }
    while store::pokes(home) == pokes {
        let waited = started.elapsed();
        if waited >= interval {
            return;
        }
        std::thread::sleep(TICK.min(interval - waited));
    }
}

/// The lock that makes `orange monitor` one per tmux server instance and ORANGE_HOME
/// (`run/monitor-<socket>-<pid>-<start>.lock`, its identity beside it in `.json`): a new
/// server on the same socket gets its own monitor while the old one notices its server is
/// gone and exits.
pub fn singleton(home: &Home, server: &ServerId) -> Result<Option<LockGuard>> {
    let path = super::presence::identity_file(home, server).with_extension("lock");
    match LockGuard::acquire_within(&path, Duration::from_millis(0)) {
        Ok(g) => {
            let _ = store::write_json_atomic(
                &path.with_extension("json"),
                &json!({"pid": std::process::id(), "server": server}),
            );
            Ok(Some(g))
        }
        Err(OrangeError::LockTimeout { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Write a pass's snapshot for the readers and publish the status widgets. Errors are not
/// the monitor's business: the next pass publishes again.
pub fn publish(home: &Home, tmux: &Tmux, snap: &Snapshot, widgets: Widgets) {
    snapshot::write(home, tmux, snap);
    let _ = widgets(tmux, snap);
}

/// How long the running monitor goes without writing its snapshot again when each pass
/// sees the same (well within `snapshot::MAX_AGE`, past which readers stop trusting it).
pub const REWRITE: Duration = Duration::from_secs(20);

/// What the running monitor last published ([`Published::again`]).
#[derive(Default)]
struct Published {
    /// The last snapshot, and when it was written with its widgets published.
    last: Option<(Snapshot, Instant)>,
    /// Telling the people attached was settled after it (see `notify::after_pass`).
    settled: bool,
}

impl Published {
    /// [`publish_and_notify`], but what the last pass published is not published again,
    /// for up to [`REWRITE`]: a snapshot that says what the last one said (all but the time
    /// it was taken) is not written again (readers trust the file as it is), and the
    /// widgets are not worked out again while what they are made from is the same (they
    /// were set from it; not when that failed: then the next pass publishes again). The
    /// people attached are told every pass (what is due depends on the time too) unless
    /// that was settled and what it is told from is the same.
    fn again(&mut self, home: &Home, tmux: &Tmux, snap: Snapshot, widgets: Widgets) {
        let last = self.last.take().filter(|(_, at)| at.elapsed() < REWRITE);
        let (write, publish) = match &last {
            Some((was, _)) => (!was.same_as(&snap), !was.same_for_widgets(&snap)),
            None => (true, true),
        };
        if write {
            snapshot::write(home, tmux, &snap);
        }
        let published = !publish || widgets(tmux, &snap).is_ok();
        if publish || !self.settled {
            self.settled = notify::after_pass(home, tmux, &snap);
        }
        super::replies::after_pass(home, tmux);
        let at = match last {
            Some((_, at)) if !write => at,
            _ => Instant::now(),
        };
        self.last = published.then_some((snap, at));
    }
}

/// [`publish`], then tell the people attached what newly needs them (only a monitor pass
/// does: its report holds the pass lock while this runs).
pub fn publish_and_notify(home: &Home, tmux: &Tmux, snap: &Snapshot, widgets: Widgets) {
    publish(home, tmux, snap, widgets);
    notify::after_pass(home, tmux, snap);
    super::replies::after_pass(home, tmux);
}
