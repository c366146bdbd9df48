//! The session layer as lanes see it: one interface over the tmux and zellij adapters
//! (seed 001 §9: the backend is chosen per lane).

use std::path::Path;

use serde::Serialize;

use crate::adapters::store::Home;
use crate::adapters::tmux::{NewSession, PaneExit, PaneInfo, ServerId, Tmux};
use crate::adapters::zellij::Zellij;
use crate::error::{OrangeError, Result};

#[derive(Debug, Clone)]
pub enum Mux {
    Tmux(Tmux),
    Zellij(Zellij),
}

/// A started session: what to address it by later.
#[derive(Debug, Clone, PartialEq)]
pub struct Started {
    pub target: String,
    /// tmux's session id (`$3`); none for zellij.
    pub id: Option<String>,
    /// tmux's id of the agent's pane (`%7`); none for zellij.
    pub pane: Option<String>,
    /// The tmux server instance that made it; none for zellij.
    pub server: Option<ServerId>,
}

/// Is the session there, and did its program exit (how)?
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Liveness {
    pub session_exists: bool,
    pub agent_running: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_signal: Option<i32>,
    /// Unix time of the last output seen (tmux only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_activity: Option<u64>,
}

impl Mux {
    pub fn named(backend: &str) -> Result<Mux> {
        match backend {
            "tmux" => Ok(Mux::Tmux(Tmux::from_env())),
            "zellij" => Ok(Mux::Zellij(Zellij::default())),
            other => Err(OrangeError::invalid(format!(
                "unknown multiplexer {other:?}: tmux or zellij"
            ))),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Mux::Tmux(_) => "tmux",
            Mux::Zellij(_) => "zellij",
        }
    }

    pub fn preflight(&self) -> Result<()> {
        match self {
            Mux::Tmux(t) => t.preflight(),
            Mux::Zellij(z) => z.preflight(),
        }
    }

    /// Start each of `specs` detached (zellij reports the exit status through its
    /// `exit_file`), in order; one answer each, `None` when another session has its name
    /// (left as it was). tmux makes them in as few calls as it can
    /// ([`Tmux::new_sessions_unless_taken`]); zellij one after the other.
    pub fn start_many(&self, specs: &[(&NewSession, &Path)]) -> Vec<Result<Option<Started>>> {
        match self {
            Mux::Tmux(t) => {
                let specs: Vec<NewSession> = specs.iter().map(|(s, _)| (*s).clone()).collect();
                t.new_sessions_unless_taken(&specs)
                    .into_iter()
                    .map(|made| {
                        Ok(made?.map(|m| Started {
                            target: m.info.name,
                            id: Some(m.info.id),
                            pane: Some(m.info.pane_id),
                            server: Some(m.server),
                        }))
                    })
                    .collect()
            }
            Mux::Zellij(z) => specs
                .iter()
                .map(|(spec, exit_file)| {
                    let _ = std::fs::remove_file(exit_file);
                    z.create(spec, exit_file)?;
                    Ok(Some(Started {
                        target: spec.name.clone(),
                        id: None,
                        pane: None,
                        server: None,
                    }))
                })
                .collect(),
        }
    }

    /// `panes`: tmux's pane list when the caller already has one (one query for many
    /// lanes); `None` asks tmux.
    pub fn liveness(
        &self,
        target: &str,
        exit_file: &Path,
        panes: Option<&[PaneInfo]>,
    ) -> Result<Liveness> {
        let from_file = || {
            std::fs::read_to_string(exit_file)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok())
        };
        match self {
            Mux::Tmux(t) => {
                let owned;
                let panes = match panes {
                    Some(p) => p,
                    None => {
                        owned = t.snapshot()?;
                        &owned[..]
                    }
                };
                let pane = panes
                    .iter()
                    .find(|p| p.session_id == target || p.session_name == target);
                Ok(match pane {
                    None => Liveness {
                        session_exists: false,
                        agent_running: false,
                        exit_status: None,
                        exit_signal: None,
                        last_activity: None,
                    },
                    Some(p) => {
                        let exit = p.exit();
                        Liveness {
                            session_exists: true,
                            agent_running: !p.pane_dead,
                            exit_status: match exit {
                                Some(PaneExit::Status(c)) => Some(c),
                                _ => None,
                            },
                            exit_signal: match exit {
                                Some(PaneExit::Signal(s)) => Some(s),
                                _ => None,
                            },
                            last_activity: Some(p.window_activity),
                        }
                    }
                })
            }
            Mux::Zellij(z) => {
                let exists = z.exists(target)?;
                let code = from_file();
                Ok(Liveness {
                    session_exists: exists,
                    agent_running: exists && code.is_none(),
                    exit_status: code,
                    exit_signal: None,
                    last_activity: None,
                })
            }
        }
    }

    pub fn kill(&self, target: &str) -> Result<bool> {
        match self {
            Mux::Tmux(t) => t.kill_session(target),
            Mux::Zellij(z) => z.kill(target),
        }
    }

    /// A command line that attaches a terminal to the session.
    pub fn attach_hint(&self, name: &str) -> String {
        let argv = match self {
            Mux::Tmux(t) => t.attach_command(name),
            Mux::Zellij(z) => z.attach_command(name),
        };
        crate::adapters::tmux::shell_join(&argv)
    }
}

// --- marks: what every session orange starts carries (see `reconcile`) -------------------

/// A task's session: the value is the task id (the plugin's keys, picker, Ctrl+\\ and
/// Ctrl+] act only where it is set).
pub const TASK_MARK: &str = "@orange_task";
pub const LANE_MARK: &str = "@orange_lane";
pub const HOME_MARK: &str = "@orange_home";
pub const PROJECT_MARK: &str = "@orange_project";
pub const WORKSPACE_MARK: &str = "@orange_workspace";
/// A group member's place in the picker (`group api/fix ┬ /1 `, `└ /3 `): what tmux's
/// choose-tree shows before its status. Only tmux reads it.
pub const TREE_MARK: &str = "@orange_tree";
pub const MARKS: &[&str] = &[
    TASK_MARK,
    LANE_MARK,
    HOME_MARK,
    PROJECT_MARK,
    WORKSPACE_MARK,
];

/// How a session names its ORANGE_HOME: the canonical path (however `ORANGE_HOME` was
/// spelled: a trailing slash, a symlink).
pub fn home_key(home: &Home) -> String {
    home.root
        .canonicalize()
        .unwrap_or_else(|_| home.root.clone())
        .display()
        .to_string()
}

/// The marks of a task's session.
pub fn task_marks(home: &Home, project: &str, id: &str, workspace: &str) -> Vec<(String, String)> {
    vec![
        (TASK_MARK.into(), id.into()),
        (HOME_MARK.into(), home_key(home)),
        (PROJECT_MARK.into(), project.into()),
        (WORKSPACE_MARK.into(), workspace.into()),
    ]
}

/// The marks of a lane's session.
pub fn lane_marks(home: &Home, project: &str, lane_id: &str) -> Vec<(String, String)> {
    vec![
        (LANE_MARK.into(), lane_id.into()),
        (HOME_MARK.into(), home_key(home)),
        (PROJECT_MARK.into(), project.into()),
    ]
}
