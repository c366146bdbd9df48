//! The one way orange starts an agent: a task's first start and its respawns (and so
//! `restore`), a lane's, and every later kind of agent. A [`Launch`] names the workspace,
//! the harness, the prompt, the conversation, the sandbox, the session's marks; it is
//! made [`Ready`] (the harness's workspace setup, the conversation, the argv, wrapped in
//! the sandbox), the caller records its intent (what the agent is started with is on disk
//! before it runs), then [`Ready::start`] starts the session with the one environment
//! every agent gets ([`env`]) under the one session name ([`session_name`]). Agents
//! started together hand their [`Ready::prepared`] sessions to [`start_many`], which
//! makes them all at once (one tmux call).
//!
//! The caller prepares the workspace itself (a task's branch and TASK.md, a lane's new
//! worktree) and keeps its own records: this file knows no task store and no lane
//! registry.

use std::path::{Path, PathBuf};

use crate::adapters::mux::NewSession;
use crate::adapters::pty;
use crate::adapters::store::Home;
use crate::adapters::tmux::session_char_ok;
use crate::error::{OrangeError, Result};
use crate::execution::config::Config;
use crate::execution::harness::{self, declared, osc, Conversation, Harness, Start};
use crate::execution::pool;
use crate::execution::repo::Project;
use crate::execution::resources;
use crate::execution::sandbox;
use crate::execution::session::{self, Mux};

/// Whom an agent works for: its id names it in its environment (`ORANGE_TASK_ID`,
/// `ORANGE_LANE_ID`) and tells its session from another of the same branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner<'a> {
    Task(&'a str),
    Lane(&'a str),
    /// A second agent reviewing a task's work in its workspace: read-only in a sandbox,
    /// and `ORANGE_REVIEWER` in its environment (its hooks are its own, never its task's).
    Reviewer(&'a str),
}

/// Set in a reviewer's environment (its value: the task's id).
pub const REVIEWER_ENV: &str = "ORANGE_REVIEWER";

impl Owner<'_> {
    pub fn id(&self) -> &str {
        match self {
            Owner::Task(id) | Owner::Lane(id) | Owner::Reviewer(id) => id,
        }
    }
}

/// Where an agent works.
#[derive(Debug, Clone, Copy)]
pub struct Workspace<'a> {
    pub path: &'a Path,
    /// A pooled workspace's name (`app--2`: its slot gives `ORANGE_WORKSPACE_INDEX` and
    /// `ORANGE_PORT`); `None` for a worktree of its own (a lane's).
    pub name: Option<&'a str>,
}

/// Everything that starts one agent.
pub struct Launch<'a> {
    pub home: &'a Home,
    pub config: &'a Config,
    pub project: &'a Project,
    pub owner: Owner<'a>,
    pub branch: &'a str,
    pub workspace: Workspace<'a>,
    pub harness: &'a Harness,
    pub start: Start,
    /// The agent's prompt; `None`: it starts interactive.
    pub prompt: Option<String>,
    /// A conversation id: on a first start, the new conversation's (a lane's, chosen
    /// before); on a respawn, the one to continue when the program saved it.
    pub conversation: Option<&'a str>,
    /// The permission mode of the first start, which a respawn keeps (`None` on a first
    /// start: config.toml's).
    pub permission_mode: Option<&'a str>,
    pub sandbox: sandbox::Kind,
    /// The resource limits of its process tree (`execution::resources`).
    pub limits: resources::Limits,
    /// The agent's own part of orange's data (a task's `agent/`): writable in a sandbox.
    pub agent_dir: &'a Path,
    /// Its TASK.md, when it has one (writable in a sandbox).
    pub task_md: Option<&'a Path>,
    pub mux: &'a Mux,
    /// Where zellij writes the agent's exit status (tmux keeps a dead pane's itself).
    pub exit_file: Option<&'a Path>,
    /// The session's marks (`session::task_marks`, `session::lane_marks`).
    pub marks: Vec<(String, String)>,
}

