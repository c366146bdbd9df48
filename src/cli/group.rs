//! `orange group list|show|judge|pick|cancel`, and `task create … --n N` (which makes a
//! group): one function per verb. What they print is in `group_text`.

use serde_json::json;

use super::args::{GroupCmd, TaskCreateArgs};
use super::context::{audited, confirm, Ctx, Done};
use super::group_text;
use crate::error::{OrangeError, Result};
use crate::orchestration::group::judge::{self, JudgeRequest};
use crate::orchestration::group::members::{self, MemberNow};
use crate::orchestration::group::model::JudgeMode;
use crate::orchestration::group::service::{self, GroupRequest, Onward};
use crate::orchestration::group::{Group, GroupStore};
use crate::orchestration::task::service::TaskService;
use crate::ui::output::Out;

pub fn run(ctx: &Ctx, cmd: GroupCmd) -> Result<Done> {
    let mut tasks = TaskService::new(&ctx.home);
    let t = &mut tasks;
    match cmd {
        GroupCmd::List { all } => list(ctx, t, all).map(Done::from),
        GroupCmd::Show { group } => show(ctx, t, &group).map(Done::from),
        GroupCmd::Judge {
            group,
            agent,
            now,
            timeout,
            wait,
            collect,
            notify,
        } => {
            let how = How {
                now,
                wait,
                collect,
                notify,
            };
            judge(ctx, t, &group, (agent, timeout), how).map(Done::from)
        }
        GroupCmd::Pick {
            group,
            member,
            merge,
            pr,
            yes,
        } => {
            let onward = match (merge, pr) {
                (true, _) => Onward::Merge,
                (_, true) => Onward::Pr,
                _ => Onward::Keep,
            };
            pick(ctx, t, &group, &member, onward, yes)
        }
        GroupCmd::Cancel { group, yes } => cancel(ctx, t, &group, yes),
    }
}

/// The group a person named, in the project of the current directory (or --project) when
/// there is one, else in any project.
fn find(ctx: &Ctx, typed: &str) -> Result<Group> {
    let project = match &ctx.project {
        Some(p) => Some(p.clone()),
        None => ctx.project().ok().map(|p| p.name),
    };
    GroupStore::new(&ctx.home).find(typed, project.as_deref())
}

/// `task create BRANCH PROMPT --n N | --harness H[:N] …`
pub fn create(ctx: &Ctx, tasks: &mut TaskService, a: TaskCreateArgs) -> Result<Done> {
    let project = ctx.project()?;
    let base = a.branch.clone().filter(|b| !b.is_empty()).ok_or_else(|| {
        OrangeError::invalid("a group needs a BRANCH: its members work on BRANCH/1, BRANCH/2, …")
    })?;
    let prompt = a.summary.clone().ok_or_else(|| {
        OrangeError::invalid("a group needs a prompt: every member is given the same one")
    })?;
    let context = a.context_text()?;
    let judge = a.judge.as_deref().map(JudgeMode::parse).transpose()?;
    let inputs = json!({"project": project.name, "branch": base, "summary": prompt, "harness": a.harness, "n": a.n, "force": a.force, "judge": a.judge, "no_spawn": a.no_spawn});
    let created = audited(ctx, "group.create", inputs, || {
        service::create(
            tasks,
            &project,
            GroupRequest {
                base,
                prompt,
                n: a.n,
                harnesses: a.harness,
                force: a.force,
                context,
                spawn: !a.no_spawn,
                sandbox: a.sandbox,
                headless: a.headless,
                judge: judge.unwrap_or_default(),
                limits: a.limits.config(),
            },
        )
    })?;
    let text = group_text::created(&created);
    let session = created
        .members
        .iter()
        .find_map(|m| m.task.as_ref().and_then(|t| t.tmux_session_id.clone()));
    Ok(Done {
        out: Out::new(&created, text),
        session,
        next_session: None,
    })
}

/// A group and its members as they are now, as JSON.
fn group_json(g: &Group, ms: &[MemberNow]) -> serde_json::Value {
    let mut v = serde_json::to_value(g).unwrap_or_default();
    v["members"] = serde_json::to_value(ms).unwrap_or_default();
    v
}

/// `group list [--all]`
fn list(ctx: &Ctx, tasks: &mut TaskService, all: bool) -> Result<Out> {
    let project = if all { None } else { Some(ctx.project()?.name) };
    let groups = GroupStore::new(&ctx.home).list(project.as_deref())?;
    let rows: Vec<(Group, Vec<MemberNow>)> = groups
        .into_iter()
        .map(|g| {
            let ms = members::members(tasks, &g);
            (g, ms)
        })
        .collect();
    let text = group_text::list(&rows, all);
    let json: Vec<serde_json::Value> = rows.iter().map(|(g, ms)| group_json(g, ms)).collect();
    Ok(Out::new(json, text))
}

