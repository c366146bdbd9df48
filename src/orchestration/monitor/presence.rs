//! Is a tmux server watched? Every agent is, with or without the plugin: a command that
//! starts an agent on a server no monitor watches starts one there, detached, the way the
//! plugin does (`run-shell -b`, so it lives and ends with that server), unless the
//! server's `@orange-monitor` is `off`. `task list`, `status` and `doctor` say when a
//! server's tasks have no monitor.
//!
//! A monitor's presence is its lock (`run/monitor-<key>.lock`, see
//! [`super::run::singleton`]) held: looked at without running a process.

use std::path::PathBuf;

use serde::Serialize;

use crate::adapters::shell;
use crate::adapters::store::Home;
use crate::adapters::tmux::{OptionScope, ServerId, Tmux};
use crate::error::Result;
use crate::orchestration::observe::snapshot;

/// The tmux option that turns the monitor off for a server (the plugin's, read here too).
pub const OPT_MONITOR: &str = "@orange-monitor";

/// Whether a monitor watches the tmux server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "monitor", rename_all = "snake_case")]
pub enum Watch {
    /// No tmux server runs: nothing to watch.
    NoServer,
    /// A monitor watches it.
    Watched,
    /// No monitor watches it; `off`: its `@orange-monitor` is `off`, so none starts by
    /// itself.
    Unwatched { off: bool },
}

impl Watch {
    /// What a person is told when no monitor watches (`None`: nothing to say).
    pub fn warning(&self) -> Option<String> {
        let why = match self {
            Watch::Unwatched { off: false } => "",
            Watch::Unwatched { off: true } => " (its @orange-monitor is off)",
            _ => return None,
        };
        Some(format!(
            "no monitor watches this tmux server{why}: agent states are not updated and no \
             policy acts; `orange monitor` starts one{}",
            if why.is_empty() {
                " (so does starting a task)"
            } else {
                ""
            }
        ))
    }
}

/// The identity file of the monitor of `server`, beside its lock (see
/// [`super::run::singleton`]).
pub fn identity_file(home: &Home, server: &ServerId) -> PathBuf {
    let socket = snapshot::file_key(&server.socket);
    let key = format!("{socket}-{}-{}", server.pid, server.start_time);
    home.root.join("run").join(format!("monitor-{key}.json"))
}

/// Does a monitor watch the server `tmux` talks to? While one does, no process is run
/// (its lock is looked at: [`snapshot::monitor_running`]); else two tmux calls (is there
/// a server, is its monitor off).
pub fn watch(home: &Home, tmux: &Tmux) -> Result<Watch> {
    if snapshot::monitor_running(home, tmux) {
        return Ok(Watch::Watched);
    }
    if tmux.server_identity()?.is_none() {
        return Ok(Watch::NoServer);
    }
    Ok(Watch::Unwatched {
        off: turned_off(tmux),
    })
}

/// Is the server's `@orange-monitor` `off`?
fn turned_off(tmux: &Tmux) -> bool {
    tmux.get_option(OptionScope::Global, OPT_MONITOR)
        .ok()
        .flatten()
        .is_some_and(|v| v.trim() == "off")
}

/// After a command started an agent: when no monitor watches its tmux server (and the
/// server's `@orange-monitor` is not `off`), start one there, detached (`run-shell -b`,
/// this very binary, this `ORANGE_HOME`). A second one started at the same moment by
/// another command or the plugin exits at once ([`super::run::singleton`]). Returns the watch
/// as it was found.
pub fn ensure(home: &Home, tmux: &Tmux) -> Result<Watch> {
    let found = watch(home, tmux)?;
    if found != (Watch::Unwatched { off: false }) {
        return Ok(found);
    }
    let Some(server) = tmux.server_identity()? else {
        return Ok(Watch::NoServer);
    };
    let exe = std::env::current_exe().map_err(|e| crate::error::OrangeError::Io {
        context: "finding this orange binary".into(),
        source: e,
    })?;
    let line = format!(
        "ORANGE_HOME={} ORANGE_TMUX_SOCKET={} exec {} monitor >/dev/null 2>&1",
        shell::quote(&home.root.display().to_string()),
        shell::quote(&server.socket),
        shell::quote(&exe.display().to_string()),
    );
    tmux.run_shell_background(&line)?;
    crate::adapters::store::log(
        home,
        "info",
        "monitor started for a tmux server none watched",
        serde_json::json!({"socket": server.socket}),
    );
    Ok(found)
}
