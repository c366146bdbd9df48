//! The sandbox an agent runs in: which sandbox a task gets, and what it may
//! see and write. bubblewrap does the work (`adapters::bwrap`); this module decides the
//! mounts:
//!
//! - read-only: the whole system and `$HOME` (its entries bound read-only into a private
//!   `$HOME`, so that programs that write a temporary file beside their state can);
//! - hidden: `/tmp` and `/run` (a private, empty tmpfs each: the sockets of tmux, the
//!   session bus, docker, ssh agents live there), the tmux server's socket wherever it
//!   is, orange's ssh control sockets;
//! - the repository's git directory as `sandbox_git` makes it (its `objects`, `refs`,
//!   `logs` and this worktree's own `worktrees/<name>` writable, the rest read-only, its
//!   top level private); its local remotes read-only (`git fetch` reads them);
//! - writable: the task's workspace (but its `.git` file, and of its own git dir the
//!   files that say where the repository is); the
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
use crate::execution::harness::{claude, kind_of, Harness};
use crate::execution::sandbox_git;

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
    /// The agent's own part of orange's data (a task's: [`agent_dir`]): writable, made
    /// when missing.
    pub agent_dir: &'a Path,
    /// Its task's TASK.md (the agent's to edit), when it has one.
    pub task_md: Option<&'a Path>,
    pub project_path: &'a Path,
    /// The tmux server's socket (hidden).
    pub tmux_socket: Option<PathBuf>,
    /// `sandbox_writable` / `sandbox_readable` from config.toml (`~/` allowed).
    pub extra_writable: &'a [String],
    pub extra_readable: &'a [String],
    /// A reviewer: the workspace and the repository's git directory read-only (only the
    /// agent's own state, its `agent_dir` and `sandbox_writable` are writable).
    pub read_only: bool,
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