/// An agent ready to start: what it will be started with.
pub struct Ready<'a> {
    launch: &'a Launch<'a>,
    pub argv: Vec<String>,
    /// Its conversation (a program that takes one).
    pub conversation: Option<Conversation>,
    /// Its permission mode (a program that has one): what a respawn must keep.
    pub permission_mode: Option<String>,
    /// What its program needs in its environment beside [`env`] (`AgentKind::env`).
    pub kind_env: Vec<(String, String)>,
}

/// A started agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Started {
    pub session: session::Started,
    pub conversation: Option<Conversation>,
    pub permission_mode: Option<String>,
}

impl<'a> Launch<'a> {
    /// The harness's workspace setup, the conversation, the argv in its sandbox.
    pub fn prepare(&self) -> Result<Ready<'_>> {
        let kind = self.harness.kind();
        let builtin = self.harness.is_builtin();
        let conversation = builtin
            .then(|| kind.conversation(self.start, self.conversation, self.workspace.path))
            .flatten();
        // Respawn keeps the first launch's permission mode, whatever config says now (a
        // task from before it was recorded ran with claude's default: bypass).
        let permission_mode = builtin
            .then(|| {
                let configured = match self.start {
                    Start::First => self.harness.permission_mode.as_deref(),
                    Start::Respawn => self.permission_mode,
                };
                kind.permission_mode(configured)
            })
            .flatten();
        let mut harness = self.harness.clone();
        if permission_mode.is_some() {
            harness.permission_mode = permission_mode.clone();
        }
        harness.setup_workspace(&self.project.path, self.workspace.path)?;
        let resume = harness::resumes(conversation.as_ref())
            .filter(|_| {
                builtin && !kind.prompt_on_resume(harness.mode == harness::kind::Mode::Headless)
            })
            .zip(self.prompt.as_deref().filter(|p| !p.trim().is_empty()));
        let kind_env = kind.env(self.agent_dir, resume)?;
        let argv = harness.argv(
            self.prompt.as_deref(),
            self.start,
            conversation.as_ref(),
            &self.places(),
        );
        let argv = self.sandboxed(&harness, argv)?;
        // Outside the sandbox: the limits hold bwrap and everything under it. Its cgroup
        // is made here (a failure is `cgroup_failed`, before the agent starts).
        let argv = resources::wrap(
            &self.limits,
            &resources::cgroup_name(&self.home.root, self.owner.id()),
            self.agent_dir,
            argv,
        )?;
        let argv = self.layered(&harness, argv)?;
        Ok(Ready {
            launch: self,
            argv,
            conversation,
            permission_mode,
            kind_env,
        })
    }

    /// What a declared harness's template may name (`{branch}`, `{port}`, …): the same
    /// values as the agent's environment ([`env`]).
    fn places(&self) -> declared::Places {
        let slot = self.workspace.name.and_then(pool::parse_name);
        declared::Places {
            branch: self.branch.to_string(),
            workspace: self.workspace.path.display().to_string(),
            task_id: self.owner.id().to_string(),
            port: slot.and_then(|(_, index)| port_for(self.project, index)),
            project: self.project.name.clone(),
            agent_dir: Some(self.agent_dir.to_path_buf()),
        }
    }

    /// `argv` under the pty layer when the harness asks for status reports (outermost: the
    /// layer is the pane's process, outside the agent's cgroup and sandbox); as it is
    /// otherwise. Either way the status an earlier agent's layer left is removed: it is
    /// none of this agent's.
    fn layered(&self, harness: &Harness, argv: Vec<String>) -> Result<Vec<String>> {
        let status = osc::status_file(self.agent_dir);
        if let Err(e) = std::fs::remove_file(&status) {
            if e.kind() != std::io::ErrorKind::NotFound {
                return Err(OrangeError::io(format!("removing {}", status.display()), e));
            }
        }
        if !harness.status_reports {
            return Ok(argv);
        }
        let layer = pty::layer_path().ok_or_else(|| {
            OrangeError::BackendNotFound(format!(
                "[harness.{}] status_reports = true needs {} beside orange ({}); install it with orange (cargo install builds both) or set status_reports = false",
                harness.name,
                pty::BIN,
                std::env::current_exe()
                    .ok()
                    .and_then(|e| e.parent().map(Path::to_path_buf))
                    .unwrap_or_default()
                    .display()
            ))
        })?;
        crate::adapters::store::ensure_dir(self.agent_dir)?;
        Ok(pty::wrap_argv(&layer, &status, argv))
    }

    /// `argv` run in the agent's sandbox (none: as it is).
    fn sandboxed(&self, harness: &Harness, argv: Vec<String>) -> Result<Vec<String>> {
        if self.sandbox == sandbox::Kind::None {
            return Ok(argv);
        }
        check_sandbox(self.home, self.config, self.project, harness, self.sandbox)?;
        let (writable, readable) =
            sandbox::extra_paths(self.config, &self.project.name, &harness.name);
        sandbox::wrap(
            &sandbox::Context {
                home: self.home,
                harness: &harness.name,
                workspace: self.workspace.path,
                agent_dir: self.agent_dir,
                task_md: self.task_md,
                project_path: &self.project.path,
                tmux_socket: match self.mux {
                    Mux::Tmux(t) => t.socket_path(),
                    Mux::Zellij(_) => None,
                },
                extra_writable: &writable,
                extra_readable: &readable,
                read_only: matches!(self.owner, Owner::Reviewer(_)),
            },
            &argv,
        )
    }
}

