//! The sandbox an agent runs in (issue 14): which sandbox a task gets, and what it may
//! see and write. bubblewrap does the work (`adapters::bwrap`); this module decides the
//! mounts:
//!
//! - read-only: the whole system and `$HOME` (its entries bound read-only into a private
//!   `$HOME`, so that programs that write a temporary file beside their state can);
//! - hidden: `/tmp` and `/run` (a private, empty tmpfs each: the sockets of tmux, the
//!   session bus, docker, ssh agents live there), the tmux server's socket wherever it
//!   is, orange's ssh control sockets;
//! - writable: the task's workspace (but its `.git` file); the parts of the repository's
//!   git directory a commit in that worktree writes (its own `worktrees/<name>` but the
//!   files that say where the repository is, `objects`, `refs`, `logs`); the
//!   agent's own state (`~/.claude`, `~/.claude.json`, `~/.pi`, `~/.codex`, opencode's
//!   XDG directories); of its task's directory under `$ORANGE_HOME/tasks`, its TASK.md and
//!   its `agent/` (where its hooks write, its requests), and `run/poke` (how its hooks wake
//!   the monitor); whatever the user lists in `sandbox_writable`.
//!
//! Inside, orange's hooks only write and poke (`ORANGE_SANDBOX` is set): no tmux. An
//! agent's `orange task complete|stuck|update` becomes a request in its task directory
//! that the monitor carries out outside ([`request`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::adapters::bwrap::{self, Mount, Spec};
use crate::adapters::store::{self, Home};
use crate::error::{OrangeError, Result};

/// Set in the sandbox's environment (its value: the kind).
pub const ENV: &str = "ORANGE_SANDBOX";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    #[default]
    None,
    Bwrap,
}

impl Kind {
    pub fn parse(s: &str) -> Result<Kind> {
        match s.trim() {
            "none" | "off" | "" => Ok(Kind::None),
            "bwrap" | "bubblewrap" => Ok(Kind::Bwrap),
            other => Err(OrangeError::invalid(format!(
                "unknown sandbox {other:?}: \"bwrap\" or \"none\""
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::None => "none",
            Kind::Bwrap => "bwrap",
        }
    }

    /// Can this sandbox run here? (Nothing to check for `none`.)
    pub fn preflight(self) -> Result<()> {
        match self {
            Kind::None => Ok(()),
            Kind::Bwrap => bwrap::probe(),
        }
    }
}

/// The sandbox of a new task: `--sandbox`, else the project's (`project add/update
/// --sandbox`, then `[project.<name>] sandbox`), else the harness's (`[harness.<name>]
/// sandbox`), else config.toml's `sandbox`, else none.
pub fn choose(
    flag: Option<&str>,
    project: &crate::execution::repo::Project,
    config: &crate::execution::config::Config,
    harness: &str,
) -> Result<Kind> {
    let named = flag
        .map(str::to_string)
        .or_else(|| project.sandbox.clone())
        .or_else(|| config.harness.get(harness).and_then(|h| h.sandbox.clone()))
        .or_else(|| config.sandbox.clone());
    named.map_or(Ok(Kind::None), |s| Kind::parse(&s))
}

/// `sandbox_writable` and `sandbox_readable` of config.toml that apply to an agent: the
/// top level's, its project's and its harness's together.
pub fn extra_paths(
    config: &crate::execution::config::Config,
    project: &str,
    harness: &str,
) -> (Vec<String>, Vec<String>) {
    let all = std::iter::once(&config.sandbox_paths)
        .chain(config.project.get(project).map(|p| &p.sandbox_paths))
        .chain(config.harness.get(harness).map(|h| &h.sandbox_paths));
    let (mut w, mut r) = (vec![], vec![]);
    for p in all {
        w.extend(p.sandbox_writable.iter().cloned());
        r.extend(p.sandbox_readable.iter().cloned());
    }
    (w, r)
}

/// Is this process inside an orange sandbox?
pub fn inside() -> bool {
    std::env::var_os(ENV).is_some_and(|v| !v.is_empty())
}

/// What one sandboxed agent is given.
#[derive(Debug, Clone)]
pub struct Context<'a> {
    pub home: &'a Home,
    /// The harness's name (its own state is writable).
    pub harness: &'a str,
    pub workspace: &'a Path,
    pub task_dir: &'a Path,
    pub project_path: &'a Path,
    /// The tmux server's socket (hidden).
    pub tmux_socket: Option<PathBuf>,
    /// `sandbox_writable` / `sandbox_readable` from config.toml (`~/` allowed).
    pub extra_writable: &'a [String],
    pub extra_readable: &'a [String],
}

/// The user's home, when there is a real one (not `/`).
fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute() && h.parent().is_some())
        .map(|h| h.canonicalize().unwrap_or(h))
}

