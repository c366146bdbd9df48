//! The command line's definition: every clap type (`orange --help` is generated from the
//! doc comments here), and [`Command::does`], the one table of what each verb does (does it
//! change state, start an agent, name a task; where does it run; what follows it). The
//! dispatcher, the remote routing, `orange serve` and the effects after a command read it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use super::group_args::GroupCmd;
pub use super::lane_args::{LaneCmd, LaneCreateArgs};
pub use super::pr_args::PrArgs;
pub use super::task_args::{ReviewArgs, TaskCreateArgs};

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
    Project(ProjectCmd),
    /// Remote machines reached over ssh, whose projects orange runs there
    #[command(subcommand)]
    Host(HostCmd),
    /// The warm pool of git worktrees of a project
    #[command(subcommand)]
    Workspace(WorkspaceCmd),
    /// Tasks: an agent on a branch in a pooled workspace and a tmux session
    #[command(subcommand)]
    Task(TaskCmd),
    /// Groups (best of N): one prompt, N agents; judge them, keep the best
    #[command(subcommand)]
    Group(GroupCmd),
    /// Task lanes (each a worktree slot of its own): minimal autonomous runs, tmux or zellij
    #[command(subcommand)]
    Lane(LaneCmd),
    /// The sidebar beside an agent pane
    Sidebar(SidebarArgs),
    /// The status-line widget
    Status(StatusArgs),
    /// Watch sessions and agents and apply idle/exit/error policies
    Monitor(MonitorArgs),
    /// After a reboot or tmux restart: list (or, with --yes, recreate) tasks whose session is gone
    Restore(RestoreArgs),
    /// Entry point for tmux hooks and agent hooks
    Hook(HookArgs),
    /// A sandbox repository, tasks and the plugin, for a first look
    Demo(DemoArgs),
    /// Is this machine ready to run an agent here? (program, version, root, Claude Code's
    /// first-run setup, API key, folder trust; --trust records the repository's trust)
    Doctor(DoctorArgs),
    /// Print the shell completion script for bash, zsh or fish
    Completions(CompletionsArgs),
    /// What the tmux plugin's keys run
    #[command(subcommand, hide = true)]
    Plugin(PluginCmd),
    /// Serve commands over standard input and output, one JSON request and one JSON
    /// answer per line (what a local orange keeps running on a remote host)
    Serve(ServeArgs),
}

/// What a verb does: one row of [`Command::does`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Does {
    /// Changes orange's records (tasks, workspaces, projects, hosts, lanes). A forwarded one
    /// has the monitor here fetch its host again at once.
    pub mutates: bool,
    /// May start an agent; the session of the task it acted on (if it says one) opens with
    /// the sidebar when `@orange-sidebar-auto` is on.
    pub starts: bool,
    /// The task, workspace or project it names, as typed, when it takes one: what decides
    /// where it runs ([`Runs`]).
    pub id: Option<String>,
    /// Where it runs.
    pub runs: Runs,
    /// First repairs what crashed commands left behind (`context::reconcile`).
    pub repairs: bool,
    /// After it, the status widgets follow.
    pub widgets: Widgets,
    /// Shows its long work (a workspace's setup, a wait) on stderr: a command a person runs
    /// and waits on (never with --json).
    pub progress: bool,
    /// Asks "VERB task ID?" first (unless --yes). A forwarded one asks here, where the
    /// person is, and sends --yes.
    pub asks: Option<&'static str>,
    /// Why `orange serve` refuses it: it needs a terminal, runs until stopped, or replaces
    /// the process.
    pub not_served: Option<&'static str>,
}

/// Where a command runs: here, or on the remote host of what it names. What is here wins:
/// a local project or task of the same name or id is never shadowed by a host's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// Here, always.
    Here,
    /// On the host of the --project named, if it is remote.
    Project,
    /// On the host the task [`Does::id`] was seen on; without an id, as [`Runs::Project`].
    Task,
    /// On the host of the project the workspace [`Does::id`] (`<project>--<n>`) belongs to,
    /// unless --project names one.
    Workspace,
    /// On the host of the project [`Does::id`] names, else the --project's.
    NamedProject,
}

/// When the status widgets follow a command (`status::changed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Widgets {
    Never,
    /// When it succeeded (a queued task may have started in a freed workspace).
    OnSuccess,
    /// Success or failure (a failed command can record a failed task).
    Always,
}

