//! The agent monitor: one pass looks at every active task with ONE tmux query, decides
//! each agent's state from the best signal (hook > Claude log > pane > screen), and applies
//! the task's policies: on_idle (nudge once per idle period), on_exit (recover, escalate,
//! done; two crashes make the task stuck), on_error (per kind).
//!
//! - [`pass`](Monitor::pass) (`pass.rs`): one pass, from the look at tmux to the snapshot
//!   it leaves for the caller;
//! - `judge.rs`: what state one agent is in, and that verdict written into its record;
//! - `act.rs`: what the task's policies do with it (nudge, recover, escalate, done);
//! - [`hook`]: what an agent's own hooks say, recorded for the next pass;
//! - `kept.rs`: what a monitor keeps between its passes, and when it reads each again
//!   (`reread.rs`: the reads that keep it);
//! - [`run`]: `orange monitor`, its loop and what follows each pass (publish, notify);
//! - [`presence`]: whether a monitor watches a tmux server, and starting one when none does;
//! - [`prs`]: the pull requests of open tasks, refreshed at most once a minute per project;
//! - [`notify`]: telling the people attached what newly needs them;
//! - `fleet.rs`: the queue behind the caps on running agents, moved on at each pass;
//! - [`phone`], [`replies`]: ntfy, webhook and Slack notifications, and answers from the
//!   phone polled from ntfy.
//! - `review.rs`: reviewer agents: their ends read, `[review] on_complete` started.

use std::time::Duration;

use serde::Serialize;

use crate::adapters::store::{Home, LockGuard};
use crate::adapters::tmux::Tmux;
use crate::error::Result;
use crate::execution::config::Config;
use crate::orchestration::observe::snapshot::Snapshot;
use crate::orchestration::screen;
use crate::orchestration::task::service::TaskService;
use crate::orchestration::task::Task;

mod act;
mod fleet;
pub mod hook;
mod judge;
mod kept;
mod limit;
pub mod notify;
mod pass;
pub mod phone;
pub mod presence;
pub mod prs;
pub mod replies;
mod reread;
mod review;
pub mod run;
mod verdict;

pub use hook::agent_hook;

pub const DEFAULT_IDLE_GRACE: Duration = Duration::from_secs(60);
/// What an idle nudge types by default (kept with the one path that types into agents).
pub use crate::orchestration::task::send::DEFAULT_NUDGE;
/// Crashes (exits without the required outcome) after which a task is stuck.
pub const CRASH_LIMIT: u32 = 2;
/// Idle periods nudged without progress before the monitor escalates instead.
pub const DEFAULT_MAX_NUDGES: u32 = 2;

/// What one pass saw and did, per task.
#[derive(Debug, Default, Serialize)]
pub struct PassReport {
    pub checked: usize,
    pub actions: Vec<serde_json::Value>,
    pub states: Vec<serde_json::Value>,
    /// What the pass saw, classified after its policies acted: the observer's snapshot.
    #[serde(skip)]
    pub snapshot: Option<Snapshot>,
    /// How long the pass took in the monitor (ms): looking, repairing, judging, writing the
    /// snapshot and publishing; not the start of an `orange` process.
    pub pass_ms: f64,
    /// How long of it reading what the agents use took (ms; 0 when it read nothing).
    pub footprint_ms: f64,
    /// The pass lock, held until the report is dropped: the caller writes, publishes and
    /// notifies ([`notify::after_pass`]) under it, so two passes
    /// never tell the same change.
    #[serde(skip)]
    pub lock: Option<LockGuard>,
}

