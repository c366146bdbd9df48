//! The pool file's records (`workspaces/.pool.json`: [`PoolFile`], [`Slot`]), read and
//! written whole, the [`Workspace`] commands show for a slot, and beside them what each
//! slot's setup command left (`workspaces/.setup/<name>.json`, [`SetupOutput`]: a file of
//! its own, so that a large setup output never weighs on every read of the pool).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::adapters::git::setup::SetupOutput;
use crate::adapters::store::{self, Home};
use crate::error::Result;

/// Files orange puts in a workspace that git must ignore and release must remove.
pub const EXCLUDED_FILES: &[&str] = &["TASK.md", ".orange-outcome", ".claude/settings.local.json"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SlotStatus {
    Available,
    Bound,
    /// Journalled before `git worktree add`; seen by anyone else only after a crash.
    Creating,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Slot {
    pub status: SlotStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(default)]
    pub project: String,
    #[serde(default)]
    pub index: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_at: Option<String>,
    /// Untracked paths the setup command left: not task work, kept across releases.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keep: Vec<String>,
}

impl Slot {
    pub fn path_in(&self, home: &Home, name: &str) -> PathBuf {
        self.path
            .clone()
            .unwrap_or_else(|| home.workspaces_dir().join(name))
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct PoolFile {
    /// Required: a file without it is not a pool file (`{}` must not read as an empty
    /// pool and forget bound workspaces). A missing file is the empty pool.
    pub workspaces: BTreeMap<String, Slot>,
}

/// Split `<project>--<n>` into its parts.
pub fn parse_name(name: &str) -> Option<(&str, u32)> {
    let (p, n) = name.rsplit_once("--")?;
    if p.is_empty() || n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((p, n.parse().ok()?))
}

/// Load the pool, filling fields that a seed-format file leaves out.
pub fn load(home: &Home) -> Result<PoolFile> {
    let mut pool: PoolFile = store::read_json(&home.pool_file())?;
    for (name, slot) in pool.workspaces.iter_mut() {
        if let Some((p, n)) = parse_name(name) {
            if slot.project.is_empty() {
                slot.project = p.to_string();
            }
            if slot.index == 0 {
                slot.index = n;
            }
        }
    }
    Ok(pool)
}

pub(super) fn save(home: &Home, pool: &PoolFile) -> Result<()> {
    store::write_json_atomic(&home.pool_file(), pool)
}

fn setup_file(home: &Home, name: &str) -> PathBuf {
    home.workspaces_dir()
        .join(".setup")
        .join(format!("{name}.json"))
}

/// What the setup command left in slot `name`, read without the lock: none when nothing
/// was recorded (the project has no setup command, or the slot was made by an orange
/// that did not record it, or adopted: then nothing is left out of its change lists).
pub fn setup_output(home: &Home, name: &str) -> Result<Option<SetupOutput>> {
    let path = setup_file(home, name);
    if !path.exists() {
        return Ok(None);
    }
    store::read_json(&path).map(Some)
}

/// Record (or with `None`, forget) what the setup command left in slot `name`.
pub(super) fn save_setup(home: &Home, name: &str, setup: Option<&SetupOutput>) -> Result<()> {
    let path = setup_file(home, name);
    match setup {
        Some(s) => {
            store::ensure_dir(path.parent().unwrap())?;
            store::write_json_atomic(&path, s)
        }
        None => match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(
                crate::error::OrangeError::io(format!("removing {}", path.display()), e),
            ),
            _ => Ok(()),
        },
    }
}

/// What the rest of orange (the task store) tells the pool about tasks.
pub trait TaskLookup {
    /// Is the task this label names still alive (exists, not done or cancelled)?
    fn is_live(&self, project: &str, label: &str) -> bool;
    /// A live task that records `workspace` as its own (a cross-check on a stale pool file).
    fn holder_of(&self, project: &str, workspace: &str) -> Option<String>;
}

/// A workspace as commands show it: seed field names plus where and when.
#[derive(Debug, Clone, Serialize)]
pub struct Workspace {
    pub name: String,
    pub project: String,
    pub path: PathBuf,
    /// available, bound, creating, or missing (the directory is gone).
    pub status: String,
    pub task: Option<String>,
    pub index: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound_at: Option<String>,
}

pub(super) fn view(home: &Home, name: &str, slot: &Slot) -> Workspace {
    let path = slot.path_in(home, name);
    let status = if slot.status != SlotStatus::Creating && !path.join(".git").exists() {
        "missing".to_string()
    } else {
        match slot.status {
            SlotStatus::Available => "available",
            SlotStatus::Bound => "bound",
            SlotStatus::Creating => "creating",
        }
        .to_string()
    };
    Workspace {
        name: name.to_string(),
        project: slot.project.clone(),
        path,
        status,
        task: slot.task.clone(),
        index: slot.index,
        bound_at: slot.bound_at.clone(),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReleaseOutcome {
    Reset,
    AlreadyAvailable,
    /// The directory was gone; a fresh worktree took its place.
    Recreated,
    /// Reset or clean failed (the message); the slot was removed and re-added.
    Recycled(String),
    /// The task had changed or deleted what the setup command made (these paths): the
    /// slot was removed and re-added, and its setup ran again.
    SetUpAgain(Vec<String>),
}

impl ReleaseOutcome {
    pub fn describe(&self) -> String {
        match self {
            ReleaseOutcome::Reset => "reset".into(),
            ReleaseOutcome::AlreadyAvailable => "already_available".into(),
            ReleaseOutcome::Recreated => "recreated".into(),
            ReleaseOutcome::Recycled(_) => "recycled".into(),
            ReleaseOutcome::SetUpAgain(_) => "set_up_again".into(),
        }
    }
}