/// What the agent may write, in mount order (every path absolute), but the repository's
/// git directory ([`sandbox_git`]). Directories that must exist for the agent to write
/// them are created here, outside the sandbox.
fn writable(ctx: &Context) -> Result<Vec<PathBuf>> {
    let home = home_dir();
    let mut out = if ctx.read_only {
        vec![]
    } else {
        vec![canonical(ctx.workspace)]
    };
    // Of the task's directory: its agent's part (its hooks' agent.json, its requests), and
    // TASK.md (the agent's to edit); not task.json or history.jsonl, which orange replaces
    // by rename (a read-only bind of a file is undone when the file is replaced).
    store::ensure_dir(ctx.agent_dir)?;
    out.push(canonical(ctx.agent_dir));
    out.extend(ctx.task_md.map(canonical));
    let poke = ctx.home.poke_file();
    if !poke.exists() {
        store::poke(ctx.home);
    }
    out.push(canonical(&poke));
    if let Some(h) = &home {
        let (dirs, files) = kind_of(ctx.harness).state(h);
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

/// The directory a sandboxed claude's `sessions/<pid>.json` go to: its task's own (its pid
/// inside is not the one outside, and every sandbox's would be the same).
pub fn claude_sessions(task_dir: &Path) -> PathBuf {
    claude::paths::sandbox_sessions(&agent_dir(task_dir))
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

/// What every sandbox of this project shows before its git directory and what it may
/// write: `/tmp` and `/run` private, a private `$HOME` holding the real one's entries
/// read-only, and read-only what those would hide but the agent must read (orange's data,
/// the repository, orange itself, `sandbox_readable`).
fn outer_mounts(
    orange: &Home,
    project_path: &Path,
    extra_readable: &[String],
    home: &Path,
) -> Result<Vec<Mount>> {
    let mut mounts = vec![Mount::Tmpfs("/tmp".into()), Mount::Tmpfs("/run".into())];
    // Name resolution may live under /run (systemd-resolved's stub-resolv.conf).
    if let Ok(resolv) = Path::new("/etc/resolv.conf").canonicalize() {
        if let Some(dir) = resolv.parent().filter(|d| d.starts_with("/run")) {
            mounts.push(Mount::ReadOnly(dir.to_path_buf()));
        }
    }
    // A private $HOME holding the real one's entries, read-only: a new file there (a
    // temporary file beside ~/.claude.json) lands in memory and is gone at the end.
    mounts.push(Mount::Tmpfs(home.to_path_buf()));
    let mut entries: Vec<_> = std::fs::read_dir(home)
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
    mounts.push(Mount::ReadOnly(canonical(&orange.root)));
    mounts.push(Mount::ReadOnly(canonical(project_path)));
    if let Ok(exe) = std::env::current_exe() {
        mounts.push(Mount::ReadOnly(canonical(&exe)));
    }
    mounts.extend(
        extra_readable
            .iter()
            .filter_map(|p| expand(p, Some(home)))
            .map(Mount::ReadOnly),
    );
    Ok(mounts)
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
    let writable = writable(ctx)?;
    let mut mounts = outer_mounts(ctx.home, ctx.project_path, ctx.extra_readable, &home)?;
    // The repository's remotes that are directories here (`git fetch` reads them).
    mounts.extend(
        crate::adapters::git::local_remote_paths(ctx.project_path)
            .into_iter()
            .map(Mount::ReadOnly),
    );
    if ctx.read_only {
        // The repository's git directory and the worktree stay as the system shows them:
        // read-only (both are under orange's data or the repository, bound read-only).
        mounts.push(Mount::ReadOnly(common.clone()));
        mounts.push(Mount::ReadOnly(canonical(ctx.workspace)));
    } else {
        mounts.extend(sandbox_git::mounts(ctx.home, &own, &common)?);
    }
    mounts.extend(writable.into_iter().map(Mount::Writable));
    let kind = kind_of(ctx.harness);
    // What the program needs beyond that (claude: its sessions/<pid>.json in its task's
    // own directory).
    mounts.extend(kind.sandbox_mounts(ctx.agent_dir, &home)?);
    // What tells git where the repository is stays as orange made it: rewritten, it would
    // point git — also orange's own git outside, which reads the workspace — at a config
    // the agent wrote (core.fsmonitor runs a command). The worktree's `.git` file, its git
    // dir's `commondir` and `gitdir`, and `config.worktree` (read when the repository has
    // extensions.worktreeConfig; an empty one is made when missing) are read-only.
    mounts.push(Mount::ReadOnly(canonical(ctx.workspace).join(".git")));
    mounts.push(Mount::ReadOnly(own.join("commondir")));
    mounts.push(Mount::ReadOnly(own.join("gitdir")));
    let wt_config = own.join("config.worktree");
    if wt_config.exists() {
        mounts.push(Mount::ReadOnly(wt_config));
    } else if !ctx.read_only {
        // (Read-only, nothing can be made there.)
        mounts.push(Mount::Null(wt_config));
    }
    mounts.extend(
        kind.sandbox_read_only(&home)?
            .into_iter()
            .map(Mount::ReadOnly),
    );
    // Last, so that nothing made writable uncovers them: sockets that lead out of the
    // sandbox (orange's ssh connections' directory made now if missing: a host added later
    // puts its socket there).
    store::ensure_dir(&ctx.home.run_dir().join("ssh"))?;
    mounts.extend(hidden_mounts(ctx.home, ctx.tmux_socket.as_deref(), &home));
    let mut setenv = vec![(ENV.to_string(), Kind::Bwrap.as_str().to_string())];
    setenv.extend(kind.sandbox_env());
    Ok(Spec {
        mounts,
        cwd: canonical(ctx.workspace),
        setenv,
        unsetenv: vec!["SSH_AUTH_SOCK".into()],
        setup_mark: setup_mark(ctx.agent_dir),
    })
}

/// Where the step before bwrap learns that the sandbox was made (`bwrap::Spec::setup_mark`):
/// beside the agent's own directory (a task's `agent/`, a reviewer's `reviewer/`, a lane's
/// `lanes/.agent/<id>`), in the directory that holds it, which the sandbox shows read-only
/// (of orange's data only the agent's own directory is writable there).
fn setup_mark(agent_dir: &Path) -> PathBuf {
    let name = agent_dir.file_name().unwrap_or_default().to_string_lossy();
    agent_dir.with_file_name(format!(".{name}.sandbox"))
}

/// What is hidden last: the tmux server's socket (it runs any command), orange's shared
/// ssh connections to remote hosts, and the sockets of ssh, gpg and docker in the home
/// directory.
fn hidden_mounts(orange: &Home, tmux_socket: Option<&Path>, home: &Path) -> Vec<Mount> {
    let mut mounts = vec![];
    if let Some(sock) = tmux_socket.filter(|s| s.exists()) {
        mounts.push(Mount::Null(canonical(sock)));
    }
    mounts.push(Mount::Tmpfs(canonical(&orange.run_dir().join("ssh"))));
    for dir in [".gnupg", ".docker/run"] {
        if home.join(dir).is_dir() {
            mounts.push(Mount::Tmpfs(home.join(dir)));
        }
    }
    mounts.extend(sockets_in(&home.join(".ssh")).into_iter().map(Mount::Null));
    mounts
}

/// The mount that hides `path` (absolute, links resolved) inside a sandbox made of
/// `mounts` on top of the whole system read-only; `None` when the agent sees it.
fn hidden_by<'a>(mounts: &'a [Mount], path: &Path) -> Option<&'a Path> {
    let mut hidden = None;
    for m in mounts {
        match m {
            Mount::Tmpfs(t) if path.starts_with(t) && path != t => hidden = Some(t.as_path()),
            Mount::Null(t) if path.starts_with(t) => hidden = Some(t.as_path()),
            Mount::ReadOnly(p) | Mount::Writable(p) if path.starts_with(p) && p.exists() => {
                hidden = None
            }
            Mount::Rebind { to, .. } | Mount::ReadOnlyAt { to, .. } if path.starts_with(to) => {
                hidden = None
            }
            _ => {}
        }
    }
    hidden
}

/// Programs that run a script named by their first argument that is not an option.
const INTERPRETERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "fish", "python", "python3", "node", "perl", "ruby", "bun",
    "deno", "tsx",
];

