//! Group records under `tasks/<project>/.groups/<gid>.json` (written atomically, under the
//! project's task lock by the commands that change them), and finding a group by what a
//! person types: its id, a unique prefix of it, or its base branch.

use std::path::PathBuf;

use crate::adapters::store::{self, Home};
use crate::error::{OrangeError, Result};
use crate::orchestration::group::model::Group;
use crate::orchestration::task::model::{valid_id, MIN_PREFIX};

pub struct GroupStore {
    root: PathBuf,
    home: Home,
}

impl GroupStore {
    pub fn new(home: &Home) -> GroupStore {
        GroupStore {
            root: home.tasks_dir(),
            home: home.clone(),
        }
    }

    pub fn dir(&self, project: &str) -> PathBuf {
        self.root.join(project).join(".groups")
    }

    pub fn path(&self, project: &str, id: &str) -> PathBuf {
        self.dir(project).join(format!("{id}.json"))
    }

    /// The lock every `group judge` of the group holds (shared) while it runs: the
    /// monitor tells a judging that died from one at work by it.
    pub fn judging_lock(&self, project: &str, id: &str) -> PathBuf {
        self.dir(project).join(format!(".{id}.judging.lock"))
    }

    /// Held (shared) by every `group judge` of `g` from its start until it has told what
    /// it found: [`GroupStore::judging_runs`] asks.
    pub fn hold_judging(&self, g: &Group) -> Result<std::fs::File> {
        store::lock_shared(&self.judging_lock(&g.project, &g.id))
    }

    /// Does a `group judge` of the group run now?
    pub fn judging_runs(&self, g: &Group) -> bool {
        store::is_locked(&self.judging_lock(&g.project, &g.id))
    }

    /// The group's own scratch directory (its judge's workspace lives there).
    pub fn scratch(&self, project: &str, id: &str) -> PathBuf {
        self.dir(project).join(id)
    }

    pub fn exists(&self, project: &str, id: &str) -> bool {
        self.path(project, id).exists()
    }

    /// The record of group `id`; one whose file is gone (removed behind orange's back,
    /// maybe while a command worked on it) is an error, never a blank group.
    pub fn load(&self, project: &str, id: &str) -> Result<Group> {
        if !valid_id(id) {
            return Err(OrangeError::invalid(format!("no group {id:?}")));
        }
        let path = self.path(project, id);
        store::read_json::<Option<Group>>(&path)?.ok_or_else(|| {
            OrangeError::invalid(format!(
                "group {id} of project {project} is gone: its record {} was removed (its members are ordinary tasks now)",
                path.display()
            ))
        })
    }

    pub fn save(&self, g: &Group) -> Result<()> {
        store::ensure_dir(&self.dir(&g.project))?;
        store::write_json_atomic(&self.path(&g.project, &g.id), g)?;
        // The views that show groups (task list, sidebar) look again.
        store::poke_other(&self.home);
        Ok(())
    }

    /// Every group of `project` (or of every project), oldest first. One that does not
    /// parse is an error naming its file.
    pub fn list(&self, project: Option<&str>) -> Result<Vec<Group>> {
        let (all, mut bad) = self.list_readable(project);
        match bad.is_empty() {
            true => Ok(all),
            false => Err(bad.remove(0).1),
        }
    }

    /// [`GroupStore::list`], every record that parses, and apart the ids and errors of
    /// those that do not: one corrupt record must not hide the others (the monitor's
    /// automatic judging, `task list`'s nesting, finding another group).
    pub fn list_readable(&self, project: Option<&str>) -> (Vec<Group>, Vec<(String, OrangeError)>) {
        let projects: Vec<String> = match project {
            Some(p) => vec![p.to_string()],
            None => std::fs::read_dir(&self.root)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect(),
        };
        let (mut out, mut bad) = (vec![], vec![]);
        for p in projects {
            for e in std::fs::read_dir(self.dir(&p))
                .into_iter()
                .flatten()
                .flatten()
            {
                let name = e.file_name().to_string_lossy().into_owned();
                let Some(id) = name.strip_suffix(".json") else {
                    continue;
                };
                if valid_id(id) {
                    match self.load(&p, id) {
                        Ok(g) => out.push(g),
                        Err(e) => bad.push((id.to_string(), e)),
                    }
                }
            }
        }
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        (out, bad)
    }

    /// The group a person named: its id, a unique prefix (3 characters or more), or its
    /// base branch (an open group wins over finished ones of the same branch).
    pub fn find(&self, typed: &str, project: Option<&str>) -> Result<Group> {
        let typed = typed.trim_end_matches('/');
        let (all, bad) = self.list_readable(project);
        if let Some(g) = all.iter().find(|g| g.id == typed) {
            return Ok(g.clone());
        }
        let by_base: Vec<&Group> = all.iter().filter(|g| g.base == typed).collect();
        let open: Vec<&&Group> = by_base
            .iter()
            .filter(|g| !g.cancelled && g.picked.is_none())
            .collect();
        let pick: Vec<&Group> = match (by_base.len(), open.len()) {
            (1, _) => by_base,
            (n, 1) if n > 1 => vec![*open[0]],
            (0, _) if typed.len() >= MIN_PREFIX => {
                all.iter().filter(|g| g.id.starts_with(typed)).collect()
            }
            (0, _) => vec![],
            _ => by_base,
        };
        match pick.as_slice() {
            [g] => Ok((*g).clone()),
            // The one meant, by its id, cannot be read: its error says so.
            [] => match bad.into_iter().find(|(id, _)| id.starts_with(typed)) {
                Some((_, e)) => Err(e),
                None => Err(OrangeError::invalid(format!(
                    "no group {typed:?} (a group id, a unique prefix of one, or its base branch; `orange group list`)"
                ))),
            },
            many => Err(OrangeError::invalid(format!(
                "{typed:?} names several groups: {}; give its id",
                many.iter()
                    .map(|g| format!("{} ({}/{})", g.id, g.project, g.base))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }
}