impl Ready<'_> {
    /// Start the agent in a new window named `window` of the existing tmux `session` (an
    /// id or exact name) — a second agent beside a task's own — with the one environment
    /// ([`env`]) and `more_env`. tmux only (a zellij task has no reviewer).
    pub fn start_window(
        self,
        session: &str,
        window: &str,
        more_env: &[(String, String)],
    ) -> Result<(crate::adapters::tmux::AgentWindow, Option<Conversation>)> {
        let l = self.launch;
        let Mux::Tmux(t) = l.mux else {
            return Err(crate::error::OrangeError::invalid(
                "a second agent beside a task needs tmux (this task runs in zellij)",
            ));
        };
        let mut env = env(l.home, l.project, l.owner, l.branch, l.workspace);
        env.extend(self.kind_env);
        env.extend(more_env.iter().cloned());
        let w = t.new_agent_window(session, window, l.workspace.path, &env, &self.argv)?;
        Ok((w, self.conversation))
    }

    /// Start the session: the agent's environment, its session name (see
    /// [`session_name`]: another session of the same name gets the owner's id after it),
    /// its marks.
    pub fn start(self) -> Result<Started> {
        let mux = self.launch.mux;
        let (conversation, permission_mode) =
            (self.conversation.clone(), self.permission_mode.clone());
        let session = start_many(mux, vec![self.prepared()])
            .pop()
            .expect("one answer per start")?;
        Ok(Started {
            session,
            conversation,
            permission_mode,
        })
    }

    /// The session to make, for [`start_many`] (several agents started together): the
    /// agent's environment, its session name and the other name it takes when that one is
    /// taken, its marks. (What it is started with — its conversation, its permission mode —
    /// the caller has from here.)
    pub fn prepared(self) -> Prepared {
        let l = self.launch;
        let name = session_name(l.mux, &l.project.name, l.branch);
        let other_name = format!("{name}-{}", l.owner.id());
        let mut env = env(l.home, l.project, l.owner, l.branch, l.workspace);
        env.extend(self.kind_env);
        Prepared {
            spec: NewSession {
                name,
                cwd: l.workspace.path.to_path_buf(),
                env,
                command: self.argv,
                width: None,
                height: None,
                marks: l.marks.clone(),
            },
            other_name,
            exit_file: l.exit_file.map(Path::to_path_buf).unwrap_or_default(),
        }
    }
}