/// `~/x` → `$HOME/x`; other paths as they are (absolute only).
fn expand(p: &str, home: Option<&Path>) -> Option<PathBuf> {
    match (p.strip_prefix("~/"), home) {
        (Some(rest), Some(h)) => Some(h.join(rest)),
        (Some(_), None) => None,
        _ => Some(PathBuf::from(p)).filter(|p| p.is_absolute()),
    }
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// The directories and files a harness keeps its own state in (created when missing, so
/// that the agent can write them; files are only bound when they exist).
fn agent_state(harness: &str, home: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let env_dir = |var: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    match harness {
        "claude" => (vec![claude_dir(home)], vec![home.join(".claude.json")]),
        "pi" => (vec![home.join(".pi")], vec![]),
        "codex" => (
            vec![env_dir("CODEX_HOME").unwrap_or_else(|| home.join(".codex"))],
            vec![],
        ),
        "opencode" => (
            vec![
                home.join(".local/share/opencode"),
                home.join(".config/opencode"),
                home.join(".cache/opencode"),
                home.join(".local/state/opencode"),
            ],
            vec![],
        ),
        _ => (vec![], vec![]),
    }
}

/// What the agent may write, in mount order (every path absolute), given the worktree's
/// own git dir and the repository's common one. Directories that must exist for the agent
/// to write them are created here, outside the sandbox.
fn writable(ctx: &Context, own: &Path, common: &Path) -> Result<Vec<PathBuf>> {
    let home = home_dir();
    let mut out = vec![canonical(ctx.workspace)];
    out.push(own.to_path_buf());
    for sub in ["objects", "refs", "logs"] {
        let p = common.join(sub);
        store::ensure_dir(&p)?;
        out.push(p);
    }
    // Of the task's directory: its agent's part (its hooks' agent.json, its requests), and
    // TASK.md (the agent's to edit); not task.json or history.jsonl, which orange replaces
    // by rename (a read-only bind of a file is undone when the file is replaced).
    let agent = agent_dir(ctx.task_dir);
    store::ensure_dir(&agent)?;
    out.push(canonical(&agent));
    out.push(canonical(&ctx.task_dir.join("TASK.md")));
    let poke = ctx.home.poke_file();
    if !poke.exists() {
        store::poke(ctx.home);
    }
    out.push(canonical(&poke));
    if let Some(h) = &home {
        let (dirs, files) = agent_state(ctx.harness, h);
        for d in dirs {
            store::ensure_dir(&d)?;
            out.push(canonical(&d));
        }
        out.extend(files.into_iter().filter(|f| f.exists()));
    }
    out.extend(
        ctx.extra_writable
            .iter()
            .filter_map(|p| expand(p, home.as_deref())),
    );
    Ok(out)
}

/// Where Claude Code keeps its own state (`$CLAUDE_CONFIG_DIR`, else `~/.claude`).
fn claude_dir(home: &Path) -> PathBuf {
    std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| home.join(".claude"))
}

/// The directory a sandboxed claude's `sessions/<pid>.json` go to: its task's own (its pid
/// inside is not the one outside, and every sandbox's would be the same).
pub fn claude_sessions(task_dir: &Path) -> PathBuf {
    agent_dir(task_dir).join("claude-sessions")
}

/// What in a harness's writable state would run commands OUTSIDE the sandbox the next time
/// the person starts that program themselves (Claude Code's settings hooks, its plugins,
/// agents and commands): read-only inside. A missing `settings.json` is made (`{}`) so
/// that it can be.
fn agent_config_read_only(harness: &str, home: &Path) -> Result<Vec<PathBuf>> {
    if harness != "claude" {
        return Ok(vec![]);
    }
    let dir = claude_dir(home);
    let settings = dir.join("settings.json");
    if !settings.exists() {
        std::fs::write(&settings, "{}\n")
            .map_err(|e| OrangeError::io(format!("writing {}", settings.display()), e))?;
    }
    Ok(["settings.json", "hooks", "agents", "commands", "plugins"]
        .iter()
        .map(|n| dir.join(n))
        .filter(|p| p.exists())
        .collect())
}

/// Sockets inside `dir` (one level): each would lead out of the sandbox.
fn sockets_in(dir: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_socket()))
        .map(|e| e.path())
        .collect()
}