impl Command {
    /// The table: what each verb does, one row each. Columns: mutates, starts, repairs,
    /// progress (Y/N), then widgets, where it runs and the id it names; `asks` and
    /// `not_served` where they apply.
    #[rustfmt::skip]
    pub fn does(&self) -> Does {
        use Command as C;
        use HostCmd as H;
        use LaneCmd as L;
        use ProjectCmd as P;
        use Runs::{Here, NamedProject, Project, Task, Workspace};
        use TaskCmd as T;
        use Widgets::{Always, Never, OnSuccess};
        use WorkspaceCmd as W;
        const Y: bool = true;
        const N: bool = false;
        let row = |mutates, starts, repairs, progress, widgets, runs, id: Option<&String>| Does {
            mutates, starts, repairs, progress, widgets, runs,
            id: id.cloned(),
            asks: None,
            not_served: None,
        };
        let asks = |d: Does, yes: bool, verb| Does { asks: (!yes).then_some(verb), ..d };
        let no_serve = |d: Does, why| Does { not_served: Some(why), ..d };
        //                                                    mut sta rep pro widgets    runs          id
        match self {
            C::Task(T::Create(_))                      => row(Y,  Y,  Y,  Y,  Always,    Project,      None),
            C::Task(T::List { all: true, .. })         => row(N,  N,  Y,  Y,  Never,     Here,         None),
            C::Task(T::List { .. })                    => row(N,  N,  Y,  Y,  Never,     Project,      None),
            C::Task(T::Show { id } | T::Explain { id } | T::Peek { id, .. })
                                                       => row(N,  N,  Y,  Y,  Never,     Task,         Some(id)),
            C::Task(T::Attach { id })                  => no_serve(
                                                          row(N,  N,  Y,  Y,  Never,     Task,         Some(id)),
                                                          "`task attach` (it needs a terminal: ssh -t)"),
            C::Task(T::Spawn { id })                   => row(Y,  Y,  Y,  Y,  Always,    Task,         Some(id)),
            C::Task(T::Respawn(a))                     => asks(
                                                          row(Y,  Y,  Y,  Y,  Always,    Task,         Some(&a.id)),
                                                          !a.force || a.yes, "Stop and restart the agent of"),
            C::Task(T::Review(a)) if a.edits()        => no_serve(
                                                          row(Y,  N,  Y,  Y,  Never,     Task,         Some(&a.id)),
                                                          "`task review` in an editor (it needs a terminal: ssh -t)"),
            C::Task(T::Review(a))                      => row(Y,  N,  Y,  Y,  Never,     Task,         Some(&a.id)),
            C::Task(T::Send { id, .. } | T::Nudge { id, .. })
                                                       => row(Y,  N,  Y,  Y,  Never,     Task,         Some(id)),
            C::Task(T::Update { id, .. } | T::Complete { id } | T::Stuck { id })
                                                       => row(Y,  N,  Y,  Y,  Always,    Task,         id.as_ref()),
            C::Task(T::Pr(a))                          => row(Y,  N,  Y,  Y,  Never,     Task,         Some(&a.id)),
            C::Task(T::Merge { id, dry_run: true, .. })=> row(N,  N,  Y,  Y,  Never,     Task,         Some(id)),
            C::Task(T::Merge { id, .. })               => row(Y,  N,  Y,  Y,  Always,    Task,         Some(id)),
            C::Task(T::Cancel { id, yes })             => asks(
                                                          row(Y,  N,  Y,  Y,  Always,    Task,         Some(id)),
                                                          *yes, "Cancel"),
            C::Task(T::Delete { id, yes })             => asks(
                                                          row(Y,  N,  Y,  Y,  Always,    Task,         Some(id)),
                                                          *yes, "Delete"),
            C::Group(GroupCmd::List { all: true })     => row(N,  N,  Y,  Y,  Never,     Here,         None),
            C::Group(GroupCmd::List { .. } | GroupCmd::Show { .. })
                                                       => row(N,  N,  Y,  Y,  Never,     Project,      None),
            C::Group(GroupCmd::Judge { .. })           => row(Y,  N,  Y,  Y,  Never,     Project,      None),
            C::Group(GroupCmd::Pick { .. } | GroupCmd::Cancel { .. })
                                                       => row(Y,  N,  Y,  Y,  Always,    Project,      None),
            C::Workspace(W::List { .. })               => row(N,  N,  Y,  Y,  Never,     Project,      None),
            C::Workspace(W::Init | W::Acquire(_) | W::Shutdown { .. })
                                                       => row(Y,  N,  Y,  Y,  Never,     Project,      None),
            C::Workspace(W::Release { name, .. })      => row(Y,  N,  Y,  Y,  OnSuccess, Workspace,    Some(name)),
            C::Workspace(W::Gc { dry_run: true, .. })  => row(N,  N,  Y,  Y,  Never,     Project,      None),
            C::Workspace(W::Gc { .. })                 => row(Y,  N,  Y,  Y,  OnSuccess, Project,      None),
            C::Project(P::List)                        => row(N,  N,  N,  Y,  Never,     Here,         None),
            C::Project(P::Add(_) | P::Remove { .. })   => row(Y,  N,  N,  Y,  Never,     Here,         None),
            C::Project(P::Update(a))                   => row(Y,  N,  N,  Y,  Never,     NamedProject, a.name.as_ref()),
            C::Host(H::Add(_) | H::Remove { .. })      => row(Y,  N,  N,  N,  Never,     Here,         None),
            C::Host(H::List | H::Check { .. } | H::Info)
                                                       => row(N,  N,  N,  N,  Never,     Here,         None),
            // What a local monitor fetches: a monitor pass there when none runs.
            C::Host(H::Snapshot)                       => row(Y,  N,  N,  N,  Never,     Here,         None),
            C::Lane(L::List { .. } | L::Status { .. }) => row(N,  N,  Y,  N,  Never,     Here,         None),
            C::Lane(L::Create(_))                      => row(Y,  Y,  Y,  N,  Never,     Here,         None),
            C::Lane(L::Close { .. })                   => row(Y,  N,  Y,  N,  Never,     Here,         None),
            C::Lane(L::Gc { dry_run, .. })             => row(!dry_run, N, Y, N, Never,  Here,         None),
            C::Restore(a)                              => row(a.yes, a.yes, Y, Y,
                                                              if a.yes { OnSuccess } else { Never },
                                                                                         Here,         None),
            C::Sidebar(_)                              => no_serve(
                                                          row(N,  N,  N,  N,  Never,     Here,         None),
                                                          "`sidebar` (it needs a terminal)"),
            C::Monitor(a) if !a.once                   => no_serve(
                                                          row(Y,  N,  N,  N,  Never,     Here,         None),
                                                          "`monitor` without --once (it runs until stopped)"),
            C::Monitor(_) | C::Hook(_)                 => row(Y,  N,  N,  N,  Never,     Here,         None),
            C::Demo(_)                                 => no_serve(
                                                          row(Y,  Y,  N,  N,  Never,     Here,         None),
                                                          "`demo`"),
            C::Doctor(a)                               => row(a.trust, N, N, N, Never,   Here,         None),
            C::Status(_) | C::Completions(_) | C::Plugin(_)
                                                       => row(N,  N,  N,  N,  Never,     Here,         None),
            C::Serve(_)                                => no_serve(
                                                          row(N,  N,  N,  N,  Never,     Here,         None),
                                                          "`serve`"),
        }
    }
}