/// An agent's session, ready to be made ([`Ready::prepared`]).
#[derive(Debug, Clone)]
pub struct Prepared {
    spec: NewSession,
    /// Its name when [`session_name`] is taken: the owner's id after it.
    other_name: String,
    /// Where zellij writes the agent's exit status.
    exit_file: PathBuf,
}

/// Make the sessions of agents started together, in order, with as few calls to the
/// multiplexer as can be (tmux: one, when they fit in one call and share one `PATH`): one
/// answer each. A session whose name is taken is made under its other name (the owner's id
/// after it) by a call of its own; the rest are made together all the same.
pub fn start_many(mux: &Mux, starts: Vec<Prepared>) -> Vec<Result<session::Started>> {
    if starts.is_empty() {
        return vec![];
    }
    let specs: Vec<(&NewSession, &Path)> = starts
        .iter()
        .map(|p| (&p.spec, p.exit_file.as_path()))
        .collect();
    mux.start_many(&specs)
        .into_iter()
        .zip(&starts)
        .map(|(made, p)| match made? {
            Some(started) => Ok(started),
            None => {
                let spec = NewSession {
                    name: p.other_name.clone(),
                    ..p.spec.clone()
                };
                let made = mux.start_many(&[(&spec, p.exit_file.as_path())]).pop();
                made.expect("one answer per start")?.ok_or_else(|| {
                    OrangeError::BackendCommandFailed(format!(
                        "sessions {:?} and {:?} both exist already",
                        p.spec.name, p.other_name
                    ))
                })
            }
        })
        .collect()
}

/// Can the sandbox `kind` run here, and would the agent of `harness` find its program
/// inside? Checked before anything is recorded, and again at every start.
pub fn check_sandbox(
    home: &Home,
    config: &Config,
    project: &Project,
    harness: &Harness,
    kind: sandbox::Kind,
) -> Result<()> {
    kind.preflight()?;
    if kind == sandbox::Kind::Bwrap {
        let (w, r) = sandbox::extra_paths(config, &project.name, &harness.name);
        sandbox::check_visible(home, &project.path, harness, &w, &r)?;
    }
    Ok(())
}

/// The session of an agent working on `branch` of `project`: `<project>/<branch>`, every
/// character but `[A-Za-z0-9_/-]` made `_` (tmux never rewrites such a name), and for
/// zellij, which refuses `/` in a name, `-` for `/`. (The same rule as
/// `adapters::tmux::session_name`, which the tmux adapter keeps for its other callers.)
pub fn session_name(mux: &Mux, project: &str, branch: &str) -> String {
    let name: String = format!("{project}/{branch}")
        .chars()
        .map(|c| if session_char_ok(c) { c } else { '_' })
        .collect();
    match mux {
        Mux::Zellij(_) => name.replace('/', "-"),
        Mux::Tmux(_) => name,
    }
}

/// The first port of a project's range: `ORANGE_PORT` = base + slot number.
pub const DEFAULT_PORT_BASE: u16 = 3100;

/// The port of a project's workspace slot (`ORANGE_PORT`).
pub fn port_for(p: &Project, slot: u32) -> Option<u16> {
    p.port_base
        .unwrap_or(DEFAULT_PORT_BASE)
        .checked_add(u16::try_from(slot).ok()?)
}

