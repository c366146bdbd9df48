//! `orange demo`: a first look in one command. An isolated tmux server (`-L orange-demo`,
//! or `$ORANGE_TMUX_SOCKET`) with the plugin loaded, a sandbox repository with a bare
//! origin and its own `ORANGE_HOME` under a new directory, three tasks run by the built-in
//! demo agent (`tmux/demo-agent.sh`: progress, edits, commits, reports to orange), and the
//! sidebar open beside the first one. Then it attaches (on a terminal, outside tmux) or
//! prints how to. The user's own tmux server and `~/orange` are never touched.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::args::DemoArgs;
use super::context::Ctx;
use crate::adapters::store::Home;
use crate::adapters::tmux::{self, NewSession, OptionScope, Server, Tmux};
use crate::error::{IoContext, OrangeError, Result};
use crate::orchestration::project::{self, AddOptions};
use crate::orchestration::task::service::TaskService;
use crate::orchestration::task::start::CreateRequest;
use crate::orchestration::task::Task;
use crate::ui::output::Out;
use crate::ui::plugin;

/// The socket name of the demo server when `ORANGE_TMUX_SOCKET` does not name one.
pub const DEMO_SOCKET: &str = "orange-demo";

/// The plugin files, built into the binary so that the demo works from any install.
const PLUGIN_FILES: &[(&str, &str)] = &[
    ("orange.tmux", include_str!("../../orange.tmux")),
    ("tmux/lib.sh", include_str!("../../tmux/lib.sh")),
    ("tmux/run.sh", include_str!("../../tmux/run.sh")),
    ("tmux/focus.sh", include_str!("../../tmux/focus.sh")),
    ("tmux/popup.sh", include_str!("../../tmux/popup.sh")),
    (
        "tmux/demo-agent.sh",
        include_str!("../../tmux/demo-agent.sh"),
    ),
];

/// The demo's tasks: branch and what the agent is asked.
const TASKS: &[(&str, &str)] = &[
    (
        "demo/dark-mode",
        "Add a dark mode to the settings page: a theme toggle, dark colours in theme.css, and remember the choice.",
    ),
    (
        "demo/login-lockout",
        "Lock an account after repeated failed logins, and tell the user how long to wait.",
    ),
    (
        "demo/search",
        "Make product search tolerate typos and rank exact matches first.",
    ),
];

const GIT_IDENTITY: &[&str] = &[
    "-c",
    "user.name=orange demo",
    "-c",
    "user.email=demo@orange.invalid",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "init.defaultBranch=main",
];

fn git(dir: &Path, args: &[&str]) -> Result<()> {
    let mut all = GIT_IDENTITY.to_vec();
    all.extend_from_slice(args);
    crate::adapters::git::run_in(dir, &all)
}

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).ctx(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, text).ctx(|| format!("writing {}", path.display()))
}

fn make_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .ctx(|| format!("making {} executable", path.display()))
}

/// A new sandbox directory: `dir` (created, or empty), else a fresh one in the temp dir.
fn sandbox_dir(dir: Option<&Path>) -> Result<PathBuf> {
    let dir = match dir {
        Some(d) => {
            std::fs::create_dir_all(d).ctx(|| format!("creating {}", d.display()))?;
            let busy = std::fs::read_dir(d)
                .ctx(|| format!("reading {}", d.display()))?
                .next()
                .is_some();
            if busy {
                return Err(OrangeError::invalid(format!(
                    "{} is not empty; give --dir a new or empty directory",
                    d.display()
                )));
            }
            d.to_path_buf()
        }
        None => tempfile::Builder::new()
            .prefix("orange-demo-")
            .tempdir()
            .ctx(|| "creating a temp directory".into())?
            .keep(),
    };
    dir.canonicalize()
        .ctx(|| format!("resolving {}", dir.display()))
}

