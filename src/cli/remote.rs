//! Commands on remote projects: which command goes to which host, and the
//! forwarding itself. The orange on the host does the work through its own command line:
//! the same arguments, over the host's one ssh connection. JSON answers carry `host`.

use std::io::{Read, Write};

use serde_json::{json, Value};

use super::args::{Command, Does, ProjectCmd, Runs, TaskCmd};
use super::context::{confirm, Ctx};
use super::task_text;
use crate::adapters::mux::NewSession;
use crate::adapters::tmux::Tmux;
use crate::error::{OrangeError, Result};
use crate::orchestration::host::{self, Host};
use crate::orchestration::project;
use crate::orchestration::task::TaskStore;
use crate::ui::output::Out;
use crate::ui::plugin::SESSION_REMOTE_TASK;

/// The host a command must run on (as the table says: [`Runs`]), or `None` to run it
/// here. What is here wins: a local project or task of the same name or id is never
/// shadowed by a host's.
pub fn route(ctx: &Ctx, does: &Does) -> Result<Option<Host>> {
    let remote_project = |name: &str| -> Result<Option<Host>> {
        if project::load(&ctx.home)?.projects.contains_key(name) {
            return Ok(None);
        }
        host::of_project(&ctx.home, name)
    };
    let by_project = || -> Result<Option<Host>> {
        match &ctx.project {
            Some(p) => remote_project(p),
            None => Ok(None),
        }
    };
    let id = does.id.as_deref();
    match (does.runs, id) {
        (Runs::Here, _) => Ok(None),
        (Runs::Project, _) | (Runs::Task, None) => by_project(),
        (Runs::Task, Some(id)) => {
            // A local task wins: its exact id, or (when no remote task has this id) a
            // prefix or branch that names one here.
            let store = TaskStore::new(&ctx.home);
            if store.find_exact(id, ctx.project.as_deref()).is_ok() {
                return Ok(None);
            }
            if host::linked(&ctx.home, id).is_none()
                && store.find(id, ctx.project.as_deref()).is_ok()
            {
                return Ok(None);
            }
            // The host it was seen on, while that host is still registered.
            match host::linked(&ctx.home, id).and_then(|l| host::get(&ctx.home, &l.host).ok()) {
                Some(h) => Ok(Some(h)),
                None => by_project(),
            }
        }
        // `<project>--<n>` names its project.
        (Runs::Workspace, Some(name)) if ctx.project.is_none() => match name.rsplit_once("--") {
            Some((p, _)) => remote_project(p),
            None => Ok(None),
        },
        (Runs::Workspace, _) => by_project(),
        (Runs::NamedProject, name) => match name.or(ctx.project.as_deref()) {
            Some(name) => remote_project(name),
            None => Ok(None),
        },
    }
}

/// The command line as typed, without `--json` (added back when wanted).
fn args(ctx: &Ctx) -> Vec<String> {
    ctx.args
        .iter()
        .filter(|a| *a != "--json")
        .cloned()
        .collect()
}

/// Run this command on `h`. With `--json` the host's JSON value, tagged with `host`; else
/// its text. Its error keeps its code.
pub fn forward(ctx: &Ctx, h: &Host, cmd: &Command, does: &Does) -> Result<Out> {
    if let Command::Task(TaskCmd::Attach { id }) = cmd {
        return attach(ctx, h, id, None);
    }
    if let Command::Task(TaskCmd::List { status, .. }) = cmd {
        return list_there(ctx, h, cmd, does, status.as_deref());
    }
    let out = run_there(ctx, h, cmd, does);
    // Something may have changed there (even a failed command can record a failed task):
    // the monitor here fetches that host at once rather than at its next interval.
    if does.mutates {
        crate::adapters::store::poke_at(&host::poke_path(&ctx.home));
    }
    out
}