// orange project …

#[derive(Debug, Subcommand)]
pub enum ProjectCmd {
    /// Register a git repository (default: the current directory)
    Add(ProjectAddArgs),
    /// List registered projects
    List,
    /// Change a project's settings (default: the project of the current directory)
    Update(ProjectUpdateArgs),
    /// Unregister a project (its workspace pool must be shut down first)
    Remove {
        /// The project's name
        name: String,
    },
}

#[derive(Debug, Args)]
pub struct ProjectAddArgs {
    /// Path to the repository (any directory inside it); default: the current directory.
    /// With --host, a path on that host
    pub path: Option<PathBuf>,
    /// The project lives on this remote host (`orange host add`): its pool, worktrees,
    /// sessions and agents are there, run by the orange there
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// Project name (default: the repository's directory name, made safe)
    #[arg(long)]
    pub name: Option<String>,
    /// How many worktrees the project's pool holds at most (default 2)
    #[arg(long, allow_negative_numbers = true)]
    pub pool_size: Option<i64>,
    /// Branch workspaces start from (default: origin/HEAD, else main, else master)
    #[arg(long)]
    pub default_branch: Option<String>,
    /// Shell command run in each new worktree (e.g. "npm ci")
    #[arg(long, allow_hyphen_values = true)]
    pub setup_cmd: Option<String>,
    /// Gitignored file or glob copied from the repository into each workspace (repeatable)
    #[arg(long, value_name = "GLOB")]
    pub copy: Vec<String>,
    /// Gitignored file or glob symlinked from the repository into each workspace (repeatable)
    #[arg(long, value_name = "GLOB")]
    pub symlink: Vec<String>,
    /// First port of the per-workspace port range (ORANGE_PORT = base + slot)
    #[arg(long)]
    pub port_base: Option<u16>,
    /// The sandbox the project's agents run in: bwrap (bubblewrap: the system and $HOME
    /// read-only, only the workspace and the agent's own state writable) or none
    #[arg(long, value_name = "bwrap|none")]
    pub sandbox: Option<String>,
}

