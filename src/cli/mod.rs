//! One file per subcommand family; `dispatch` routes a parsed command line.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::adapters::store::{self, Home};
use crate::error::{OrangeError, Result};
use crate::orchestration::project::{self, Project};
use crate::ui::output::Out;

pub mod completions;
pub mod demo;
pub mod doctor;
pub mod entry;
pub mod hook;
pub mod host;
pub mod lane;
pub mod monitor;
pub mod plugin;
pub mod project_cmd;
pub mod remote;
pub mod serve;
pub mod sidebar;
pub mod status;
pub mod task;
pub mod workspace;

#[derive(Debug, Parser)]
#[command(
    name = "orange",
    version,
    about = "A tmux-native orchestrator for parallel coding agents",
    long_about = "orange runs many coding agents at once, each in its own git worktree (from a warm pool) \
and its own tmux session, and shows from inside tmux which agent is working, which waits for you, \
which died, and what each one changed.\n\nState lives under $ORANGE_HOME (default ~/orange). \
Every listing and mutating command takes --json: one JSON value on stdout, or \
{\"error\":{\"code\",\"message\"}} and a non-zero exit.",
    after_help = "Environment: ORANGE_HOME (data root), ORANGE_TMUX_SOCKET (tmux server: a -L name or an absolute -S path), \
ORANGE_LOCK_TIMEOUT (how long to wait for a state lock, default 30s), NO_COLOR."
)]
pub struct Cli {
    /// Print one JSON value on stdout (errors as {"error":{"code","message"}})
    #[arg(long, global = true)]
    pub json: bool,
    /// The project to act on (default: the one containing the current directory)
    #[arg(long, global = true, value_name = "NAME")]
    pub project: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Register, list, change and remove projects (git repositories)
    #[command(subcommand)]
    Project(project_cmd::ProjectCmd),
    /// Remote machines reached over ssh, whose projects orange runs there
    #[command(subcommand)]
    Host(host::HostCmd),
    /// The warm pool of git worktrees of a project
    #[command(subcommand)]
    Workspace(workspace::WorkspaceCmd),
    /// Tasks: an agent on a branch in a pooled workspace and a tmux session
    #[command(subcommand)]
    Task(task::TaskCmd),
    /// Lanes: minimal autonomous runs in dedicated worktrees (tmux or zellij)
    #[command(subcommand)]
    Lane(lane::LaneCmd),
    /// The sidebar beside an agent pane
    Sidebar(sidebar::SidebarArgs),
    /// The status-line widget
    Status(status::StatusArgs),
    /// Watch sessions and agents and apply idle/exit/error policies
    Monitor(monitor::MonitorArgs),
    /// After a reboot or tmux restart: list (or, with --yes, recreate) tasks whose session is gone
    Restore(monitor::RestoreArgs),
    /// Entry point for tmux hooks and agent hooks
    Hook(hook::HookArgs),
    /// A sandbox repository, tasks and the plugin, for a first look
    Demo(demo::DemoArgs),
    /// Is this machine ready to run an agent here? (program, version, root, Claude Code's
    /// first-run setup, API key, folder trust; --trust records the repository's trust)
    Doctor(doctor::DoctorArgs),
    /// Print the shell completion script for bash, zsh or fish
    Completions(completions::CompletionsArgs),
    /// What the tmux plugin's keys run
    #[command(subcommand, hide = true)]
    Plugin(plugin::PluginCmd),
    /// Serve commands over standard input and output, one JSON request and one JSON
    /// answer per line (what a local orange keeps running on a remote host)
    Serve(serve::ServeArgs),
}

/// What every command gets: where state lives, the project override, the cwd.
pub struct Ctx {
    pub home: Home,
    pub project: Option<String>,
    pub cwd: PathBuf,
    /// `--json`: a forwarded command asks the host for JSON too.
    pub json: bool,
    /// The command line after the program name (what a remote host is sent).
    pub args: Vec<String>,
}

