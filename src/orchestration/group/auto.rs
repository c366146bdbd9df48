//! `--judge auto`: the monitor starts a group's judging once its last member is ready
//! (every member with a task is ready for review, merged, cancelled or gone, and one at
//! least is ready), as a command of its own (`orange group judge G --notify`: a check may
//! run for minutes and must never hold up a pass), which tells the people attached once.
//! The same for a judge agent that has answered (`group judge --agent` returned once it
//! started): `orange group judge G --collect --notify` reads its ranking and tells.
//!
//! A judging that died (killed, or never started) is found by its group's judging lock,
//! which every `group judge` holds until it has told ([`GroupStore::hold_judging`]): free a
//! minute after the judging began, with no judgement yet, the monitor starts it again (at
//! most [`AUTO_ATTEMPTS`] times in all); with a judgement not yet told, it tells.

use serde_json::json;

use crate::adapters::store::{self, Home};
use crate::adapters::tmux::Tmux;
use crate::error::Result;
use crate::orchestration::group::members::members;
use crate::orchestration::group::model::{Group, JudgeMode, AUTO_ATTEMPTS};
use crate::orchestration::group::store::GroupStore;
use crate::orchestration::limits;
use crate::orchestration::task::service::TaskService;

/// How long an automatic judging may run.
const LIMIT: std::time::Duration = std::time::Duration::from_secs(3600);

/// How long after an automatic judging started, and with no `group judge` of its group
/// running, it is taken for one that died (killed, or never started: its judgement or its
/// telling is done again). A judging takes its lock in its first milliseconds.
const RETRY_AFTER: chrono::Duration = chrono::Duration::seconds(60);

/// Is `g` waiting for an automatic judging: none started, or one that ended (killed, or
/// never started) without a judgement, fewer than [`AUTO_ATTEMPTS`] times?
fn waiting(groups: &GroupStore, g: &Group) -> bool {
    auto_and_open(g)
        && g.judgement.is_none()
        && g.auto_started
            .as_deref()
            .is_none_or(|at| g.auto_attempts < AUTO_ATTEMPTS && died(groups, g, at))
}

/// Was `g`'s automatic judging judged but never told (the command killed in between)?
fn untold(groups: &GroupStore, g: &Group) -> bool {
    auto_and_open(g)
        && g.auto_started.is_some()
        && g.judging().is_none()
        && !g.notified
        && g.judgement.as_ref().is_some_and(|j| died(groups, g, &j.at))
}

/// A `--judge auto` group neither cancelled nor picked.
fn auto_and_open(g: &Group) -> bool {
    g.judge == JudgeMode::Auto && !g.cancelled && g.picked.is_none()
}

/// A judging of `g` that began at `at` (the monitor's clock, [`limits::clock`]) is over:
/// its time to take its lock long past, and no `group judge` of `g` runs.
fn died(groups: &GroupStore, g: &Group, at: &str) -> bool {
    chrono::DateTime::parse_from_rfc3339(at)
        .is_ok_and(|t| limits::clock() - t.to_utc() >= RETRY_AFTER)
        && !groups.judging_runs(g)
}

/// Start the judging of every `--judge auto` group whose last member is ready (marked
/// started first: one judging per group, even across monitors). Never fails a pass.
pub fn judge_due(home: &Home) {
    let groups = GroupStore::new(home);
    let (all, bad) = groups.list_readable(None);
    for (id, e) in bad {
        store::log(
            home,
            "warn",
            "group: a record that cannot be read is passed over",
            json!({"group": id, "error": e.to_string(), "code": e.code()}),
        );
    }
    let tmux = Tmux::from_env();
    for g in all
        .iter()
        .filter(|g| super::judge::answered(home, &tmux, g) || untold(&groups, g))
    {
        let args = [
            "group",
            "judge",
            &g.id,
            "--project",
            &g.project,
            "--collect",
            "--notify",
        ];
        if let Err(e) = run_orange(&args.map(String::from)) {
            store::log(
                home,
                "warn",
                "group: judge's answer not read",
                json!({"group": g.id, "error": e.to_string()}),
            );
        }
    }
    for g in all.into_iter().filter(|g| waiting(&groups, g)) {
        if let Err(e) = start_if_ready(home, &groups, &g) {
            store::log(
                home,
                "warn",
                "group: automatic judging not started",
                json!({"group": g.id, "error": e.to_string()}),
            );
        }
    }
}

fn start_if_ready(home: &Home, groups: &GroupStore, g: &Group) -> Result<()> {
    let tasks = TaskService::new(home);
    let ms = members(&tasks, g);
    let ready = ms.iter().filter(|m| m.is_ready()).count();
    let open = ms
        .iter()
        .filter(|m| m.task.as_ref().is_some_and(|t| !t.status.is_final()) && !m.is_ready())
        .count();
    if ready == 0 || open > 0 {
        return Ok(());
    }
    {
        let Some(_lock) = tasks.store.try_lock(&g.project)? else {
            return Ok(());
        };
        let mut g = groups.load(&g.project, &g.id)?;
        if !waiting(groups, &g) {
            return Ok(());
        }
        if let Some(at) = &g.auto_started {
            store::log(
                home,
                "warn",
                "group: an automatic judging ended without a judgement; judging again",
                json!({"group": g.id, "started": at}),
            );
        }
        g.auto_started = Some(limits::clock().to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
        g.auto_attempts += 1;
        groups.save(&g)?;
    }
    let args = ["group", "judge", &g.id, "--project", &g.project, "--notify"].map(String::from);
    run_orange(&args)?;
    store::log(home, "info", "group: judging", json!({"group": g.id}));
    Ok(())
}

/// Run this orange with `args`, in the background (at most [`LIMIT`]).
fn run_orange(args: &[String]) -> Result<()> {
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "orange".into());
    crate::adapters::shell::spawn_limited(&exe, args, LIMIT)
}

/// Tell the people attached `msg` (a tmux message on each client), once, and log it.
pub fn tell(home: &Home, tmux: &Tmux, msg: &str) {
    let clients = tmux.clients().unwrap_or_default();
    let names: Vec<&str> = clients.iter().map(|c| c.name.as_str()).collect();
    if !names.is_empty() {
        let _ = tmux.display_to_clients(&names, &crate::text::for_tmux(msg));
    }
    store::log(
        home,
        "info",
        "notified",
        json!({"message": msg, "clients": names.len()}),
    );
}

/// Tell the people attached of `g`'s judgement (`verdict`), once: the group remembers it.
pub fn tell_once(tasks: &TaskService, g: &Group, verdict: &str) -> Result<()> {
    let groups = GroupStore::new(tasks.home);
    {
        let _lock = tasks.store.lock(&g.project)?;
        let mut g = groups.load(&g.project, &g.id)?;
        if g.notified {
            return Ok(());
        }
        g.notified = true;
        groups.save(&g)?;
    }
    tell(tasks.home, &tasks.tmux, verdict);
    Ok(())
}