fn run_there(ctx: &Ctx, h: &Host, cmd: &Command, does: &Does) -> Result<Out> {
    let mut args = args(ctx);
    // Questions are asked here, where the person is: the host has no terminal to ask on.
    if let Some(verb) = does.asks {
        let id = does.id.as_deref().unwrap_or_default();
        confirm(&format!("{verb} task {id} on host {}?", h.name), false)?;
        args.push("--yes".into());
    }
    // `--context -` and `task send … -` read this standard input: it is sent along; `task
    // send --file PATH`'s file is read here and sent the same way.
    let sends_file = match cmd {
        Command::Task(TaskCmd::Send {
            file: Some(path), ..
        }) => Some(path.clone()),
        _ => None,
    };
    let stdin = if let Some(path) = sends_file {
        let text = std::fs::read(&path)
            .map_err(|e| OrangeError::io(format!("reading {}", path.display()), e))?;
        args.retain(|a| !a.starts_with("--file="));
        if let Some(i) = args.iter().position(|a| a == "--file") {
            args.drain(i..(i + 2).min(args.len()));
        }
        args.push("-".into());
        Some(text)
    } else if args.windows(2).any(|w| w[0] == "--context" && w[1] == "-")
        || args.iter().any(|a| a == "--context=-")
        || matches!(cmd, Command::Task(TaskCmd::Send { text: Some(t), .. }) if t == "-")
    {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|e| OrangeError::io("reading standard input", e))?;
        Some(buf)
    } else {
        None
    };
    let creates = matches!(cmd, Command::Task(TaskCmd::Create(_)));
    let updates_project = matches!(cmd, Command::Project(ProjectCmd::Update(_)));
    if ctx.json || creates || updates_project {
        let mut v = h.call_json(&ctx.home, &args, stdin.as_deref())?;
        if updates_project {
            // The record here follows (what `project list` shows).
            let name = v["name"].as_str().unwrap_or_default().to_string();
            let fresh = v.clone();
            host::update(&ctx.home, |reg| {
                if let Some(rec) = reg.hosts.get_mut(&h.name) {
                    if rec.projects.contains_key(&name) {
                        rec.projects.insert(name, fresh);
                    }
                }
                Ok(())
            })?;
        } else {
            remember(ctx, h, &v);
        }
        tag(&mut v, &h.name);
        let text = match (creates, updates_project, ctx.json) {
            (_, _, true) => String::new(),
            (true, _, _) => format!(
                "created task {} ({}/{}) on host {} [{}]\n",
                v["id"].as_str().unwrap_or("?"),
                v["project"].as_str().unwrap_or("?"),
                v["branch"].as_str().unwrap_or("?"),
                h.name,
                v["status"].as_str().unwrap_or("?"),
            ),
            _ => format!(
                "updated project {} on host {}\n",
                v["name"].as_str().unwrap_or("?"),
                h.name
            ),
        };
        return Ok(Out::new(v, text));
    }
    let out = h.call(&ctx.home, &args, stdin.as_deref())?;
    if out.status == 0 {
        let _ = std::io::stderr().write_all(crate::text::safe(&out.stderr).as_bytes());
        return Ok(Out::new(
            Value::Null,
            String::from_utf8_lossy(&out.stdout).into_owned(),
        ));
    }
    Err(text_error(h, &out.stderr))
}

/// The host's `orange: MESSAGE [code]` as an error with that code.
fn text_error(h: &Host, stderr: &str) -> OrangeError {
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("orange: "))
        .unwrap_or_else(|| stderr.lines().last().unwrap_or("failed"));
    let body = line.trim_start_matches("orange: ");
    let (message, code) = match body.rsplit_once(" [") {
        Some((m, c)) if c.ends_with(']') => (m, c.trim_end_matches(']')),
        _ => (body, "backend_command_failed"),
    };
    OrangeError::Remote {
        host: h.name.clone(),
        code: OrangeError::canonical(code),
        message: message.to_string(),
    }
}

