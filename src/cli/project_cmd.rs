//! `orange project add|list|update|remove`

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::json;

use super::{audited, Ctx};
use crate::error::Result;
use crate::orchestration::project::{self, AddOptions, Project, UpdateOptions};
use crate::ui::output::{table, Out};

#[derive(Debug, Subcommand)]
pub enum ProjectCmd {
    /// Register a git repository (default: the current directory)
    Add(AddArgs),
    /// List registered projects
    List,
    /// Change a project's settings (default: the project of the current directory)
    Update(UpdateArgs),
    /// Unregister a project (its workspace pool must be shut down first)
    Remove {
        /// The project's name
        name: String,
    },
}

#[derive(Debug, Args)]
pub struct AddArgs {
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
pub struct UpdateArgs {
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
}

fn describe(p: &Project) -> String {
    format!(
        "{}  {}  (branch {}, pool {}{})",
        p.name,
        p.path.display(),
        p.default_branch,
        p.pool_size,
        p.setup_cmd
            .as_ref()
            .map(|s| format!(", setup {s:?}"))
            .unwrap_or_default()
    )
}

pub fn run(ctx: &Ctx, cmd: ProjectCmd) -> Result<Out> {
    match cmd {
        ProjectCmd::Add(a) if a.host.is_some() => {
            if a.path.is_none() {
                return Err(crate::error::OrangeError::invalid(
                    "project add --host needs the repository's PATH on that host",
                ));
            }
            let host = a.host.clone().unwrap_or_default();
            // Audited there, by the host's orange.
            let path = a
                .path
                .as_deref()
                .unwrap_or(std::path::Path::new(""))
                .display()
                .to_string();
            super::remote::project_add(ctx, &host, a.name.as_deref(), &path)
        }
        ProjectCmd::Add(a) => {
            if let Some(n) = &a.name {
                super::remote::refuse_taken(ctx, n)?;
            }
            let path = a.path.clone().unwrap_or_else(|| ctx.cwd.clone());
            let path = if path.is_relative() {
                ctx.cwd.join(path)
            } else {
                path
            };
            let inputs = json!({"path": path, "name": a.name, "pool_size": a.pool_size, "default_branch": a.default_branch, "setup_cmd": a.setup_cmd});
            let p = audited(ctx, "project.add", inputs, || {
                project::add(
                    &ctx.home,
                    AddOptions {
                        path,
                        name: a.name,
                        pool_size: a.pool_size,
                        default_branch: a.default_branch,
                        setup_cmd: a.setup_cmd,
                        copy: a.copy,
                        symlink: a.symlink,
                        port_base: a.port_base,
                        sandbox: a.sandbox,
                    },
                )
            })?;
            // A name a host's project holds already (the name was derived from the path):
            // undone, so that no project is shadowed.
            if let Err(e) = super::remote::refuse_remote(ctx, &p.name) {
                let _ = project::remove(&ctx.home, &p.name);
                return Err(e);
            }
            let text = format!("added project {}\n", describe(&p));
            Ok(Out::new(p, text))
        }
        ProjectCmd::List => {
            let reg = project::load(&ctx.home)?;
            let projects: Vec<&Project> = reg.projects.values().collect();
            // Remote projects, as their host reported them at `project add`.
            let hosts = crate::orchestration::host::load(&ctx.home)?;
            let mut remote: Vec<serde_json::Value> = Vec::new();
            for h in hosts.hosts.values() {
                for v in h.projects.values() {
                    let mut v = v.clone();
                    super::remote::tag(&mut v, &h.name);
                    remote.push(v);
                }
            }
            let text = if projects.is_empty() && remote.is_empty() {
                "no projects; register one with `orange project add [PATH]`\n".to_string()
            } else {
                let mut rows: Vec<Vec<String>> = projects
                    .iter()
                    .map(|p| {
                        vec![
                            p.name.clone(),
                            p.default_branch.clone(),
                            p.pool_size.to_string(),
                            p.path.display().to_string(),
                        ]
                    })
                    .collect();
                rows.extend(remote.iter().map(|v| {
                    vec![
                        v["name"].as_str().unwrap_or("?").to_string(),
                        v["default_branch"].as_str().unwrap_or("?").to_string(),
                        v["pool_size"].to_string(),
                        format!(
                            "{}:{}",
                            v["host"].as_str().unwrap_or("?"),
                            v["path"].as_str().unwrap_or("?")
                        ),
                    ]
                }));
                table(&["NAME", "BRANCH", "POOL", "PATH"], &rows)
            };
            let mut all = serde_json::to_value(&projects).unwrap_or_default();
            if let Some(a) = all.as_array_mut() {
                a.extend(remote);
            }
            Ok(Out::new(all, text))
        }
        ProjectCmd::Update(a) => {
            let name = match a.name.clone() {
                Some(n) => n,
                None => ctx.project()?.name,
            };
            let inputs = json!({"name": name, "pool_size": a.pool_size, "setup_cmd": a.setup_cmd, "default_branch": a.default_branch});
            let p = audited(ctx, "project.update", inputs, || {
                project::update_project(
                    &ctx.home,
                    &name,
                    UpdateOptions {
                        pool_size: a.pool_size,
                        setup_cmd: a.setup_cmd,
                        default_branch: a.default_branch,
                        copy: (!a.copy.is_empty()).then_some(a.copy),
                        symlink: (!a.symlink.is_empty()).then_some(a.symlink),
                        port_base: a.port_base,
                        sandbox: a.sandbox,
                    },
                )
            })?;
            let text = format!("updated project {}\n", describe(&p));
            Ok(Out::new(p, text))
        }
        ProjectCmd::Remove { name }
            if crate::orchestration::host::of_project(&ctx.home, &name)?.is_some() =>
        {
            let h = crate::orchestration::host::of_project(&ctx.home, &name)?.expect("checked");
            super::remote::project_remove(ctx, &h, &name)
        }
        ProjectCmd::Remove { name } => {
            let p = audited(ctx, "project.remove", json!({"name": name}), || {
                project::remove(&ctx.home, &name)
            })?;
            let text = format!(
                "removed project {} (the repository itself is untouched)\n",
                p.name
            );
            Ok(Out::new(p, text))
        }
    }
}