/// The whole bwrap specification for one agent. Mounts in order: what is hidden or
/// read-only, then what is writable, then what must stay read-only or hidden inside the
/// writable places (and whatever `sandbox_writable` uncovered).
pub fn spec(ctx: &Context) -> Result<Spec> {
    let home = home_dir().ok_or_else(|| {
        OrangeError::invalid(
            "the sandbox needs HOME (a directory other than /): it makes HOME read-only and the agent's own state in it writable",
        )
    })?;
    let (own, common) = crate::adapters::git::git_dirs(ctx.workspace)?;
    if own == common {
        return Err(OrangeError::invalid(format!(
            "{} is not a linked worktree: a sandbox gives an agent only a worktree's own git directory",
            ctx.workspace.display()
        )));
    }
    let writable = writable(ctx, &own, &common)?;
    let mut mounts = vec![Mount::Tmpfs("/tmp".into()), Mount::Tmpfs("/run".into())];
    // Name resolution may live under /run (systemd-resolved's stub-resolv.conf).
    if let Ok(resolv) = Path::new("/etc/resolv.conf").canonicalize() {
        if let Some(dir) = resolv.parent().filter(|d| d.starts_with("/run")) {
            mounts.push(Mount::ReadOnly(dir.to_path_buf()));
        }
    }
    // A private $HOME holding the real one's entries, read-only: a new file there (a
    // temporary file beside ~/.claude.json) lands in memory and is gone at the end.
    mounts.push(Mount::Tmpfs(home.clone()));
    let mut entries: Vec<_> = std::fs::read_dir(&home)
        .map_err(|e| OrangeError::io(format!("reading {}", home.display()), e))?
        .filter_map(|e| e.ok())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let at = e.path();
        // A socket here leads out of the sandbox (read-only does not stop connect).
        use std::os::unix::fs::FileTypeExt;
        if e.file_type().is_ok_and(|t| t.is_socket()) {
            continue;
        }
        match std::fs::read_link(&at) {
            Ok(target) => mounts.push(Mount::Symlink { target, at }),
            Err(_) => mounts.push(Mount::ReadOnly(at)),
        }
    }
    // What a private /tmp or /run would hide but the agent must read: orange's data, the
    // repository, orange itself (its hooks run it).
    mounts.push(Mount::ReadOnly(canonical(&ctx.home.root)));
    mounts.push(Mount::ReadOnly(canonical(ctx.project_path)));
    if let Ok(exe) = std::env::current_exe() {
        mounts.push(Mount::ReadOnly(canonical(&exe)));
    }
    mounts.extend(
        ctx.extra_readable
            .iter()
            .filter_map(|p| expand(p, Some(&home)))
            .map(Mount::ReadOnly),
    );
    mounts.extend(writable.into_iter().map(Mount::Writable));
    // A sandboxed claude's sessions/<pid>.json: its task's own directory.
    if ctx.harness == "claude" {
        let sessions = claude_sessions(ctx.task_dir);
        store::ensure_dir(&sessions)?;
        mounts.push(Mount::Writable(canonical(&sessions)));
        mounts.push(Mount::Rebind {
            from: canonical(&sessions),
            to: claude_dir(&home).join("sessions"),
        });
    }
    // What tells git where the repository is stays as orange made it: rewritten, it would
    // point git — also orange's own git outside, which reads the workspace — at a config
    // the agent wrote (core.fsmonitor runs a command). The worktree's `.git` file, its git
    // dir's `commondir` and `gitdir`, and `config.worktree` (read when the repository has
    // extensions.worktreeConfig; an empty one is made when missing) are read-only.
    mounts.push(Mount::ReadOnly(canonical(ctx.workspace).join(".git")));
    mounts.push(Mount::ReadOnly(own.join("commondir")));
    mounts.push(Mount::ReadOnly(own.join("gitdir")));
    let wt_config = own.join("config.worktree");
    mounts.push(if wt_config.exists() {
        Mount::ReadOnly(wt_config)
    } else {
        Mount::Null(wt_config)
    });
    mounts.extend(
        agent_config_read_only(ctx.harness, &home)?
            .into_iter()
            .map(Mount::ReadOnly),
    );
    // Last, so that nothing made writable uncovers them: sockets that lead out of the
    // sandbox. The tmux server's (it runs any command), orange's shared ssh connections to
    // remote hosts (made now if missing: a host added later puts its socket there), and
    // the sockets of ssh, gpg and docker in the home directory.
    if let Some(sock) = &ctx.tmux_socket {
        if sock.exists() {
            mounts.push(Mount::Null(canonical(sock)));
        }
    }
    let ssh = ctx.home.run_dir().join("ssh");
    store::ensure_dir(&ssh)?;
    mounts.push(Mount::Tmpfs(canonical(&ssh)));
    for dir in [".gnupg", ".docker/run"] {
        if home.join(dir).is_dir() {
            mounts.push(Mount::Tmpfs(home.join(dir)));
        }
    }
    mounts.extend(sockets_in(&home.join(".ssh")).into_iter().map(Mount::Null));
    let mut setenv = vec![(ENV.to_string(), Kind::Bwrap.as_str().to_string())];
    // Claude Code refuses --dangerously-skip-permissions as root unless told it runs in a
    // sandbox: it does now (and only here).
    if ctx.harness == "claude" && crate::adapters::shell::is_root() {
        setenv.push(("IS_SANDBOX".into(), "1".into()));
    }
    Ok(Spec {
        mounts,
        cwd: canonical(ctx.workspace),
        setenv,
        unsetenv: vec!["SSH_AUTH_SOCK".into()],
    })
}