/// The files a harness starts: its program as found on PATH (as named, and what that links
/// to), the interpreter a script names on its `#!` line, and the script an interpreter
/// is given (`sh /opt/agent.sh`). Not every path its command names: one may be meant to
/// be missing inside.
fn named_paths(harness: &Harness) -> Vec<PathBuf> {
    use crate::adapters::shell::find_on_path;
    let mut named: Vec<PathBuf> = vec![];
    if let Some(p) = harness.program().and_then(find_on_path) {
        named.push(p);
    }
    for command in [&harness.command, &harness.respawn_command]
        .into_iter()
        .flatten()
    {
        let mut words = command
            .split_whitespace()
            .map(|w| w.trim_matches(|c| c == '\'' || c == '"'));
        let Some(first) = words.next() else { continue };
        named.extend(find_on_path(first));
        let base = first.rsplit('/').next().unwrap_or(first);
        if INTERPRETERS.contains(&base) {
            if let Some(script) = words.find(|w| !w.starts_with('-')) {
                if script.starts_with('/') && Path::new(script).is_file() {
                    named.push(PathBuf::from(script));
                }
            }
        }
    }
    let mut out: Vec<PathBuf> = vec![];
    for p in named {
        if !p.is_absolute() {
            continue;
        }
        // The path as named (its directory's links resolved), what it links to, and the
        // interpreter a script names (`#!/usr/bin/env node`: node, from PATH).
        let at = match (p.parent(), p.file_name()) {
            (Some(d), Some(n)) => canonical(d).join(n),
            _ => p.clone(),
        };
        let target = canonical(&p);
        let mut interpreter = vec![];
        if let Some(line) = shebang(&target) {
            let mut words = line.split_whitespace();
            if let Some(first) = words.next() {
                interpreter.push(canonical(Path::new(first)));
                if first.ends_with("/env") {
                    interpreter.extend(
                        words
                            .find(|w| !w.starts_with('-') && !w.contains('='))
                            .and_then(find_on_path)
                            .map(|p| canonical(&p)),
                    );
                }
            }
        }
        for q in [at, target].into_iter().chain(interpreter) {
            if q.is_absolute() && !out.contains(&q) {
                out.push(q);
            }
        }
    }
    out
}