/// `host` on an object, or on each object of an array.
pub fn tag(v: &mut Value, host: &str) {
    match v {
        Value::Object(m) => {
            m.insert("host".into(), json!(host));
        }
        Value::Array(a) => a.iter_mut().for_each(|e| tag(e, host)),
        _ => {}
    }
}

/// Remember the host of the tasks an answer names (a created task, a listing).
fn remember(ctx: &Ctx, h: &Host, v: &Value) {
    let one = |t: &Value| {
        if let (Some(id), Some(p)) = (t["id"].as_str(), t["project"].as_str()) {
            if t.get("branch").is_some() {
                host::link(&ctx.home, id, &h.name, p);
            }
        }
    };
    // (host::link refuses an id that is a task here.)
    match v {
        Value::Array(a) => a.iter().for_each(one),
        _ => one(v),
    }
}

/// `task attach ID` of a remote task: `ssh -t HOST orange task attach ID` (which runs
/// `tmux attach-session -t =SESSION` there), in a local session the client (`client`, or
/// the current one) switches to (inside tmux, or for the plugin's `w` key), or in place of
/// this process (outside tmux).
pub fn attach(ctx: &Ctx, h: &Host, id: &str, client: Option<&str>) -> Result<Out> {
    let t = h.call_json(&ctx.home, &["task".into(), "show".into(), id.into()], None)?;
    let session = t["tmux_session"].as_str().unwrap_or_default().to_string();
    let state = t["session"]["state"].as_str().unwrap_or("");
    // A session to attach: its agent running, or exited with its pane kept.
    if session.is_empty() || !matches!(state, "live" | "dead") {
        return Err(OrangeError::invalid(format!(
            "task {id} on host {} has no session ({}); `orange task respawn {id}` starts a new one",
            h.name,
            if state.is_empty() { "none" } else { state }
        )));
    }
    // The orange there attaches (outside tmux there: `tmux attach-session -t =SESSION` on
    // the server it uses, whatever its environment says).
    let remote = vec![
        h.orange_bin.clone(),
        "task".to_string(),
        "attach".to_string(),
        id.to_string(),
    ];
    let ssh = h.ssh(&ctx.home);
    let argv = ssh.interactive_argv(&h.env(), &remote);
    // Outside tmux (and not for a client the plugin named): ssh in place of this process.
    if client.is_none() && std::env::var_os("TMUX").is_none_or(|v| v.is_empty()) {
        let e = ssh.exec(&argv);
        return Err(OrangeError::io(format!("running ssh to {}", h.name), e));
    }
    let tmux = Tmux::from_env();
    let local = format!("remote-{}-{id}", h.name);
    if !tmux.has_session(&local)? {
        tmux.new_session(&NewSession {
            name: local.clone(),
            cwd: ctx.cwd.clone(),
            env: vec![],
            command: argv,
            width: None,
            height: None,
            // `@orange_task` too: the plugin's keys act here (Ctrl+\\ opens this task's
            // sidebar instead of reaching the agent there as a SIGQUIT). No `@orange_home`:
            // this orange's crash repair never takes the session for one of its agents.
            marks: vec![
                ("@orange_task".into(), id.to_string()),
                // What the picker (choose-tree) shows for it: which host, which branch.
                (
                    "@orange_status".into(),
                    format!("{}: {}", h.name, t["branch"].as_str().unwrap_or(id)),
                ),
                ("@orange_remote".into(), h.name.clone()),
                (SESSION_REMOTE_TASK.into(), id.to_string()),
            ],
        })?;
    }
    tmux.switch_client_of(client, &local)?;
    Ok(Out::new(
        json!({"id": id, "host": h.name, "session": session, "local_session": local, "via": "switch-client"}),
        "",
    ))
}