/// `group show G`
fn show(ctx: &Ctx, tasks: &mut TaskService, typed: &str) -> Result<Out> {
    let g = find(ctx, typed)?;
    let ms = members::members(tasks, &g);
    Ok(Out::new(group_json(&g, &ms), group_text::show(&g, &ms)))
}

/// `group judge`'s switches.
struct How {
    now: bool,
    wait: bool,
    collect: bool,
    notify: bool,
}

/// `group judge G [--agent H [--wait]] [--now] [--timeout D]`
fn judge(
    ctx: &Ctx,
    tasks: &mut TaskService,
    typed: &str,
    (agent, timeout): (Option<String>, Option<String>),
    How {
        now,
        wait,
        collect,
        notify,
    }: How,
) -> Result<Out> {
    let g = find(ctx, typed)?;
    // Held until this judging has told what it found: the monitor takes a judging whose
    // lock is free for one that died.
    let _judging = GroupStore::new(&ctx.home).hold_judging(&g)?;
    let agent_timeout = timeout
        .as_deref()
        .map(|t| {
            humantime::parse_duration(t)
                .map_err(|e| OrangeError::invalid(format!("--timeout {t:?}: {e}")))
        })
        .transpose()?;
    let inputs = json!({"group": g.id, "agent": agent, "now": now});
    let req = JudgeRequest {
        now,
        agent,
        agent_timeout,
        wait,
        collect,
    };
    let g = audited(ctx, "group.judge", inputs, || judge::judge(tasks, &g, &req))?;
    let ms = members::members(tasks, &g);
    let mut text = group_text::show(&g, &ms);
    if let Some(run) = g.judging() {
        text.push_str(&format!(
            "the judge agent is at work in session {}: `orange group judge {}` reads its ranking once it has answered (the monitor does, and tells you)\n",
            run.session, g.id
        ));
    } else if let Some(v) = group_text::verdict(&g) {
        if notify {
            crate::orchestration::group::auto::tell_once(tasks, &g, &v)?;
        }
        text.push_str(&format!("{v}\n"));
    }
    Ok(Out::new(group_json(&g, &ms), text))
}

/// `group pick G MEMBER [--merge | --pr] [--yes]`: asks first when the member is still
/// working.
fn pick(
    ctx: &Ctx,
    tasks: &mut TaskService,
    typed: &str,
    member: &str,
    onward: Onward,
    yes: bool,
) -> Result<Done> {
    let g = find(ctx, typed)?;
    let ms = members::members(tasks, &g);
    let m = members::member(&ms, member)?;
    if m.is_working() {
        confirm(
            &format!(
                "member /{} of group {} is still {}: pick it now and cancel the others?",
                m.member.label, g.base, m.state
            ),
            yes,
        )?;
    }
    let inputs = json!({"group": g.id, "member": member, "merge": onward == Onward::Merge,
        "pr": onward == Onward::Pr});
    let out = audited(ctx, "group.pick", inputs, || {
        service::pick(tasks, &g, member, onward)
    })?;
    let mut text = format!(
        "group {} ({}): picked /{}\n",
        out.group.id,
        out.group.base,
        out.group.picked.as_deref().unwrap_or("?")
    );
    for (label, what) in &out.members {
        text.push_str(&format!("  /{label}: {what}\n"));
    }
    if let Some(pr) = out.pr.as_ref().map(|o| &o["pr"]) {
        text.push_str(&format!(
            "pull request #{}: {}\n",
            pr["number"],
            pr["url"].as_str().unwrap_or("")
        ));
    }
    for n in &out.notes {
        text.push_str(&format!("{n}\n"));
    }
    Ok(Done::from(Out::new(&out, text)))
}

/// `group cancel G [--yes]`
fn cancel(ctx: &Ctx, tasks: &mut TaskService, typed: &str, yes: bool) -> Result<Done> {
    let g = find(ctx, typed)?;
    confirm(
        &format!(
            "Cancel group {} ({}/{}) and its {} members?",
            g.id,
            g.project,
            g.base,
            g.members.len()
        ),
        yes,
    )?;
    let out = audited(ctx, "group.cancel", json!({"group": g.id}), || {
        service::cancel(tasks, &g)
    })?;
    let mut text = format!("cancelled group {} ({})\n", out.group.id, out.group.base);
    for (label, what) in &out.members {
        text.push_str(&format!("  /{label}: {what}\n"));
    }
    for n in &out.notes {
        text.push_str(&format!("{n}\n"));
    }
    Ok(Done::from(Out::new(&out, text)))
}