/// `command`, run in the sandbox.
pub fn wrap(ctx: &Context, command: &[String]) -> Result<Vec<String>> {
    Ok(bwrap::argv(&spec(ctx)?, command))
}

/// A change an agent in a sandbox asks of its own task (it cannot write orange's state),
/// carried out by the monitor outside: one JSON line in `<task dir>/requests.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// `complete`, `stuck`, or `update`.
    pub op: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    pub at: String,
}

/// What a task's agent may write in its task's directory (`orchestration::agent::agent_dir`
/// is the same place).
pub fn agent_dir(task_dir: &Path) -> PathBuf {
    task_dir.join("agent")
}

pub fn requests_path(task_dir: &Path) -> PathBuf {
    agent_dir(task_dir).join("requests.jsonl")
}

/// Queue a request (from inside the sandbox) and wake the monitor.
pub fn request(home: &Home, task_dir: &Path, req: &Request) -> Result<()> {
    use std::io::Write;
    let path = requests_path(task_dir);
    store::ensure_dir(&agent_dir(task_dir))?;
    let mut line = serde_json::to_string(req).expect("request serializes");
    line.push('\n');
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .map_err(|e| OrangeError::io(format!("writing {}", path.display()), e))?;
    store::poke(home);
    Ok(())
}

/// Take the queued requests of a task (outside the sandbox): they are removed from the
/// file before they are returned, so each is carried out once.
pub fn take_requests(task_dir: &Path) -> Vec<Request> {
    let path = requests_path(task_dir);
    let taking = agent_dir(task_dir).join(".requests.taking");
    let taken = agent_dir(task_dir).join(".requests.taken");
    // Read only regular files (the agent writes this directory: a FIFO or a link must not
    // hang or redirect the monitor), at most 1 MiB of requests at a time.
    let read = |p: &Path| {
        store::read_regular(p, 1 << 20)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    };
    // A file left by a pass killed half-way is taken first, then the new ones.
    let mut text = read(&taken);
    if std::fs::rename(&path, &taking).is_ok() {
        text.push_str(&read(&taking));
        let _ = std::fs::remove_file(&taking);
    }
    if text.is_empty() {
        let _ = std::fs::remove_file(&taken);
        return vec![];
    }
    // What is being carried out stays in one place until [`requests_done`]: a kill before
    // then repeats it, never loses it (a status already set is no change).
    let _ = store::write_bytes_atomic(&taken, text.as_bytes());
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The requests [`take_requests`] returned were carried out.
pub fn requests_done(task_dir: &Path) {
    let _ = std::fs::remove_file(agent_dir(task_dir).join(".requests.taken"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse() {
        assert_eq!(Kind::parse("bwrap").unwrap(), Kind::Bwrap);
        assert_eq!(Kind::parse("none").unwrap(), Kind::None);
        let e = Kind::parse("docker").unwrap_err();
        assert_eq!(e.code(), "invalid_argument");
    }

    #[test]
    fn paths_expand_only_from_home_or_absolute() {
        let h = Path::new("/home/u");
        assert_eq!(expand("~/.cache/x", Some(h)).unwrap(), h.join(".cache/x"));
        assert_eq!(expand("/opt/x", Some(h)).unwrap(), PathBuf::from("/opt/x"));
        assert_eq!(expand("rel/x", Some(h)), None);
        assert_eq!(expand("~/x", None), None);
    }

    #[test]
    fn requests_are_taken_once() {
        let d = tempfile::tempdir().unwrap();
        let home = Home {
            root: d.path().join("home"),
        };
        let task = d.path().join("t");
        std::fs::create_dir_all(&task).unwrap();
        let r = Request {
            op: "complete".into(),
            status: None,
            summary: Some("it's $(done)\n`x`".into()),
            at: "now".into(),
        };
        request(&home, &task, &r).unwrap();
        request(&home, &task, &r).unwrap();
        assert_eq!(take_requests(&task), vec![r.clone(), r.clone()]);
        // Not marked done (the pass was killed): taken again, with what came since.
        request(&home, &task, &r).unwrap();
        assert_eq!(take_requests(&task).len(), 3);
        requests_done(&task);
        assert!(take_requests(&task).is_empty());
        // A FIFO planted by the agent neither hangs nor counts.
        let fifo = std::ffi::CString::new(requests_path(&task).to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert!(take_requests(&task).is_empty());
    }
}
