//! `orange host add|list|check|remove`: remote machines reached over ssh, and
//! the two calls a local orange makes to the orange on a host (`host snapshot`, `host
//! info`, hidden).

use serde_json::{json, Value};

use super::args::{HostAddArgs, HostCmd};
use super::context::{audited, Ctx};
use crate::adapters::broker;
use crate::adapters::shell;
use crate::adapters::store;
use crate::adapters::tmux::Tmux;
use crate::error::{OrangeError, Result};
use crate::orchestration::host::{self, Host, RemoteSnapshot};
use crate::orchestration::monitor::Monitor;
use crate::orchestration::observe::snapshot;
use crate::orchestration::project;
use crate::ui::output::{table, Out};

pub fn run(ctx: &Ctx, cmd: HostCmd) -> Result<Out> {
    match cmd {
        HostCmd::Add(a) => add(ctx, a),
        HostCmd::List => list(ctx),
        HostCmd::Check { name } => check(ctx, &name),
        HostCmd::Remove { name, force } => remove(ctx, &name, force),
        HostCmd::Snapshot => snapshot(ctx),
        HostCmd::Info => info(),
    }
}

fn add(ctx: &Ctx, a: HostAddArgs) -> Result<Out> {
    // It names files and a tmux session (`remote-<host>-<id>`): no '.'.
    if project::validate_name(&a.name).is_err() || a.name.contains('.') {
        return Err(OrangeError::invalid(format!(
            "invalid host name {:?}: use letters, digits, '_' and '-', starting with a letter, digit or '_'",
            a.name
        )));
    }
    host::validate_dest(&a.dest)?;
    for o in &a.ssh_options {
        host::validate_ssh_option(o)?;
    }
    if let Some(bin) = &a.orange_bin {
        if bin.is_empty() || bin.starts_with('-') {
            return Err(OrangeError::invalid(format!(
                "invalid --orange-bin {bin:?}"
            )));
        }
    }
    let h = Host {
        name: a.name.clone(),
        dest: a.dest,
        orange_bin: a.orange_bin.unwrap_or_else(|| "orange".into()),
        ssh_options: a.ssh_options,
        remote_home: a.remote_home.filter(|s| !s.is_empty()),
        remote_socket: a.remote_socket.filter(|s| !s.is_empty()),
        projects: Default::default(),
        added_at: store::now_rfc3339(),
    };
    let inputs = json!({"name": h.name, "dest": h.dest});
    let h = audited(ctx, "host.add", inputs, || {
        host::update(&ctx.home, |reg| {
            if reg.hosts.contains_key(&h.name) {
                return Err(OrangeError::invalid(format!(
                    "a host named {:?} is already registered (`orange host remove {}` first)",
                    h.name, h.name
                )));
            }
            reg.hosts.insert(h.name.clone(), h.clone());
            Ok(h)
        })
    })?;
    let text = format!(
        "added host {} ({}); `orange host check {}` tries it\n",
        h.name, h.dest, h.name
    );
    Ok(Out::new(h, text))
}

fn list(ctx: &Ctx) -> Result<Out> {
    let reg = host::load(&ctx.home)?;
    let now = host::now_ms();
    let rows: Vec<Value> = reg
        .hosts
        .values()
        .map(|h| {
            let seen = host::read_seen(&ctx.home, &h.name);
            json!({
                "name": h.name,
                "dest": h.dest,
                "orange_bin": h.orange_bin,
                "ssh_options": h.ssh_options,
                "remote_home": h.remote_home,
                "remote_socket": h.remote_socket,
                "projects": h.projects.keys().collect::<Vec<_>>(),
                "reachable": seen.as_ref().map(|s| s.reachable),
                "seen": seen.as_ref().map(|s| s.view(now)),
            })
        })
        .collect();
    let text = if rows.is_empty() {
        "no hosts; add one with `orange host add NAME user@host`\n".to_string()
    } else {
        let t: Vec<Vec<String>> = reg
            .hosts
            .values()
            .map(|h| {
                let seen = host::read_seen(&ctx.home, &h.name).map(|s| s.view(now));
                vec![
                    h.name.clone(),
                    h.dest.clone(),
                    h.projects.keys().cloned().collect::<Vec<_>>().join(","),
                    match seen {
                        Some(v) if v.reachable => format!("ok, {}s ago", v.age_s.unwrap_or(0)),
                        Some(v) => match v.age_s {
                            Some(age) => format!("unreachable (last seen {age}s ago)"),
                            None => "unreachable".to_string(),
                        },
                        None => "-".to_string(),
                    },
                ]
            })
            .collect();
        table(&["NAME", "DEST", "PROJECTS", "SEEN"], &t)
    };
    Ok(Out::new(rows, text))
}