/// THE environment of an agent (and of its hooks, which call `orange`): who it works for,
/// its project, branch and workspace (a pooled one's slot and port), orange's data and
/// tmux server, and this very orange binary, first on `PATH`.
pub fn env(
    home: &Home,
    project: &Project,
    owner: Owner,
    branch: &str,
    workspace: Workspace,
) -> Vec<(String, String)> {
    let mut env = vec![];
    let var = |k: &str, v: &str| (k.to_string(), v.to_string());
    if let Some((_, index)) = workspace.name.and_then(pool::parse_name) {
        env.push(var("ORANGE_WORKSPACE_INDEX", &index.to_string()));
        if let Some(port) = port_for(project, index) {
            env.push(var("ORANGE_PORT", &port.to_string()));
        }
    }
    match owner {
        Owner::Task(id) => env.push(var("ORANGE_TASK_ID", id)),
        Owner::Lane(id) => env.push(var("ORANGE_LANE_ID", id)),
        Owner::Reviewer(id) => {
            env.push(var("ORANGE_TASK_ID", id));
            env.push(var(REVIEWER_ENV, id));
        }
    }
    env.extend([
        var("ORANGE_PROJECT", &project.name),
        var("ORANGE_BRANCH", branch),
        var("ORANGE_WORKSPACE", &workspace.path.display().to_string()),
    ]);
    if let Some(name) = workspace.name {
        env.push(var("ORANGE_WORKSPACE_NAME", name));
    }
    env.push(var("ORANGE_HOME", &home.root.display().to_string()));
    if let Ok(sock) = std::env::var("ORANGE_TMUX_SOCKET") {
        env.push(var("ORANGE_TMUX_SOCKET", &sock));
    }
    // The agent and its hooks call `orange`: make this very binary the one they find.
    if let Ok(exe) = std::env::current_exe() {
        env.push(var("ORANGE_BIN", &exe.display().to_string()));
        if let Some(dir) = exe.parent() {
            let path = std::env::var("PATH").unwrap_or_default();
            env.push(var("PATH", &format!("{}:{path}", dir.display())));
        }
    }
    env
}

/// A lane's own part of orange's data (its agent's, writable in a sandbox), beside the
/// lane registry.
pub fn lane_agent_dir(home: &Home, lane_id: &str) -> PathBuf {
    home.root.join("lanes/.agent").join(lane_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_keep_to_what_tmux_never_rewrites() {
        let tmux = Mux::named("tmux").unwrap();
        let zellij = Mux::named("zellij").unwrap();
        assert_eq!(session_name(&tmux, "app", "feat/x.y z"), "app/feat/x_y_z");
        assert_eq!(session_name(&zellij, "app", "lane/abc"), "app-lane-abc");
        assert_eq!(session_name(&tmux, "my.app", "fix:1"), "my_app/fix_1");
        assert_eq!(session_name(&tmux, "p", "a b;c$é"), "p/a_b_c__");
    }

    #[test]
    fn tasks_and_lanes_get_one_environment() {
        let home = Home {
            root: PathBuf::from("/o"),
        };
        let project = Project {
            name: "app".into(),
            path: PathBuf::from("/r"),
            default_branch: "main".into(),
            pool_size: 2,
            setup_cmd: None,
            copy: vec![],
            symlink: vec![],
            port_base: Some(4000),
            sandbox: None,
            max_running: None,
            created_at: String::new(),
            check_cmd: None,
            check_timeout: None,
        };
        let names = |e: &[(String, String)]| e.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
        let ws = Path::new("/o/workspaces/app--2");
        let task = env(
            &home,
            &project,
            Owner::Task("t1"),
            "feat",
            Workspace {
                path: ws,
                name: Some("app--2"),
            },
        );
        assert!(task.contains(&("ORANGE_PORT".into(), "4002".into())));
        assert!(task.contains(&("ORANGE_BRANCH".into(), "feat".into())));
        let lane = env(
            &home,
            &project,
            Owner::Lane("l1"),
            "lane/l1",
            Workspace {
                path: Path::new("/o/lanes/x-l1"),
                name: None,
            },
        );
        let task_only = [
            "ORANGE_WORKSPACE_INDEX",
            "ORANGE_PORT",
            "ORANGE_TASK_ID",
            "ORANGE_WORKSPACE_NAME",
        ];
        let mut want: Vec<String> = names(&task)
            .into_iter()
            .filter(|k| !task_only.contains(&k.as_str()))
            .collect();
        want.insert(0, "ORANGE_LANE_ID".into());
        assert_eq!(names(&lane), want);
    }
}
