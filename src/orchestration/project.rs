//! Registered projects (`projects.json`) and finding the project of a directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::adapters::store::{self, Home, LockGuard};
use crate::error::{OrangeError, Result};
use crate::{adapters::git, execution::pool};

pub const DEFAULT_POOL_SIZE: usize = 2;

pub use crate::execution::repo::Project;

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Registry {
    /// Required (a missing file is the empty registry; `{}` is corrupt).
    pub projects: BTreeMap<String, Project>,
}

/// Project names become directory and tmux session names: keep them to a safe set.
pub fn validate_name(name: &str) -> Result<()> {
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    let first_ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    if name.is_empty() || !ok_chars || !first_ok || name.contains("..") || name.len() > 64 {
        return Err(OrangeError::invalid(format!(
            "invalid project name {name:?}: use letters, digits, '.', '_' and '-', starting with a letter, digit or '_', at most 64 characters, no '..'"
        )));
    }
    Ok(())
}

/// A valid name derived from a directory name ("my repo" → "my-repo").
pub fn name_from_dir(dir: &Path) -> String {
    let raw = dir
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    while name.contains("..") {
        name = name.replace("..", ".");
    }
    let name = name
        .trim_start_matches(['-', '.'])
        .chars()
        .take(64)
        .collect::<String>();
    if name.is_empty() {
        "project".to_string()
    } else {
        name
    }
}

pub fn validate_pool_size(n: i64) -> Result<usize> {
    if n < 1 {
        return Err(OrangeError::invalid(format!(
            "pool size must be at least 1 (got {n})"
        )));
    }
    if n > 256 {
        return Err(OrangeError::invalid(format!(
            "pool size {n} is larger than the limit of 256"
        )));
    }
    Ok(n as usize)
}

pub fn load(home: &Home) -> Result<Registry> {
    store::read_json(&home.projects_file())
}

/// Read-modify-write of the registry under its lock.
pub fn update<T>(home: &Home, f: impl FnOnce(&mut Registry) -> Result<T>) -> Result<T> {
    let _lock = LockGuard::acquire(&home.projects_lock())?;
    let mut reg = load(home)?;
    let out = f(&mut reg)?;
    store::write_json_atomic(&home.projects_file(), &reg)?;
    Ok(out)
}

pub struct AddOptions {
    pub path: PathBuf,
    pub name: Option<String>,
    pub pool_size: Option<i64>,
    pub default_branch: Option<String>,
    pub setup_cmd: Option<String>,
    pub copy: Vec<String>,
    pub symlink: Vec<String>,
    pub port_base: Option<u16>,
    pub sandbox: Option<String>,
}

/// A sandbox named on the command line, checked (and spelled as stored).
fn sandbox_name(s: Option<String>) -> Result<Option<String>> {
    use crate::execution::sandbox::Kind;
    let Some(s) = s else { return Ok(None) };
    let kind = Kind::parse(&s)?;
    kind.preflight()?;
    Ok(Some(kind.as_str().to_string()))
}

pub fn add(home: &Home, opts: AddOptions) -> Result<Project> {
    if !opts.path.exists() {
        return Err(OrangeError::invalid(format!(
            "{} does not exist",
            opts.path.display()
        )));
    }
    let sandbox = sandbox_name(opts.sandbox)?;
    let top = git::main_toplevel(&opts.path)?;
    let name = match opts.name {
        Some(n) => n,
        None => name_from_dir(&top),
    };
    validate_name(&name)?;
    let pool_size = validate_pool_size(opts.pool_size.unwrap_or(DEFAULT_POOL_SIZE as i64))?;
    let default_branch = match opts.default_branch {
        Some(b) => {
            if !git::valid_branch_name(&b) {
                return Err(OrangeError::invalid(format!("invalid branch name {b:?}")));
            }
            b
        }
        None => git::default_branch(&top)?,
    };
    for p in opts.copy.iter().chain(&opts.symlink) {
        crate::execution::provision::validate_pattern(p)?;
    }
    git::ensure_excluded(&top, pool::EXCLUDED_FILES)?;
    update(home, |reg| {
        if reg.projects.contains_key(&name) {
            return Err(OrangeError::invalid(format!(
                "a project named {name:?} is already registered"
            )));
        }
        if let Some(p) = reg.projects.values().find(|p| p.path == top) {
            return Err(OrangeError::invalid(format!(
                "{} is already registered as project {:?}",
                top.display(),
                p.name
            )));
        }
        let project = Project {
            name: name.clone(),
            path: top.clone(),
            default_branch,
            pool_size,
            setup_cmd: opts.setup_cmd.filter(|s| !s.trim().is_empty()),
            copy: opts.copy,
            symlink: opts.symlink,
            port_base: opts.port_base,
            sandbox,
            max_running: None,
            created_at: store::now_rfc3339(),
            check_cmd: None,
            check_timeout: None,
        };
        reg.projects.insert(name.clone(), project.clone());
        Ok(project)
    })
}

pub struct UpdateOptions {
    pub pool_size: Option<i64>,
    pub setup_cmd: Option<String>,
    pub default_branch: Option<String>,
    pub copy: Option<Vec<String>>,
    pub symlink: Option<Vec<String>>,
    pub port_base: Option<u16>,
    pub sandbox: Option<String>,
    /// `--max-running N` (0: no cap).
    pub max_running: Option<usize>,
    /// `--check-cmd` ("" removes it) and `--check-timeout`.
    pub check_cmd: Option<String>,
    pub check_timeout: Option<String>,
}