impl Ctx {
    pub fn new(project: Option<String>) -> Result<Ctx> {
        Ok(Ctx {
            home: Home::from_env()?,
            project,
            cwd: std::env::current_dir()
                .map_err(|e| OrangeError::io("reading the current directory", e))?,
            json: false,
            args: std::env::args().skip(1).collect(),
        })
    }

    /// The project named by --project, else the one containing the current directory.
    pub fn project(&self) -> Result<Project> {
        project::resolve(&self.home, self.project.as_deref(), &self.cwd)
    }
}

pub fn dispatch(ctx: &Ctx, cmd: Command) -> Result<Out> {
    if let Some(h) = remote::route(ctx, &cmd)? {
        return remote::forward(ctx, &h, &cmd);
    }
    // Long work (a workspace's setup, a wait) shows progress on stderr, for the commands a
    // person runs and waits on (not hooks, sidebars, the monitor; never with --json).
    let shows = matches!(
        cmd,
        Command::Workspace(_) | Command::Task(_) | Command::Project(_) | Command::Restore(_)
    );
    crate::ui::progress::install(ctx.json || !shows);
    match cmd {
        Command::Host(c) => host::run(ctx, c),
        Command::Project(c) => project_cmd::run(ctx, c),
        Command::Workspace(c) => workspace::run(ctx, c),
        Command::Task(c) => task::run(ctx, c),
        Command::Lane(c) => lane::run(ctx, c),
        Command::Sidebar(a) => sidebar::run(ctx, a),
        Command::Status(a) => status::run(ctx, a),
        Command::Monitor(a) => monitor::run(ctx, a),
        Command::Restore(a) => monitor::restore(ctx, a),
        Command::Hook(a) => hook::run(ctx, a),
        Command::Demo(a) => demo::run(ctx, a),
        Command::Doctor(a) => doctor::run(ctx, a),
        Command::Plugin(c) => plugin::run(ctx, c),
        Command::Completions(a) => completions::run(ctx, a),
        Command::Serve(a) => serve::run(ctx, a),
    }
}

/// Repair what crashed commands left behind, before a command that changes state (see
/// `reconcile`). Never fails the command: a repair that cannot be made now is logged and
/// tried again by the next command or monitor pass. Each repair is said on stderr.
pub fn reconcile(ctx: &Ctx) {
    // Off only for measurements and debugging (`scripts/bench-reconcile.sh`).
    if std::env::var_os("ORANGE_RECONCILE").is_some_and(|v| v == "0") {
        return;
    }
    match crate::orchestration::reconcile::reconcile(
        &ctx.home,
        &crate::adapters::tmux::Tmux::from_env(),
        false,
    ) {
        Ok(repairs) => {
            for r in &repairs {
                // A repair names sessions and workspaces as it found them.
                eprintln!(
                    "orange: repaired: {}",
                    crate::text::safe_line(&r.to_string())
                );
            }
            // A freed workspace starts what waits in its project's queue.
            let mut tasks = crate::orchestration::task::service::TaskService::new(&ctx.home);
            for next in tasks.after_repairs(&repairs) {
                if let Some(id) = next.spawned {
                    eprintln!("orange: started queued task {id}");
                }
            }
        }
        Err(e) => store::log(
            &ctx.home,
            "warn",
            "reconcile failed",
            serde_json::json!({"error": e.to_string(), "code": e.code()}),
        ),
    }
}

/// Run a mutating operation and write its audit line, success or failure.
pub fn audited<T: serde::Serialize>(
    ctx: &Ctx,
    op: &str,
    inputs: serde_json::Value,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let result = f();
    let summary = match &result {
        Ok(v) => Ok(serde_json::to_value(v).unwrap_or(serde_json::Value::Null)),
        Err(e) => Err(e.code().to_string()),
    };
    store::audit(&ctx.home, op, inputs, &summary);
    result
}