/// `project add --host NAME PATH …`: register the project on the host (its orange does
/// it), then remember it here.
pub fn project_add(ctx: &Ctx, host_name: &str, name: Option<&str>, path: &str) -> Result<Out> {
    let h = host::get(&ctx.home, host_name)?;
    if let Some(n) = name {
        refuse_taken(ctx, n)?;
    }
    // The same arguments without `--host NAME` (the host has no hosts of its own).
    let mut args = Vec::new();
    let mut it = self::args(ctx).into_iter();
    while let Some(a) = it.next() {
        if a == "--host" {
            it.next();
        } else if !a.starts_with("--host=") {
            args.push(a);
        }
    }
    // Already registered there (by someone on that host, or before): adopted as it is.
    let there = h.call_json(&ctx.home, &["project".into(), "list".into()], None)?;
    let existing = there.as_array().and_then(|a| {
        a.iter()
            .find(|p| {
                p["path"].as_str() == Some(path.trim_end_matches('/'))
                    && name.is_none_or(|n| p["name"].as_str() == Some(n))
            })
            .cloned()
    });
    let adopted = existing.is_some();
    let v = match existing {
        Some(v) => v,
        None => h.call_json(&ctx.home, &args, None)?,
    };
    let pname = v["name"].as_str().unwrap_or_default().to_string();
    if let Err(e) = refuse_taken(ctx, &pname) {
        // Undo it there: nothing registered half-way (an adopted one stays as it was).
        if !adopted {
            let _ = h.call_json(&ctx.home, &["project".into(), "remove".into(), pname], None);
        }
        return Err(e);
    }
    host::update(&ctx.home, |reg| {
        let rec = reg.hosts.get_mut(&h.name).ok_or_else(|| {
            OrangeError::invalid(format!("host {} was removed meanwhile", h.name))
        })?;
        rec.projects.insert(pname.clone(), v.clone());
        Ok(())
    })?;
    let mut out = v;
    tag(&mut out, &h.name);
    let text = format!(
        "{} project {pname} on host {} ({})\n",
        if adopted { "adopted" } else { "added" },
        h.name,
        out["path"].as_str().unwrap_or("?")
    );
    Ok(Out::new(out, text))
}

/// A project name must be one project's: here or on one host.
pub fn refuse_taken(ctx: &Ctx, name: &str) -> Result<()> {
    if project::load(&ctx.home)?.projects.contains_key(name) {
        return Err(OrangeError::invalid(format!(
            "a project named {name:?} is already registered here; pass --name"
        )));
    }
    refuse_remote(ctx, name)
}

/// No host holds a project named `name`.
pub fn refuse_remote(ctx: &Ctx, name: &str) -> Result<()> {
    if let Some(h) = host::of_project(&ctx.home, name)? {
        return Err(OrangeError::invalid(format!(
            "a project named {name:?} is already registered on host {}; pass --name",
            h.name
        )));
    }
    Ok(())
}

/// `project remove NAME` of a remote project: removed there, then forgotten here.
pub fn project_remove(ctx: &Ctx, h: &Host, name: &str) -> Result<Out> {
    let mut v = match h.call_json(
        &ctx.home,
        &["project".into(), "remove".into(), name.into()],
        None,
    ) {
        Ok(v) => v,
        // Already gone there: forgotten here too.
        Err(OrangeError::Remote {
            code: "project_not_found",
            ..
        }) => {
            json!({"name": name, "removed_there": false})
        }
        Err(e) => return Err(e),
    };
    host::update(&ctx.home, |reg| {
        if let Some(rec) = reg.hosts.get_mut(&h.name) {
            rec.projects.remove(name);
        }
        Ok(())
    })?;
    tag(&mut v, &h.name);
    let text = format!("removed project {name} on host {}\n", h.name);
    Ok(Out::new(v, text))
}