#[derive(Debug, Args)]
pub struct ProjectUpdateArgs {
    /// Project name (default: the project of the current directory, or --project)
    pub name: Option<String>,
    /// How many worktrees the pool holds at most (a smaller pool keeps what is bound)
    #[arg(long, allow_negative_numbers = true)]
    pub pool_size: Option<i64>,
    /// New setup command ("" removes it)
    #[arg(long, allow_hyphen_values = true)]
    pub setup_cmd: Option<String>,
    /// The branch new workspaces start from and tasks merge into
    #[arg(long)]
    pub default_branch: Option<String>,
    /// Replace the copy list (repeatable)
    #[arg(long, value_name = "GLOB")]
    pub copy: Vec<String>,
    /// Replace the symlink list (repeatable)
    #[arg(long, value_name = "GLOB")]
    pub symlink: Vec<String>,
    /// First port of the per-workspace port range (ORANGE_PORT = base + slot)
    #[arg(long)]
    pub port_base: Option<u16>,
    /// The sandbox the project's agents run in from now on: bwrap or none
    #[arg(long, value_name = "bwrap|none")]
    pub sandbox: Option<String>,
    #[command(flatten)]
    pub cap: super::fleet_args::ProjectCapArgs,
    /// The check `group judge` runs in each member's workspace, exit 0 passes
    /// (e.g. "cargo test"; "" removes it)
    #[arg(long, value_name = "CMD", allow_hyphen_values = true)]
    pub check_cmd: Option<String>,
    /// How long the check may run before it is killed and fails (default 10m)
    #[arg(long, value_name = "DURATION")]
    pub check_timeout: Option<String>,
}

// orange host …

#[derive(Debug, Subcommand)]
pub enum HostCmd {
    /// Register a machine reached over ssh; its projects are added with
    /// `orange project add --host NAME PATH`
    Add(HostAddArgs),
    /// List hosts, their projects and when each was last seen
    List,
    /// Is the host reachable, with a compatible orange, tmux and git?
    Check {
        /// The host's name
        name: String,
    },
    /// Unregister a host (refused while projects use it, unless --force)
    Remove {
        /// The host's name (as `orange host add` gave it)
        name: String,
        /// Remove it and forget its projects here (nothing is removed on the host)
        #[arg(long)]
        force: bool,
    },
    /// What a local monitor fetches: this machine's snapshot (runs a monitor pass when no
    /// monitor runs here)
    #[command(hide = true)]
    Snapshot,
    /// What `host check` asks: versions and settings of this machine
    #[command(hide = true)]
    Info,
}

#[derive(Debug, Args)]
pub struct HostAddArgs {
    /// A name for the host (letters, digits, '_', '-')
    pub name: String,
    /// user@host, an ssh config alias, or ssh://user@host:port
    pub dest: String,
    /// The orange binary on the host (default: `orange` on its PATH)
    #[arg(long, value_name = "PATH")]
    pub orange_bin: Option<String>,
    /// Passed as `-o KEY=VALUE` to every ssh call for this host (repeatable): HostName,
    /// Port, IdentityFile, UserKnownHostsFile, ProxyJump…
    #[arg(long = "ssh-option", value_name = "KEY=VALUE")]
    pub ssh_options: Vec<String>,
    /// ORANGE_HOME on the host (default: the remote environment's)
    #[arg(long, value_name = "DIR")]
    pub remote_home: Option<String>,
    /// The tmux socket orange uses on the host (a -L name or an absolute -S path)
    #[arg(long, value_name = "NAME")]
    pub remote_socket: Option<String>,
}