/// The sandbox repository `shop` with a bare `shop-origin.git`.
fn make_repo(root: &Path) -> Result<PathBuf> {
    let origin = root.join("shop-origin.git");
    let repo = root.join("shop");
    std::fs::create_dir_all(&repo).ctx(|| format!("creating {}", repo.display()))?;
    git(
        root,
        &["init", "-q", "--bare", "-b", "main", "shop-origin.git"],
    )?;
    git(&repo, &["init", "-q", "-b", "main"])?;
    write(
        &repo.join("README.md"),
        "# shop\n\nA tiny web shop: the sandbox of `orange demo`.\n",
    )?;
    write(
        &repo.join("src/theme.css"),
        "body {\n  color: #222;\n  background: #fff;\n}\n",
    )?;
    write(
        &repo.join("src/settings.js"),
        "export const settings = {\n  language: 'en',\n};\n",
    )?;
    write(
        &repo.join("src/login.js"),
        "export function login(user, password) {\n  return check(user, password);\n}\n",
    )?;
    write(
        &repo.join("src/search.js"),
        "export function search(products, query) {\n  return products.filter((p) => p.name.includes(query));\n}\n",
    )?;
    git(&repo, &["add", "-A"])?;
    git(&repo, &["commit", "-qm", "A tiny shop"])?;
    let origin_s = origin.display().to_string();
    git(&repo, &["remote", "add", "origin", &origin_s])?;
    git(&repo, &["push", "-q", "-u", "origin", "main"])?;
    git(&repo, &["remote", "set-head", "origin", "-a"])?;
    Ok(repo)
}

fn server_label(tmux: &Tmux) -> String {
    tmux.server_args().join(" ")
}

/// The sandbox a demo runs in: its directory, the plugin copied there, its data root, the
/// orange that made it.
struct Sandbox {
    root: PathBuf,
    plugin_dir: PathBuf,
    home: Home,
    exe: PathBuf,
}

/// What a demo's environment is: the tmux server its own socket names (`own_socket`), the
/// `PATH` its panes get, the pane the person ran it in.
struct Env {
    own_socket: bool,
    path: String,
    my_pane: Option<String>,
}

/// The demo's tmux server, once a previous demo on it is gone.
struct DemoServer {
    tmux: Tmux,
    restarted: bool,
    replaced: Option<PathBuf>,
}

pub fn run(_ctx: &Ctx, args: DemoArgs) -> Result<Out> {
    let json_out = std::env::args_os().any(|a| a == "--json");
    Tmux::default().preflight()?;
    let sb = make_sandbox(args.dir.as_deref())?;
    let env = isolate(&sb);
    let repo = make_repo(&sb.root)?;
    let server = replace_previous(&sb, &env)?;
    let demo_session = open_welcome(&sb, &env, &server.tmux, &repo)?;
    let plain = Tmux::from_env();
    let (made, sidebar) = start_tasks(&sb.home, &plain, &repo)?;
    // The person lands on the welcome session and its key guide, not on a task.
    let attach_argv = plain.attach_command(&demo_session);
    let attach = tmux::shell_join(&attach_argv);
    let stop = format!(
        "tmux {} kill-server; sleep 1; rm -rf {}",
        server_label(&plain),
        tmux::shell_quote(&sb.root.display().to_string())
    );
    let value = json!({
        "socket": match plain.server() {
            Server::Name(n) => n.clone(),
            Server::Path(p) => p.display().to_string(),
            Server::Default => String::new(),
        },
        "server_args": plain.server_args(),
        "sandbox": sb.root,
        "home": sb.home.root,
        "repo": repo,
        "plugin_dir": sb.plugin_dir,
        "session": demo_session,
        "tasks": made.iter().map(|t| json!({
            "id": t.id,
            "branch": t.branch,
            "status": t.status,
            "session": t.tmux_session,
            "session_id": t.tmux_session_id,
        })).collect::<Vec<_>>(),
        "sidebar": sidebar,
        "attach": attach,
        "stop": stop,
        "restarted": server.restarted,
        "replaced": server.replaced,
    });
    let mut text = summary(
        &sb,
        &plain,
        made.len(),
        server.replaced.as_deref(),
        &attach,
        &stop,
    );
    let inside_tmux = std::env::var_os("TMUX").is_some_and(|v| !v.is_empty());
    let attach_now = !args.no_attach
        && !json_out
        && !inside_tmux
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal();
    if attach_now {
        print!("{text}");
        return Err(plain.attach(&demo_session));
    }
    if inside_tmux && !args.no_attach && !json_out {
        text.push_str(&open_here(&attach_argv, env.my_pane.as_deref()));
    }
    Ok(Out::new(value, text))
}