/// Every host's `task list --all`, at once (one request per host), marked with their host.
/// A host that cannot be listed keeps its last known tasks, each with its `host_state`
/// (see [`host::last_known_tasks`]), and a note on stderr says so.
pub fn task_lists(ctx: &Ctx, status: Option<&str>) -> Vec<Value> {
    let reg = match host::load(&ctx.home) {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "orange: {} [{}]; no host's tasks are listed",
                crate::text::safe_line(&e.to_string()),
                e.code()
            );
            return vec![];
        }
    };
    let hosts: Vec<Host> = reg
        .hosts
        .into_values()
        .filter(|h| !h.projects.is_empty())
        .collect();
    let mut args: Vec<String> = vec!["task".into(), "list".into(), "--all".into()];
    if let Some(s) = status {
        args.extend(["--status".into(), s.to_string()]);
    }
    let got: Vec<(&Host, Result<Vec<Value>>)> = std::thread::scope(|s| {
        let handles: Vec<_> = hosts
            .iter()
            .map(|h| {
                let args = &args;
                s.spawn(move || {
                    let got = h.call_json(&ctx.home, args, None).map(|mut v| {
                        remember(ctx, h, &v);
                        tag(&mut v, &h.name);
                        match v {
                            Value::Array(a) => a,
                            _ => vec![],
                        }
                    });
                    (h, got)
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let mut rows = Vec::new();
    for (h, got) in got {
        match got {
            Ok(tasks) => {
                if status.is_none() {
                    host::remember_tasks(&ctx.home, &h.name, None, &tasks);
                }
                rows.extend(tasks);
            }
            Err(e) => rows.extend(last_known(ctx, h, None, status, &e)),
        }
    }
    rows
}

/// The last known tasks of `h` (one project's, or all), filtered by `status`, for a
/// listing that could not ask it (`e`, said on stderr).
fn last_known(
    ctx: &Ctx,
    h: &Host,
    project: Option<&str>,
    status: Option<&str>,
    e: &OrangeError,
) -> Vec<Value> {
    let seen = match e {
        OrangeError::HostUnreachable { .. } => host::note_unreachable(&ctx.home, &h.name, e),
        _ => {
            let mut seen = host::read_seen(&ctx.home, &h.name).unwrap_or_default();
            seen.error = Some(e.to_string());
            seen
        }
    };
    let rows: Vec<Value> = host::last_known_tasks(&ctx.home, &h.name, &seen)
        .into_iter()
        .filter(|t| project.is_none_or(|p| t["project"].as_str() == Some(p)))
        .filter(|t| status.is_none_or(|s| t["status"].as_str() == Some(s)))
        .collect();
    // The error may quote the host (ssh's or its orange's words): one safe line.
    eprintln!(
        "orange: {} [{}]; host {}'s {} task(s) are listed as last seen",
        crate::text::safe_line(&e.to_string()),
        e.code(),
        h.name,
        rows.len()
    );
    rows
}

/// `task list` of a remote project: the host's own listing (remembered, with `--json`), or,
/// when it cannot be asked, the project's last known tasks there (exit status 0).
fn list_there(
    ctx: &Ctx,
    h: &Host,
    cmd: &Command,
    does: &Does,
    status: Option<&str>,
) -> Result<Out> {
    let project = ctx.project.clone();
    match run_there(ctx, h, cmd, does) {
        Ok(out) => {
            if let (Some(p), None, Value::Array(rows)) = (&project, status, &out.json) {
                host::remember_tasks(&ctx.home, &h.name, Some(p), rows);
            }
            Ok(out)
        }
        Err(e) => {
            // Only what cannot be asked is answered from memory: the host's own refusal
            // (an unknown status, a project gone there) stays an error.
            if !matches!(e, OrangeError::HostUnreachable { .. }) {
                return Err(e);
            }
            let rows = last_known(ctx, h, project.as_deref(), status, &e);
            let table_rows: Vec<Vec<String>> = rows
                .iter()
                .map(|v| task_text::remote_row(v, false))
                .collect();
            let text = task_text::list(&table_rows, false);
            Ok(Out::new(Value::Array(rows), text))
        }
    }
}