pub fn update_project(home: &Home, name: &str, opts: UpdateOptions) -> Result<Project> {
    if let Some(t) = &opts.check_timeout {
        humantime::parse_duration(t)
            .map_err(|e| OrangeError::invalid(format!("--check-timeout {t:?}: {e}")))?;
    }
    let sandbox = sandbox_name(opts.sandbox)?;
    let pool_size = opts.pool_size.map(validate_pool_size).transpose()?;
    for p in opts
        .copy
        .iter()
        .flatten()
        .chain(opts.symlink.iter().flatten())
    {
        crate::execution::provision::validate_pattern(p)?;
    }
    if let Some(b) = &opts.default_branch {
        if !git::valid_branch_name(b) {
            return Err(OrangeError::invalid(format!("invalid branch name {b:?}")));
        }
    }
    update(home, |reg| {
        let p = reg
            .projects
            .get_mut(name)
            .ok_or_else(|| OrangeError::ProjectNotFound(name.to_string()))?;
        if let Some(n) = pool_size {
            p.pool_size = n;
        }
        if let Some(s) = opts.setup_cmd {
            p.setup_cmd = if s.trim().is_empty() { None } else { Some(s) };
        }
        if let Some(b) = opts.default_branch {
            p.default_branch = b;
        }
        if let Some(c) = opts.copy {
            p.copy = c;
        }
        if let Some(s) = opts.symlink {
            p.symlink = s;
        }
        if let Some(port) = opts.port_base {
            p.port_base = Some(port);
        }
        if let Some(s) = sandbox {
            p.sandbox = Some(s);
        }
        if let Some(n) = opts.max_running {
            p.max_running = (n > 0).then_some(n);
        }
        if let Some(c) = opts.check_cmd {
            p.check_cmd = Some(c).filter(|c| !c.trim().is_empty());
        }
        if let Some(t) = opts.check_timeout {
            p.check_timeout = Some(t);
        }
        Ok(p.clone())
    })
}

/// Unregister a project. Refused while it still has pooled worktrees: nothing is lost.
pub fn remove(home: &Home, name: &str) -> Result<Project> {
    let pool = pool::load(home)?;
    let remaining: Vec<&String> = pool
        .workspaces
        .iter()
        .filter(|(_, w)| w.project == name)
        .map(|(n, _)| n)
        .collect();
    if !remaining.is_empty() {
        return Err(OrangeError::invalid(format!(
            "project {name:?} still has {} workspace(s) ({}); run `orange workspace shutdown --project {name}` first",
            remaining.len(),
            remaining.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        )));
    }
    update(home, |reg| {
        reg.projects
            .remove(name)
            .ok_or_else(|| OrangeError::ProjectNotFound(name.to_string()))
    })
}

pub fn get(home: &Home, name: &str) -> Result<Project> {
    let p = load(home)?
        .projects
        .remove(name)
        .ok_or_else(|| OrangeError::ProjectNotFound(name.to_string()))?;
    with_config(home, p)
}

/// Fill what the registry leaves empty from `[project.<name>]` in config.toml.
fn with_config(home: &Home, mut p: Project) -> Result<Project> {
    let config = crate::execution::config::Config::load(home)?;
    if let Some(c) = config.project.get(&p.name) {
        if p.copy.is_empty() {
            p.copy = c.copy.clone();
        }
        if p.symlink.is_empty() {
            p.symlink = c.symlink.clone();
        }
        if p.setup_cmd.is_none() {
            p.setup_cmd = c.setup_cmd.clone().filter(|s| !s.trim().is_empty());
        }
        if p.port_base.is_none() {
            p.port_base = c.port_base;
        }
        if p.sandbox.is_none() {
            p.sandbox = c.sandbox.clone();
        }
        if p.check_cmd.is_none() {
            p.check_cmd = c.check_cmd.clone().filter(|s| !s.trim().is_empty());
        }
        if p.check_timeout.is_none() {
            p.check_timeout = c.check_timeout.clone();
        }
    }
    Ok(p)
}

// The port rule is part of an agent's environment (`execution::launch`); its old path:
pub use crate::execution::launch::{port_for, DEFAULT_PORT_BASE};

/// The project named by `--project`, else the one whose repository or pooled workspace
/// contains `cwd` (the deepest match wins).
pub fn resolve(home: &Home, explicit: Option<&str>, cwd: &Path) -> Result<Project> {
    if let Some(name) = explicit {
        return get(home, name);
    }
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let reg = load(home)?;
    let mut best: Option<(usize, String)> = None;
    let mut consider = |root: &Path, project: &str| {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        if cwd.starts_with(&root) {
            let depth = root.components().count();
            if best.as_ref().is_none_or(|(d, _)| depth > *d) {
                best = Some((depth, project.to_string()));
            }
        }
    };
    for p in reg.projects.values() {
        consider(&p.path, &p.name);
    }
    if let Some(w) = pool::containing(home, &cwd)? {
        consider(&w.path, &w.project);
    }
    match best {
        Some((_, name)) => with_config(
            home,
            reg.projects
                .get(&name)
                .cloned()
                .ok_or(OrangeError::ProjectNotFound(name))?,
        ),
        None => Err(OrangeError::ProjectNotFound(format!(
            "no registered project contains {}; pass --project NAME or run `orange project add`",
            cwd.display()
        ))),
    }
}