/// The sandbox directory, the plugin's files in it, and its data root with a config whose
/// default harness is the demo agent.
fn make_sandbox(dir: Option<&Path>) -> Result<Sandbox> {
    let exe = std::env::current_exe().map_err(|e| OrangeError::io("finding orange", e))?;
    let root = sandbox_dir(dir)?;
    let plugin_dir = root.join("plugin");
    for (name, text) in PLUGIN_FILES {
        let p = plugin_dir.join(name);
        write(&p, text)?;
        if name.ends_with(".sh") || name.ends_with(".tmux") {
            make_executable(&p)?;
        }
    }
    let home = Home {
        root: root.join("orange-home"),
    };
    crate::adapters::store::ensure_dir(&home.root)?;
    let agent = plugin_dir.join("tmux/demo-agent.sh");
    let mut harness = toml::map::Map::new();
    harness.insert(
        "command".into(),
        format!(
            "sh {} {{prompt}}",
            tmux::shell_quote(&agent.display().to_string())
        )
        .into(),
    );
    let mut harnesses = toml::map::Map::new();
    harnesses.insert("demo".into(), toml::Value::Table(harness));
    let mut config = toml::map::Map::new();
    config.insert("default_harness".into(), "demo".into());
    config.insert("harness".into(), toml::Value::Table(harnesses));
    let config = toml::to_string(&toml::Value::Table(config))
        .map_err(|e| OrangeError::invalid(format!("demo config: {e}")))?;
    write(&home.config_file(), &config)?;
    Ok(Sandbox {
        root,
        plugin_dir,
        home,
        exe,
    })
}

/// Everything started from here (the tmux server, its panes and hooks, the agents and the
/// `orange` they call) sees the sandbox, never the user's ~/orange or tmux server.
fn isolate(sb: &Sandbox) -> Env {
    let own_socket = std::env::var("ORANGE_TMUX_SOCKET")
        .map(|s| s.trim().is_empty())
        .unwrap_or(true);
    let bin_dir = sb.exe.parent().map(Path::to_path_buf).unwrap_or_default();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // SAFETY-free on edition 2021; nothing else runs in this process yet.
    std::env::set_var("ORANGE_HOME", &sb.home.root);
    if own_socket {
        std::env::set_var("ORANGE_TMUX_SOCKET", DEMO_SOCKET);
    }
    std::env::set_var("PATH", &path);
    // The pane the person ran this in (inside tmux the demo opens beside it).
    let my_pane = std::env::var("TMUX_PANE")
        .ok()
        .filter(|p| p.starts_with('%'));
    for v in ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "TMUX_PANE"] {
        std::env::remove_var(v);
    }
    Env {
        own_socket,
        path,
        my_pane,
    }
}

