//! Is a tmux server watched? Every agent is, with or without the plugin: a command that
//! starts an agent on a server no monitor watches starts one there, detached, the way the
//! plugin does (`run-shell -b`, so it lives and ends with that server), unless the
//! server's `@orange-monitor` is `off`. `task list`, `status` and `doctor` say when a
//! server's tasks have no monitor.
//!
//! A monitor's presence is its identity file beside its lock (`run/monitor-<key>.json`,
//! see [`super::run::singleton`]) naming a live process: read, never locked, so asking never
//! stops a monitor that is starting at that moment.

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
    /// A monitor watches it (process `pid`).
    Watched { pid: u32 },
    /// No monitor watches it; `off`: its `@orange-monitor` is `off`, so none starts by
    /// itself.
    Unwatched { off: bool },
}

impl Watch {
    /// What a person is told when no monitor watches (`None`: nothing to say).
    pub fn warning(&self) -> Option<String> {
        match self {
            Watch::Unwatched { off: false } => Some(
                "no monitor watches this tmux server: agent states are not updated and no \
                 policy acts; `orange monitor` starts one (so does starting a task)"
                    .into(),
            ),
            Watch::Unwatched { off: true } => Some(
                "no monitor watches this tmux server (its @orange-monitor is off): agent \
                 states are not updated and no policy acts; `orange monitor` starts one"
                    .into(),
            ),
            _ => None,
        }
    }
}

/// The identity file of the monitor of `server` (see [`super::run::singleton`]).
pub fn identity_file(home: &Home, server: &ServerId) -> PathBuf {
    let socket = snapshot::file_key(&server.socket);
    let key = format!("{socket}-{}-{}", server.pid, server.start_time);
    home.root.join("run").join(format!("monitor-{key}.json"))
}

/// Does a monitor watch the server `tmux` talks to?
pub fn watch(home: &Home, tmux: &Tmux) -> Result<Watch> {
    let Some(server) = tmux.server_identity()? else {
        return Ok(Watch::NoServer);
    };
    Ok(watch_of(home, tmux, &server))
}

fn watch_of(home: &Home, tmux: &Tmux, server: &ServerId) -> Watch {
    let pid = std::fs::read(identity_file(home, server))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v["pid"].as_u64())
        .and_then(|p| u32::try_from(p).ok())
        .filter(|p| shell::process_alive(*p));
    match pid {
        Some(pid) => Watch::Watched { pid },
        None => Watch::Unwatched {
            off: turned_off(tmux),
        },
    }
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
    let Some(server) = tmux.server_identity()? else {
        return Ok(Watch::NoServer);
    };
    let found = watch_of(home, tmux, &server);
    if found == (Watch::Unwatched { off: false }) {
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
    }
    Ok(found)
}