/// The `#!` line of a script (without `#!`), if `path` is one.
fn shebang(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path).ok()?.read(&mut head).ok()?;
    let text = String::from_utf8_lossy(&head[..n]);
    text.strip_prefix("#!")
        .and_then(|t| t.lines().next())
        .map(str::to_string)
}

/// Would the agent of `harness` find what it runs inside the sandbox? A program (or a
/// script, or its interpreter) in a place the sandbox hides — `/tmp`, `/run` — would exit
/// 127 in an empty pane: refused before anything is recorded, naming the path and how to
/// show it (`sandbox_readable`).
pub fn check_visible(
    orange: &Home,
    project_path: &Path,
    harness: &Harness,
    extra_writable: &[String],
    extra_readable: &[String],
) -> Result<()> {
    let Some(home) = home_dir() else {
        return Ok(());
    };
    let mut mounts = outer_mounts(orange, project_path, extra_readable, &home)?;
    mounts.extend(
        extra_writable
            .iter()
            .filter_map(|p| expand(p, Some(&home)))
            .map(Mount::Writable),
    );
    mounts.extend(hidden_mounts(orange, None, &home));
    for p in named_paths(harness) {
        if let Some(by) = hidden_by(&mounts, &p) {
            let dir = p.parent().unwrap_or(&p);
            return Err(OrangeError::invalid(format!(
                "harness {:?} runs {}, which its agent would not find inside the sandbox ({} is private there): add its directory to sandbox_readable in config.toml (sandbox_readable = [\"{}\"], at the top level, under [project.NAME] or [harness.{}]), or pass --sandbox none",
                harness.name,
                p.display(),
                by.display(),
                dir.display(),
                harness.name
            )));
        }
    }
    Ok(())
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

/// The part of a task's directory its agent writes (its hooks' `agent.json` and lock, the
/// requests of a sandboxed agent, a sandboxed claude's sessions): a sandbox makes this
/// directory writable, not the task's own files. The one definition (the monitor's
/// `agent.json` is here too).
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
    store::poke_other(home);
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
    fn what_the_sandbox_hides_is_what_no_later_mount_shows() {
        let d = tempfile::tempdir_in("/tmp").unwrap();
        let shown = d.path().join("shown");
        std::fs::create_dir_all(&shown).unwrap();
        let mounts = vec![
            Mount::Tmpfs("/tmp".into()),
            Mount::ReadOnly(shown.clone()),
            Mount::Null(shown.join("sock")),
        ];
        assert_eq!(hidden_by(&mounts, &shown.join("agent")), None);
        assert_eq!(
            hidden_by(&mounts, &d.path().join("agent")),
            Some(Path::new("/tmp"))
        );
        assert_eq!(
            hidden_by(&mounts, &shown.join("sock")),
            Some(shown.join("sock").as_path())
        );
        assert_eq!(hidden_by(&mounts, Path::new("/usr/bin/sh")), None);
    }

    #[test]
    fn a_harness_names_its_program_its_script_and_their_interpreter() {
        let d = tempfile::tempdir_in("/tmp").unwrap();
        let dir = d.path().canonicalize().unwrap();
        let script = dir.join("agent.sh");
        std::fs::write(&script, "#!/usr/bin/env sh\necho hi\n").unwrap();
        let h = |command: &str| Harness {
            name: "x".into(),
            command: Some(command.into()),
            respawn_command: None,
            nudge_keys: vec![],
            permission_mode: None,
            nudge_message: None,
            nudge_submit: "Enter".into(),
            mode: Default::default(),
            status_reports: false,
        };
        let named = named_paths(&h(&format!("sh {} {{prompt}}", script.display())));
        assert!(named.contains(&script), "{named:?}");
        // Its interpreter, through env, from PATH.
        assert!(
            named
                .iter()
                .any(|p| p.file_name().is_some_and(|n| n == "sh")),
            "{named:?}"
        );
        // A path given to the program as data is not the program's.
        let named = named_paths(&h(&format!("sleep 600 {}", script.display())));
        assert!(!named.contains(&script), "{named:?}");
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