/// The demo server's config, and the server itself with a previous demo on it replaced
/// whole.
fn replace_previous(sb: &Sandbox, env: &Env) -> Result<DemoServer> {
    let conf = sb.root.join("tmux.conf");
    write(
        &conf,
        &format!(
            "# The demo server's config: a few friendly settings, then the plugin.\n\
             set -g mouse on\n\
             set -g default-size 160x45\n\
             set -g status-left-length 40\n\
             set -g status-right-length 90\n\
             set -g status-right '#{{orange_status}} | %H:%M'\n\
             set -g @orange-bin {}\n",
            tmux_conf_quote(&sb.exe.display().to_string())
        ),
    )?;
    let tmux = Tmux::from_env().with_config(&conf);
    let mut restarted = false;
    let mut replaced = None;
    // A previous demo (the demo's own socket, or any server a demo started: it names its
    // sandbox) is replaced whole: its server goes (its agents and sessions with it; its
    // monitor sees the server gone and exits), then its sandbox directory.
    let previous = tmux
        .get_option(OptionScope::Global, OPT_DEMO_DIR)
        .ok()
        .flatten()
        .map(PathBuf::from);
    let default_demo =
        env.own_socket && matches!(tmux.server(), Server::Name(n) if n == DEMO_SOCKET);
    // Never a server that holds more than a demo (a person may have started working on a
    // server a demo started), nor the one this command runs in.
    let safe = (default_demo || previous.is_some())
        && only_demo_sessions(&tmux, previous.as_deref())
        && !runs_inside(&tmux);
    if !safe && previous.is_some() {
        eprintln!(
            "orange demo: the previous demo's tmux server also holds other sessions (or this runs inside it): left alone"
        );
    }
    if safe {
        restarted = !tmux.list_sessions()?.is_empty();
        tmux.kill_server()?;
        let root = &sb.root;
        if let Some(old) = previous.filter(|d| d != root && !root.starts_with(d) && is_demo_dir(d))
        {
            remove_soon(&old)?;
            replaced = Some(old);
        }
    }
    Ok(DemoServer {
        tmux,
        restarted,
        replaced,
    })
}

/// The welcome session (its key guide) and the plugin loaded; returns the session's name.
fn open_welcome(sb: &Sandbox, env: &Env, tmux: &Tmux, repo: &Path) -> Result<String> {
    let welcome = sb.root.join("WELCOME.txt");
    write(&welcome, &welcome_text(&sb.home, repo, tmux))?;
    let fresh = tmux.list_sessions()?.is_empty();
    let demo_session = if fresh {
        "demo".to_string()
    } else {
        format!("demo-{}", std::process::id())
    };
    tmux.new_session(&NewSession {
        name: demo_session.clone(),
        cwd: repo.to_path_buf(),
        env: vec![
            ("ORANGE_HOME".into(), sb.home.root.display().to_string()),
            ("PATH".into(), env.path.clone()),
        ],
        command: vec![
            "sh".into(),
            "-c".into(),
            "cat \"$0\"; exec \"${SHELL:-/bin/sh}\"".into(),
            welcome.display().to_string(),
        ],
        width: None,
        height: None,
        marks: vec![],
    })?;
    if fresh {
        // A server this demo started (never a person's own): it names its sandbox.
        tmux.set_option(
            OptionScope::Global,
            OPT_DEMO_DIR,
            &sb.root.display().to_string(),
        )?;
    }
    if !fresh {
        // A server that was already running (ORANGE_TMUX_SOCKET): it never read our
        // config; the plugin still needs its binary. A user's own setting stays.
        if tmux
            .get_option(OptionScope::Global, plugin::OPT_BIN)?
            .is_none()
        {
            tmux.set_option(
                OptionScope::Global,
                plugin::OPT_BIN,
                &sb.exe.display().to_string(),
            )?;
        }
        tmux.set_global_environment("ORANGE_HOME", &sb.home.root.display().to_string())?;
    }
    tmux.run_shell(&tmux::shell_quote(
        &sb.plugin_dir.join("orange.tmux").display().to_string(),
    ))?;
    Ok(demo_session)
}