/// `host check NAME`: one ssh call (`orange host info` there).
fn check(ctx: &Ctx, name: &str) -> Result<Out> {
    let h = host::get(&ctx.home, name)?;
    // Asked again: an orange updated there may serve now.
    let socket = h.serve_socket(&ctx.home);
    let _ = std::fs::remove_file(broker::no_serve_path(&socket));
    let started = std::time::Instant::now();
    let remote = h.call_json(&ctx.home, &["host".into(), "info".into()], None)?;
    let no_serve = broker::no_serve_reason(&socket);
    let rtt_ms = (started.elapsed().as_secs_f64() * 1e4).round() / 10.0;
    let local = env!("CARGO_PKG_VERSION");
    let theirs = remote["version"].as_str().unwrap_or("");
    let compatible = broker::compatible(local, theirs);
    let mut problems = Vec::new();
    if !compatible {
        problems.push(format!(
            "orange {theirs} there and {local} here: install the same version on both"
        ));
    }
    for tool in ["tmux", "git"] {
        if remote[tool].is_null() {
            problems.push(format!("{tool} is not installed on the host"));
        }
    }
    let out = json!({
        "host": h.name,
        "dest": h.dest,
        "reachable": true,
        "round_trip_ms": rtt_ms,
        "local_version": local,
        "remote": remote,
        "compatible": compatible,
        "problems": problems,
        // Commands there go to one long-lived `orange serve` (else one ssh each, and why).
        "serve": no_serve.is_none() && std::env::var_os("ORANGE_SERVE").is_none_or(|v| v != "0"),
        "serve_problem": no_serve,
    });
    if !problems.is_empty() {
        return Err(OrangeError::BackendCommandFailed(format!(
            "host {}: {}",
            h.name,
            problems.join("; ")
        )));
    }
    let text = format!(
        "host {} ({}): reachable in {rtt_ms} ms; orange {theirs}, {}, {}\n",
        h.name,
        h.dest,
        remote["tmux"].as_str().unwrap_or("-"),
        remote["git"].as_str().unwrap_or("-"),
    );
    Ok(Out::new(out, text))
}

fn remove(ctx: &Ctx, name: &str, force: bool) -> Result<Out> {
    let h = audited(
        ctx,
        "host.remove",
        json!({"name": name, "force": force}),
        || {
            host::update(&ctx.home, |reg| {
                let h = reg
                    .hosts
                    .get(name)
                    .ok_or_else(|| OrangeError::invalid(format!("no host named {name:?}")))?;
                if !h.projects.is_empty() && !force {
                    return Err(OrangeError::invalid(format!(
                    "host {name} still has project(s) {}; remove them first (`orange project remove NAME`) or pass --force",
                    h.projects.keys().cloned().collect::<Vec<_>>().join(", ")
                )));
                }
                Ok(reg.hosts.remove(name).expect("present"))
            })
        },
    )?;
    broker::stop(&h.serve_socket(&ctx.home));
    h.ssh(&ctx.home).disconnect();
    let _ = std::fs::remove_file(
        ctx.home
            .run_dir()
            .join("hosts")
            .join(format!("{name}.json")),
    );
    let text = format!("removed host {name} (nothing was changed on it)\n");
    Ok(Out::new(h, text))
}

/// Run on the host: the snapshot of its tmux server (a monitor pass when no monitor
/// runs there, so deaths are recorded there, by its own monitor code).
fn snapshot(ctx: &Ctx) -> Result<Out> {
    let tmux = Tmux::from_env();
    let snap = if snapshot::monitor_running(&ctx.home, &tmux) {
        snapshot::current(&ctx.home, &tmux)?
    } else {
        let mut m = Monitor::new(&ctx.home, tmux.clone())?.via("host");
        match m.pass_within(std::time::Duration::from_millis(300)) {
            Ok(mut r) => {
                let snap = r.snapshot.take().unwrap_or_default();
                super::monitor::publish(&ctx.home, &tmux, &snap);
                snap
            }
            Err(OrangeError::LockTimeout { .. }) => snapshot::current(&ctx.home, &tmux)?,
            Err(e) => return Err(e),
        }
    };
    let out = RemoteSnapshot {
        version: env!("CARGO_PKG_VERSION").to_string(),
        taken_at_ms: snap.taken_at_ms,
        summary: snap.summary,
    };
    Ok(Out::new(
        &out,
        format!("{}\n", serde_json::to_string(&out).unwrap_or_default()),
    ))
}

/// Run on the host: what `host check` reports.
fn info() -> Result<Out> {
    let home = store::Home::from_env()?;
    let v = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "home": home.root,
        "tmux_socket": std::env::var("ORANGE_TMUX_SOCKET").ok(),
        "tmux": shell::version_with("tmux", "-V"),
        "git": shell::version_of("git"),
    });
    Ok(Out::new(&v, format!("{v}\n")))
}