// orange workspace …

#[derive(Debug, Subcommand)]
pub enum WorkspaceCmd {
    /// Pre-create the project's pool_size worktrees (runs the setup command in each new one)
    Init,
    /// List the project's workspaces
    List {
        /// Every project's workspaces
        #[arg(long)]
        all: bool,
    },
    /// Bind a free workspace to a task label and print its name and path
    Acquire(AcquireArgs),
    /// Reset a workspace to the base branch and return it to the pool
    Release {
        /// Workspace name (<project>--<n>)
        #[arg(allow_hyphen_values = true)]
        name: String,
        /// Discard uncommitted changes and unreferenced commits
        #[arg(long)]
        force: bool,
    },
    /// Release workspaces bound to tasks that no longer exist or are done/cancelled
    Gc {
        /// Also release workspaces with uncommitted changes (they are lost)
        #[arg(long)]
        force: bool,
        /// Show what would be released, change nothing
        #[arg(long)]
        dry_run: bool,
    },
    /// Remove every worktree of the project, prune, and remove the pool directory
    Shutdown {
        /// Remove worktrees with uncommitted changes too
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Args)]
pub struct AcquireArgs {
    /// The label recorded as the workspace's task
    #[arg(long, value_name = "LABEL", allow_hyphen_values = true)]
    pub task: String,
    /// Block until a workspace is free (optionally at most DURATION, e.g. 30s, 5m)
    #[arg(long, value_name = "DURATION", num_args = 0..=1, default_missing_value = "forever")]
    pub wait: Option<String>,
}

// orange task …