/// The project `shop` and its three tasks, and the sidebar beside the first one (or why
/// not).
fn start_tasks(home: &Home, plain: &Tmux, repo: &Path) -> Result<(Vec<Task>, Value)> {
    let project = project::add(
        home,
        AddOptions {
            path: repo.to_path_buf(),
            name: Some("shop".into()),
            pool_size: Some(TASKS.len() as i64),
            default_branch: None,
            setup_cmd: None,
            copy: vec![],
            symlink: vec![],
            port_base: None,
            sandbox: None,
        },
    )?;
    let mut tasks = TaskService::new(home).with_tmux(plain.clone());
    let mut made = Vec::new();
    for (branch, summary) in TASKS {
        let created = tasks.create(
            &project,
            CreateRequest {
                branch: Some(branch.to_string()),
                summary: Some(summary.to_string()),
                harness: None,
                context: None,
                spawn: true,
                sandbox: None,
                headless: false,
                group: None,
                limits: Default::default(),
            },
        )?;
        let t = created.task;
        made.push(t);
    }
    let first = &made[0];
    let first_session = first.tmux_session_id.clone().unwrap_or_default();
    let sidebar = match plain.session_info(&first_session)? {
        Some(info) => match plugin::toggle_sidebar_at(home, plain, &info.pane_id) {
            Ok(v) => v,
            Err(e) => json!({"error": e.to_string()}),
        },
        None => json!({"error": "the first task's session is gone"}),
    };
    Ok((made, sidebar))
}

/// What `orange demo` says: where the sandbox is, how to list its tasks, attach and stop.
fn summary(
    sb: &Sandbox,
    plain: &Tmux,
    n: usize,
    replaced: Option<&Path>,
    attach: &str,
    stop: &str,
) -> String {
    let socket_env = match plain.server() {
        Server::Name(n) => format!("ORANGE_TMUX_SOCKET={} ", tmux::shell_quote(n)),
        Server::Path(p) => format!(
            "ORANGE_TMUX_SOCKET={} ",
            tmux::shell_quote(&p.display().to_string())
        ),
        Server::Default => String::new(),
    };
    let mut text = String::new();
    if let Some(old) = replaced {
        text.push_str(&format!(
            "orange demo: replaced the previous demo (its tmux server, agents and monitor, and {})\n",
            old.display()
        ));
    }
    text.push_str(&format!(
        "orange demo: {n} demo agents are working on a sandbox shop repository.\n\n\
         \x20 sandbox      {root}\n\
         \x20 tmux server  tmux {server}   (isolated: your own tmux server is untouched)\n\
         \x20 tasks        ORANGE_HOME={home} {socket_env}{exe} task list --all\n\
         \x20 attach       {attach}\n\
         \x20 stop         {stop}\n\n\
         In the demo: prefix O s sidebar · O l tasks · O w next waiting · O m actions · O n new task · O ? help;\n\
         Ctrl+\\ focuses the sidebar and Ctrl+] zooms the agent (in task sessions).\n",
        root = sb.root.display(),
        server = server_label(plain),
        home = tmux::shell_quote(&sb.home.root.display().to_string()),
        exe = tmux::shell_quote(&sb.exe.display().to_string()),
    ));
    text
}

/// Inside tmux: the demo opens in a new window of the person's own server (a tmux inside
/// tmux: the prefix pressed twice reaches the demo's). Returns what to tell the person.
fn open_here(attach_argv: &[String], my_pane: Option<&str>) -> String {
    let mut nested = vec!["env".to_string(), "TMUX=".to_string()];
    nested.extend(attach_argv.iter().cloned());
    let own = Tmux::new(Tmux::server_from(
        None,
        std::env::var("TMUX").ok().as_deref(),
    ));
    match own.open_window("orange-demo", &nested, my_pane) {
        Ok(()) => "\nOpened in a new window here (orange-demo): the demo's tmux runs inside yours, so press your prefix twice to reach the demo's keys (C-b C-b O l).\n".to_string(),
        Err(e) => format!(
            "\nCould not open a window here ({e}); attach from another terminal, or nest it with `TMUX= ` before the attach command.\n"
        ),
    }
}

/// The demo server's option naming its sandbox directory (a re-run removes it).
const OPT_DEMO_DIR: &str = "@orange_demo_dir";

