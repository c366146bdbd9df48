//! `orange project add|list|update|remove`: one function per verb. A project on a remote
//! host is added and removed through `remote` (its orange does the work).

use std::path::PathBuf;

use serde_json::json;

use super::args::{ProjectAddArgs, ProjectCmd, ProjectUpdateArgs};
use super::context::{audited, Ctx};
use super::remote;
use crate::error::{OrangeError, Result};
use crate::orchestration::host;
use crate::orchestration::project::{self, AddOptions, Project, UpdateOptions};
use crate::ui::output::{table, Out};

fn describe(p: &Project) -> String {
    format!(
        "{}  {}  (branch {}, pool {}{}{})",
        p.name,
        p.path.display(),
        p.default_branch,
        p.pool_size,
        p.max_running
            .map(|n| format!(", at most {n} running"))
            .unwrap_or_default(),
        p.setup_cmd
            .as_ref()
            .map(|s| format!(", setup {s:?}"))
            .unwrap_or_default()
    )
}

pub fn run(ctx: &Ctx, cmd: ProjectCmd) -> Result<Out> {
    match cmd {
        ProjectCmd::Add(a) if a.host.is_some() => add_there(ctx, a),
        ProjectCmd::Add(a) => add(ctx, a),
        ProjectCmd::List => list(ctx),
        ProjectCmd::Update(a) => update(ctx, a),
        ProjectCmd::Remove { name } => remove(ctx, &name),
    }
}

/// `project add --host HOST PATH`: registered there by the host's orange (audited there).
fn add_there(ctx: &Ctx, a: ProjectAddArgs) -> Result<Out> {
    let Some(path) = &a.path else {
        return Err(OrangeError::invalid(
            "project add --host needs the repository's PATH on that host",
        ));
    };
    let host = a.host.clone().unwrap_or_default();
    let path = path.display().to_string();
    remote::project_add(ctx, &host, a.name.as_deref(), &path)
}

/// `project add [PATH]`
fn add(ctx: &Ctx, a: ProjectAddArgs) -> Result<Out> {
    if let Some(n) = &a.name {
        remote::refuse_taken(ctx, n)?;
    }
    let path = a.path.clone().unwrap_or_else(|| ctx.cwd.clone());
    let path: PathBuf = if path.is_relative() {
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
    if let Err(e) = remote::refuse_remote(ctx, &p.name) {
        let _ = project::remove(&ctx.home, &p.name);
        return Err(e);
    }
    let text = format!("added project {}\n", describe(&p));
    Ok(Out::new(p, text))
}

/// `project list`: the projects here, and each host's as it reported them at `project add`.
fn list(ctx: &Ctx) -> Result<Out> {
    let reg = project::load(&ctx.home)?;
    let projects: Vec<&Project> = reg.projects.values().collect();
    let hosts = host::load(&ctx.home)?;
    let mut remote: Vec<serde_json::Value> = Vec::new();
    for h in hosts.hosts.values() {
        for v in h.projects.values() {
            let mut v = v.clone();
            remote::tag(&mut v, &h.name);
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

/// `project update [NAME] …`
fn update(ctx: &Ctx, a: ProjectUpdateArgs) -> Result<Out> {
    let name = match a.name.clone() {
        Some(n) => n,
        None => ctx.project()?.name,
    };
    let inputs = json!({"name": name, "pool_size": a.pool_size, "setup_cmd": a.setup_cmd, "default_branch": a.default_branch, "max_running": a.cap.max_running});
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
                max_running: a.cap.max_running,
                check_cmd: a.check_cmd,
                check_timeout: a.check_timeout,
            },
        )
    })?;
    let text = format!("updated project {}\n", describe(&p));
    Ok(Out::new(p, text))
}

/// `project remove NAME`: a remote project's is removed there, then forgotten here.
fn remove(ctx: &Ctx, name: &str) -> Result<Out> {
    if let Some(h) = host::of_project(&ctx.home, name)? {
        return remote::project_remove(ctx, &h, name);
    }
    let p = audited(ctx, "project.remove", json!({"name": name}), || {
        project::remove(&ctx.home, name)
    })?;
    let text = format!(
        "removed project {} (the repository itself is untouched)\n",
        p.name
    );
    Ok(Out::new(p, text))
}