#[derive(Debug, Subcommand)]
pub enum TaskCmd {
    /// Create a task and start its agent (queued when the pool is full)
    Create(TaskCreateArgs),
    /// List the project's tasks (oldest first) with their session state
    List {
        /// Only tasks with this status
        #[arg(long)]
        status: Option<String>,
        /// Every project's tasks, grouped by project
        #[arg(long)]
        all: bool,
    },
    /// Show one task: fields, session, TASK.md and history
    Show {
        /// The task: its id, a unique prefix of it, or its branch
        id: String,
    },
    /// Which signal decided the agent's current state, and when
    Explain {
        /// The task: its id, a unique prefix of it, or its branch
        id: String,
    },
    /// Print the last lines of the task's agent pane
    Peek {
        /// The task: its id, a unique prefix of it, or its branch
        id: String,
        /// How many lines from the bottom of its pane
        #[arg(long, default_value_t = 40)]
        lines: usize,
    },
    /// Start the agent of a pending task
    Spawn {
        /// The task: its id, a unique prefix of it, or its branch
        id: String,
    },
    /// Attach to the task's session (switch-client inside tmux, attach-session outside)
    Attach {
        /// The task: its id, a unique prefix of it, or its branch
        id: String,
    },
    /// Restart the agent of an active task whose agent exited or whose session is gone,
    /// or retry a failed task from the start
    ///
    /// With --force, also an agent that still runs (hung, wedged in a tool call): its
    /// whole process tree is stopped first. History: `respawned (forced): REASON`.
    Respawn(super::limit_args::RespawnArgs),
    /// Type a message into the task's agent: one message, submitted once
    ///
    /// Several lines arrive as one message. Typed at once when the agent waits for input;
    /// held while it works and typed in when its turn ends (`task show` lists what is
    /// held); refused while a dialog or an approval prompt is on its screen (--force types
    /// it anyway), or when it is dead (`task respawn` first).
    Send {
        /// The task: its id, a unique prefix of it, or its branch
        id: String,
        /// The message; "-" reads it from standard input. Control characters are removed
        #[arg(
            allow_hyphen_values = true,
            conflicts_with = "file",
            value_name = "TEXT|-"
        )]
        text: Option<String>,
        /// Read the message from a file
        #[arg(long, value_name = "PATH")]
        file: Option<PathBuf>,
        /// Type it now whatever the agent's state (never into a dead agent)
        #[arg(long)]
        force: bool,
        /// The plugin's prompt: the message is in these tmux paste buffers
        #[arg(long, hide = true, value_name = "NAME", conflicts_with_all = ["text", "file"])]
        from_buffer: Option<String>,
    },
    /// Review the task's changes: comments on lines of its diff, sent to its agent
    ///
    /// Opens the diff against the task's base in $VISUAL / $EDITOR (else vi) as a review
    /// file: write a comment under any line, on lines starting with ">>". Saved, the
    /// comments become a review round kept with the task (file, side, line and the code
    /// line of each); sent (--send, or answer the question), the round is ONE message to
    /// the agent, the way `task send` sends: typed when it waits, held while it works,
    /// never into an agent on a dialog. A comment whose line the agent changed since is
    /// found again by its code line, or listed as no longer there — never dropped.
    Review(ReviewArgs),
    /// Send the task's agent the nudge its idle policy would send, now
    ///
    /// The policy's on_idle message, else the harness's nudge_message, else "Please
    /// continue with the task.", sent the way `task send` sends.
    Nudge {
        /// The task: its id, a unique prefix of it, or its branch
        id: String,
        /// Type it now whatever the agent's state (never into a dead agent)
        #[arg(long)]
        force: bool,
    },
    /// Change a task's status, summary or branch (ID defaults to $ORANGE_TASK_ID or the
    /// workspace you are in)
    Update {
        /// The task: its id, a unique prefix of it, or its branch (default: $ORANGE_TASK_ID, or
        /// the workspace you are in)
        id: Option<String>,
        /// New status (pending … stuck; done/cancelled go through merge/cancel)
        #[arg(long)]
        status: Option<String>,
        /// New summary (the first line of TASK.md and the sidebar's title)
        #[arg(long, allow_hyphen_values = true)]
        summary: Option<String>,
        /// Rename the branch to NAME, or without NAME record the branch the workspace is on
        #[arg(long, num_args = 0..=1, value_name = "NAME")]
        branch: Option<Option<String>>,
    },
    /// Mark the task ready for review (agents call this when done)
    Complete {
        /// The task: its id, a unique prefix of it, or its branch (default: $ORANGE_TASK_ID, or
        /// the workspace you are in)
        id: Option<String>,
    },
    /// Mark the task stuck (agents call this when they cannot go on)
    Stuck {
        /// The task: its id, a unique prefix of it, or its branch (default: $ORANGE_TASK_ID, or
        /// the workspace you are in)
        id: Option<String>,
    },
    /// Push the task's branch and open its pull request with gh (or link the open one)
    ///
    /// `git push` to origin, then `gh pr create` (gh must be installed and logged in:
    /// `gh auth login`, or GH_TOKEN). A pull request already open for the branch is
    /// linked, not made twice. Its number and URL are kept with the task.
    Pr(PrArgs),
    /// Merge the task's branch into the default branch, return its workspace, mark it done
    ///
    /// A task with an open pull request is merged on GitHub with `gh pr merge` (the
    /// method of config.toml's `[pr] merge`: merge, squash or rebase) when its checks
    /// pass and no change is requested; otherwise refused unless --force.
    Merge {
        /// The task: its id, a unique prefix of it, or its branch
        id: String,
        /// ff (fast-forward only, default) or merge (always a merge commit)
        #[arg(long, value_parser = ["ff", "merge"], default_value = "ff")]
        strategy: String,
        /// Do not look for a pull request with gh
        #[arg(long)]
        local: bool,
        /// Merge its pull request even when checks fail or changes are requested
        #[arg(long)]
        force: bool,
        /// Merge nothing: show what merging would bring (the task's changes) or why it
        /// would refuse
        #[arg(long)]
        dry_run: bool,
    },
    /// Cancel a task: kill its session and return its workspace (kept if it has uncommitted work)
    Cancel {
        /// The task: its id, a unique prefix of it, or its branch
        id: String,
        /// Do not ask for confirmation
        #[arg(long)]
        yes: bool,
    },
    /// Delete a done, cancelled or failed task's record (its branch stays)
    Delete {
        /// The task: its id, a unique prefix of it, or its branch
        id: String,
        /// Do not ask for confirmation
        #[arg(long)]
        yes: bool,
    },
}

// The commands of one verb each.