/// Remove a previous demo's directory. Its agents and monitor end with their server (the
/// monitor when it next looks, which can take a moment on a loaded machine): waited for,
/// up to 10 s, then asked to end; the removal is tried again while a last write lands.
fn remove_soon(dir: &Path) -> Result<()> {
    use crate::adapters::shell;
    let home = dir.join("orange-home").display().to_string();
    let start = std::time::Instant::now();
    loop {
        let left = shell::pids_with_env("ORANGE_HOME", &home);
        if left.is_empty() {
            break;
        }
        if start.elapsed() > std::time::Duration::from_secs(10) {
            left.into_iter().for_each(shell::terminate);
            std::thread::sleep(std::time::Duration::from_millis(200));
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let start = std::time::Instant::now();
    loop {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) if start.elapsed() > std::time::Duration::from_secs(5) => {
                return Err(OrangeError::io(format!("removing {}", dir.display()), e))
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(100)),
        }
    }
}

/// Every session of the server is a demo's: its welcome session (`demo`, `demo-<pid>`) or
/// a task session whose data root is the previous demo's.
fn only_demo_sessions(tmux: &Tmux, previous: Option<&Path>) -> bool {
    let Ok(sessions) = tmux.list_sessions() else {
        return true;
    };
    let home = previous.map(|d| d.join("orange-home").display().to_string());
    sessions.iter().all(|s| {
        s.name == "demo"
            || s.name.starts_with("demo-")
            || (home.is_some()
                && tmux
                    .get_option(OptionScope::Session(&s.id), "@orange_home")
                    .ok()
                    .flatten()
                    == home)
    })
}

/// This process runs inside the tmux server `tmux` talks to (killing it would kill us).
fn runs_inside(tmux: &Tmux) -> bool {
    let Some(ours) = std::env::var("TMUX")
        .ok()
        .and_then(|t| t.split(',').next().map(PathBuf::from))
    else {
        return false;
    };
    let canon = |p: PathBuf| p.canonicalize().unwrap_or(p);
    tmux.socket_path().map(canon) == Some(canon(ours))
}

/// A directory an `orange demo` made: its plugin copy, its data root and its welcome text.
fn is_demo_dir(d: &Path) -> bool {
    ["orange-home", "plugin/orange.tmux", "WELCOME.txt", "shop"]
        .iter()
        .all(|p| d.join(p).exists())
}

/// A value for a tmux config line: single-quoted (tmux takes it literally).
fn tmux_conf_quote(s: &str) -> String {
    if s.contains('\'') {
        format!(
            "\"{}\"",
            s.replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('$', "\\$")
        )
    } else {
        format!("'{s}'")
    }
}

fn welcome_text(home: &Home, repo: &Path, tmux: &Tmux) -> String {
    format!(
        "\n  Welcome to the orange demo.\n\n\
         \x20 Three demo agents work in their own tmux sessions and git worktrees of a\n\
         \x20 sandbox repository ({repo}).\n\n\
         \x20 prefix O l   pick a task (live preview)     prefix O s   toggle the sidebar\n\
         \x20 prefix O w   next task waiting for you     prefix O m   actions for this task\n\
         \x20 prefix O n   new task                       prefix O ?   all keys\n\
         \x20 Ctrl+\\       focus the sidebar (in a task)  Ctrl+]       zoom the agent pane\n\n\
         \x20 This shell has ORANGE_HOME={home}: try `orange task list`.\n\
         \x20 Leave with prefix d; stop everything with `tmux {server} kill-server`.\n\n",
        repo = repo.display(),
        home = home.root.display(),
        server = server_label(tmux),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conf_quoting() {
        assert_eq!(tmux_conf_quote("/a b/orange"), "'/a b/orange'");
        assert_eq!(tmux_conf_quote("/it's/$x\""), "\"/it's/\\$x\\\"\"");
    }
}