/// Agent timestamps are precise: a hook and a monitor pass often fall in the same second.
/// On [`grace_clock`], as the monitor's graces are (the same format as
/// `store::now_precise`).
fn now_s() -> String {
    grace_clock().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// The clock the monitor's graces are measured on: the real time, plus `ORANGE_CLOCK_SKEW`
/// (a duration such as `2s`) when set. A test stands that much later than an agent's last
/// activity without sleeping through a grace.
fn grace_clock() -> chrono::DateTime<chrono::Utc> {
    crate::orchestration::limits::clock()
}

fn age(since: &str, now: chrono::DateTime<chrono::Utc>) -> Duration {
    chrono::DateTime::parse_from_rfc3339(since)
        .map(|t| now.signed_duration_since(t).to_std().unwrap_or_default())
        .unwrap_or_default()
}

pub struct Monitor<'a> {
    home: &'a Home,
    tasks: TaskService<'a>,
    config: Config,
    tmux: Tmux,
    /// The count of pokes before the pass read the open tasks (see `store::poke`).
    tasks_read_at: u64,
    /// What it read in its last passes, and the workspaces' paths (see `kept.rs`).
    kept: kept::Kept,
    /// The task being checked was respawned by its policy (its agent.json is new).
    respawned: bool,
    /// The tmux server instance watched: tasks started on another are not this monitor's.
    server: Option<crate::adapters::tmux::ServerId>,
    /// What started the pass (`monitor`, `hook:pane-died`…), written with what it records.
    via: String,
    /// How each harness's screen is read (config.toml's patterns and the built-in ones),
    /// compiled once, when a pass first needs them ([`Self::prepare_rules`]).
    rules: std::collections::HashMap<String, screen::Rules>,
    /// Panes known to be sidebars (see `teammates::observe`).
    sidebars: std::collections::HashSet<String>,
    /// Whether each task had teammates at its last pass (its `teammates.json` is only
    /// written, or looked at, when that may change: never per pass for a lone agent).
    had_teammates: std::collections::HashMap<String, bool>,
    /// What each agent's tree uses, read every few seconds (`footprint`).
    footprint: crate::orchestration::footprint::Reader,
}

impl<'a> Monitor<'a> {
    /// Watch this server instance (the one the monitor loop checked), not whichever
    /// answers on the socket now.
    pub fn on_server(mut self, server: crate::adapters::tmux::ServerId) -> Self {
        self.server = Some(server);
        self
    }

    /// Name what started the passes (recorded as `via` in the events they write).
    pub fn via(mut self, via: &str) -> Self {
        self.via = via.to_string();
        self
    }

    pub fn new(home: &'a Home, tmux: Tmux) -> Result<Monitor<'a>> {
        // The version of config.toml, taken before it is read: a change meanwhile is read again.
        let kept = kept::Kept::of_config(crate::adapters::store::stamp(&home.config_file()));
        Ok(Monitor {
            home,
            tasks: TaskService::new(home).with_tmux(tmux.clone()),
            config: Config::load(home)?,
            rules: Default::default(),
            sidebars: Default::default(),
            had_teammates: Default::default(),
            footprint: Default::default(),
            tmux,
            tasks_read_at: 0,
            kept,
            respawned: false,
            server: None,
            via: "monitor".into(),
        })
    }

    /// Compile the screen rules of the harnesses these tasks run (those not compiled yet):
    /// a pass compiles only what the agents it watches need.
    fn prepare_rules<'t>(&mut self, tasks: impl Iterator<Item = &'t Task>) {
        for t in tasks {
            if !self.rules.contains_key(&t.harness) {
                let r = screen::Rules::of(&t.harness, &self.config);
                self.rules.insert(t.harness.clone(), r);
            }
        }
    }

    /// What the agent's screen shows (one `capture-pane` of its visible screen).
    fn read_screen(&self, task: &Task, pane: &str) -> Option<screen::Screen> {
        let text = self.tmux.capture_pane(pane, 0).ok()?;
        self.rules_of(&task.harness).classify(&text)
    }

    /// The screen rules of a harness (none for one config.toml no longer names).
    fn rules_of(&self, harness: &str) -> &screen::Rules {
        self.rules
            .get(harness)
            .unwrap_or_else(|| screen::Rules::builtin(harness))
    }

    fn workspace_path(&self, task: &Task) -> Option<std::path::PathBuf> {
        task.workspace
            .as_ref()
            .and_then(|w| self.kept.workspaces.get(w))
            .cloned()
    }
}