#[derive(Debug, Args)]
pub struct SidebarArgs {
    /// Task to show (default: $ORANGE_TASK_ID, else the task of the tmux session this pane
    /// is in, else the task bound to the workspace containing the current directory)
    #[arg(long, conflicts_with = "lane")]
    pub task: Option<String>,
    /// Show a lane instead of a task
    #[arg(long)]
    pub lane: Option<String>,
    /// Render one frame and exit (with --json: the model as JSON)
    #[arg(long)]
    pub once: bool,
    /// Width in columns (default: $COLUMNS, else the pane's width, else 40)
    #[arg(long)]
    pub width: Option<usize>,
    /// Height in lines (default: --once unlimited; the loop: the pane's height)
    #[arg(long)]
    pub height: Option<usize>,
    /// `toggle`: open or close the sidebar beside the current pane
    pub action: Option<String>,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Output format: `tmux` (a tmux format string with icons and colours, empty when
    /// there is nothing open), `plain` (one line of counts) or `json` (counts, per project,
    /// and every open task)
    #[arg(long, value_parser = ["tmux", "plain", "json"], default_value = "plain")]
    pub format: String,
}

#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// Run one pass and exit (prints what it saw and did)
    #[arg(long)]
    pub once: bool,
    /// Time between passes
    #[arg(long, default_value = "5s", value_name = "DURATION")]
    pub interval: String,
    /// Run N passes back to back, as the running monitor makes them, and print how long
    /// each took (for benchmarks: scripts/bench.sh)
    #[arg(long, value_name = "N", conflicts_with = "once")]
    pub passes: Option<u32>,
    /// With --passes: poke before each pass, as an agent's hook does (`task`: one task's
    /// files changed), a command or a tmux hook (`other`: none of the tasks' files), or a
    /// poke that does not say (`all`)
    #[arg(long, value_name = "task|other|all", requires = "passes")]
    pub poke: Option<String>,
}

#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// Recreate the sessions (without it, only list what would be restored)
    #[arg(long)]
    pub yes: bool,
}

#[derive(Debug, Args)]
pub struct HookArgs {
    /// The event and its arguments
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub event: Vec<String>,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Do not attach: print how to attach instead
    #[arg(long)]
    pub no_attach: bool,
    /// Create the sandbox here (a new or empty directory; default: a new directory under
    /// the system temp directory)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The harness to check (default: config's default_harness, else the first installed)
    #[arg(long, value_name = "H")]
    pub harness: Option<String>,
    /// Record the project's repository (and so its worktrees) as trusted in the harness's
    /// own config: Claude Code's ~/.claude.json, codex's $CODEX_HOME/config.toml (only
    /// that entry changes; a backup is kept; a file that does not parse is left alone)
    #[arg(long)]
    pub trust: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Install:\n  bash  orange completions bash > ~/.local/share/bash-completion/completions/orange\n  zsh   orange completions zsh > \"${fpath[1]}/_orange\"   (a directory on $fpath)\n  fish  orange completions fish > ~/.config/fish/completions/orange.fish"
)]
pub struct CompletionsArgs {
    /// The shell to complete in
    pub shell: Shell,
}

#[derive(Debug, Subcommand)]
pub enum PluginCmd {
    /// Switch a client to the next task waiting for you (a question, stuck, ready for
    /// review, or its agent exited), in creation order after the current one (prefix O w);
    /// a remote task's is attached over ssh
    Next {
        /// The client to switch (default: the one tmux finds current)
        #[arg(long)]
        client: Option<String>,
        /// The client's session id (the search starts after its task)
        #[arg(long)]
        session: Option<String>,
    },
    /// Open or close the sidebar beside a pane (`orange sidebar toggle` with the pane given)
    Sidebar {
        /// The agent pane (default: $TMUX_PANE)
        #[arg(long)]
        pane: Option<String>,
    },
    /// The project of the current directory (its name; the new-task popup's header)
    Project,
    /// Ask for a text in tmux's command-prompt and send it to a task's agent with `task
    /// send` (prefix O t, the task menu's t, the sidebar's t)
    Prompt {
        /// The client to ask (default: the one tmux finds current)
        #[arg(long)]
        client: Option<String>,
        /// The task (default: the task of $TMUX_PANE's session)
        #[arg(long)]
        task: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Read requests on standard input and answer on standard output, one JSON value a
    /// line (what a local orange runs on a remote host)
    #[arg(long)]
    pub stdio: bool,
    /// Be the local broker of host HOST (orange starts it when a command needs it)
    #[arg(long, value_name = "HOST", hide = true, conflicts_with = "stdio")]
    pub broker: Option<String>,
}
