//! `orange task review ID`: a review round — comments on the lines of the task's diff,
//! written in the person's editor (or with `--comment PATH:LINE TEXT`), kept with the task
//! and sent to its agent as one message through `task send`'s path; `--approve` records
//! the outcome. The round itself is `orchestration::review`.

use std::io::IsTerminal;
use std::path::Path;

use serde_json::json;

use super::context::{audited, Ctx};
pub use super::task_args::ReviewArgs;
use crate::adapters::editor;
use crate::error::{OrangeError, Result};
use crate::orchestration::review::{self, file, reviewer, Author, Comment, Round, Side};
use crate::orchestration::task::send::{Outcome, Sent};
use crate::orchestration::task::service::TaskService;
use crate::orchestration::task::{Status, Task};
use crate::ui::changes;
use crate::ui::output::Out;

/// What `task review` did, for `--json`.
#[derive(Debug, serde::Serialize)]
struct Reviewed {
    id: String,
    /// The round written or sent (`null`: none).
    round: Option<Round>,
    sent: Option<Sent>,
    approved: bool,
    warnings: Vec<String>,
}

pub fn run(ctx: &Ctx, tasks: &mut TaskService, a: ReviewArgs) -> Result<Out> {
    let task = tasks.get(&a.id, ctx.project.as_deref())?;
    if let Some(h) = &a.agent {
        return start_reviewer(ctx, tasks, &task, h, &a);
    }
    let dir = tasks.store.dir(&task.project, &task.id);
    let mut done = Reviewed {
        id: task.id.clone(),
        round: None,
        sent: None,
        approved: false,
        warnings: Vec::new(),
    };
    let mut text = String::new();
    let written = if let Some(n) = a.round {
        Some(
            review::rounds(&dir)?
                .into_iter()
                .find(|r| r.n == n)
                .ok_or_else(|| {
                    OrangeError::invalid(format!("task {} has no review round {n}", task.id))
                })?,
        )
    } else if let Some(round) = a
        .edits()
        .then(|| reviewer_round(&dir))
        .transpose()?
        .flatten()
    {
        // The reviewer's round, not sent yet: the person edits it.
        let n = round.n;
        let edited = edit_reviewer_round(ctx, tasks, &task, &dir, round, &mut done.warnings)?;
        text.push_str(&format!(
            "review round {n} (the reviewer's): {}\n",
            match &edited {
                Some(r) => format!("{} kept", count(r.comments.len())),
                None => "no comment left in the file: kept as it was".into(),
            }
        ));
        match edited {
            Some(r) => Some(r),
            None => review::rounds(&dir)?.into_iter().find(|r| r.n == n),
        }
    } else {
        let (comments, by) = if a.from_pr {
            let comments = from_pr(ctx, &task)?;
            if comments.is_empty() {
                text.push_str("no review comment on the task's pull request: nothing recorded\n");
            }
            (comments, Author::PullRequest)
        } else if !a.comment.is_empty() {
            (from_flags(ctx, &task, &a.comment)?, Author::CommandLine)
        } else if a.edits() {
            let (comments, edited) = in_editor(ctx, &task)?;
            if edited {
                done.warnings.push(
                    "the diff part of the review file was changed: those changes are ignored"
                        .into(),
                );
            }
            (comments, Author::Person)
        } else {
            (Vec::new(), Author::Person)
        };
        if comments.is_empty() {
            None
        } else {
            let round = audited(
                ctx,
                "task.review",
                json!({"id": task.id, "comments": comments.len()}),
                || record(tasks, &task, &dir, by, comments),
            )?;
            text.push_str(&format!(
                "review round {}: {} recorded\n",
                round.n,
                count(round.comments.len())
            ));
            Some(round)
        }
    };
    if a.edits() && written.is_none() {
        text.push_str("no comment written: nothing recorded\n");
    }
    if let Some(mut round) = written {
        let ask = !a.send && a.edits() && !ctx.json && std::io::stdin().is_terminal();
        if a.send || (ask && yes(&format!("Send round {} to the agent now?", round.n))?) {
            let sent = send(ctx, tasks, &task, &dir, &mut round, a.force)?;
            text.push_str(&sent_text(&round, &sent));
            done.sent = Some(sent);
        } else if a.edits() || !a.comment.is_empty() {
            text.push_str(&format!(
                "not sent: `orange task review {} --round {} --send` sends it\n",
                task.id, round.n
            ));
        }
        done.round = Some(round);
    }
    if a.approve {
        approve(ctx, tasks, &task)?;
        done.approved = true;
        text.push_str(&format!("task {}: review approved\n", task.id));
    }
    for w in &done.warnings {
        eprintln!("orange: warning: {w}");
    }
    Ok(Out::new(&done, text))
}

/// `--agent H`: a reviewer started beside the task's agent; the monitor reads its
/// findings when it ends (one is started if none runs).
fn start_reviewer(
    ctx: &Ctx,
    tasks: &mut TaskService,
    task: &Task,
    harness: &str,
    a: &ReviewArgs,
) -> Result<Out> {
    let ask = reviewer::Ask {
        harness,
        prompt: a.prompt.as_deref(),
        send: a.send,
        trigger: reviewer::Trigger::Command,
        ready: None,
    };
    let r = audited(
        ctx,
        "task.review.agent",
        json!({"id": task.id, "harness": harness, "send": a.send}),
        || reviewer::start(tasks, task, ask.clone()),
    )?;
    // Its end is seen by the monitor: one runs.
    let _ = crate::orchestration::monitor::presence::ensure(&ctx.home, &tasks.tmux);
    let text =
        format!(
        "task {}: {} ({}), in its session's window `{}`; its findings become a review round{}\n",
        task.id,
        reviewer::line(&r),
        match r.guard {
            reviewer::Guard::Sandbox => "read-only in a bwrap sandbox",
            reviewer::Guard::Check => "no sandbox here: the worktree is checked afterwards",
        },
        r.window_id.as_deref().unwrap_or("-"),
        if a.send { ", sent to the agent at once" } else { ": `orange task review ID` opens it" }
    );
    Ok(Out::new(json!({"id": task.id, "reviewer": r}), text))
}

fn count(n: usize) -> String {
    format!("{n} comment{}", if n == 1 { "" } else { "s" })
}

/// Ask on the terminal; Enter is yes.
fn yes(question: &str) -> Result<bool> {
    let answer = crate::cli::context::ask(&format!("{question} [Y/n] "))?;
    Ok(matches!(answer.trim(), "" | "y" | "Y" | "yes"))
}

/// `--comment PATH:LINE TEXT` pairs: anchored to the workspace's file as it is now (a
/// missing file or line is an error naming it).
fn from_flags(ctx: &Ctx, task: &Task, pairs: &[String]) -> Result<Vec<Comment>> {
    pairs
        .chunks(2)
        .map(|pair| {
            let (at, text) = (&pair[0], pair.get(1).map(String::as_str).unwrap_or(""));
            let (path, line) = at
                .rsplit_once(':')
                .and_then(|(p, l)| Some((p, l.parse::<u32>().ok()?)))
                .filter(|(p, l)| !p.is_empty() && *l > 0)
                .ok_or_else(|| {
                    OrangeError::invalid(format!(
                        "--comment {at:?}: give PATH:LINE (a file of the workspace and a line number from 1)"
                    ))
                })?;
            if text.trim().is_empty() {
                return Err(OrangeError::invalid(format!("--comment {at}: the comment is empty")));
            }
            let content = changes::workspace_file(&ctx.home, task, path).ok_or_else(|| {
                OrangeError::invalid(format!(
                    "--comment {at}: {path} is not a file of task {}'s workspace",
                    task.id
                ))
            })?;
            let code = content.lines().nth(line as usize - 1).ok_or_else(|| {
                OrangeError::invalid(format!(
                    "--comment {at}: {path} has {} lines",
                    content.lines().count()
                ))
            })?;
            Ok(Comment {
                path: path.to_string(),
                side: Some(Side::New),
                line: Some(line),
                code: code.to_string(),
                text: text.trim().to_string(),
                moved_from: None,
                lost: false,
            })
        })
        .collect()
}

/// The review comments of the task's pull request, each anchored to its file and line
/// (the code line read from the workspace for the new side), its author named.
fn from_pr(ctx: &Ctx, task: &Task) -> Result<Vec<Comment>> {
    let pr = crate::orchestration::task::pr::recorded(task).ok_or_else(|| {
        OrangeError::invalid(format!(
            "task {} has no pull request: `orange task pr {}` opens one",
            task.id, task.id
        ))
    })?;
    let project = crate::orchestration::project::get(&ctx.home, &task.project)?;
    let comments = crate::adapters::gh::review_comments(&project.path, pr.number)?;
    Ok(comments
        .into_iter()
        .filter(|c| !c.body.trim().is_empty())
        .map(|c| {
            let side = match c.side.as_deref() {
                Some("LEFT") => Side::Old,
                _ => Side::New,
            };
            let line = c.line.or(c.original_line).map(|l| l as u32);
            let code = match (side, line) {
                (Side::New, Some(l)) if l > 0 => changes::workspace_file(&ctx.home, task, &c.path)
                    .and_then(|f| f.lines().nth(l as usize - 1).map(str::to_string))
                    .unwrap_or_default(),
                _ => String::new(),
            };
            let who = c.user.map(|u| format!("{}: ", u.login)).unwrap_or_default();
            Comment {
                path: c.path,
                side: line.map(|_| side),
                line,
                code,
                text: format!("{who}{}", c.body.trim()),
                moved_from: None,
                lost: false,
            }
        })
        .collect())
}

/// The task's last round when a reviewer agent wrote it and it was not sent yet.
fn reviewer_round(dir: &Path) -> Result<Option<Round>> {
    Ok(review::rounds(dir)?
        .pop()
        .filter(|r| r.by == Author::Reviewer && r.sent_at.is_none()))
}

/// The reviewer's round in the person's editor, its comments under their lines: what is
/// saved replaces them (comments on files the diff does not hold are kept). `None`: no
/// comment left, the round stays as it was.
fn edit_reviewer_round(
    ctx: &Ctx,
    tasks: &mut TaskService,
    task: &Task,
    dir: &Path,
    mut round: Round,
    warnings: &mut Vec<String>,
) -> Result<Option<Round>> {
    let (mut comments, edited, unplaced) = in_editor_with(ctx, task, &round.comments)?;
    if edited {
        warnings
            .push("the diff part of the review file was changed: those changes are ignored".into());
    }
    if comments.is_empty() {
        return Ok(None);
    }
    comments.extend(unplaced);
    round.comments = comments;
    audited(
        ctx,
        "task.review.edit",
        json!({"id": task.id, "round": round.n, "comments": round.comments.len()}),
        || {
            review::save(dir, &round)?;
            tasks.store.append_history(
                task,
                "review.edited",
                json!({"round": round.n, "comments": round.comments.len()}),
            )
        },
    )?;
    Ok(Some(round))
}

/// The review file in the person's editor: its comments, and whether the diff was edited.
/// An editor that fails records nothing.
fn in_editor(ctx: &Ctx, task: &Task) -> Result<(Vec<Comment>, bool)> {
    in_editor_with(ctx, task, &[]).map(|(c, e, _)| (c, e))
}

/// [`in_editor`] with `written` comments in the file already; also those it could not
/// place (their file is not in the diff).
fn in_editor_with(
    ctx: &Ctx,
    task: &Task,
    written: &[Comment],
) -> Result<(Vec<Comment>, bool, Vec<Comment>)> {
    let diff = changes::task_patch(&ctx.home, task)?;
    let title = format!("task {} ({}/{})", task.id, task.project, task.branch);
    let dir = ctx.home.run_dir().join("review");
    std::fs::create_dir_all(&dir).map_err(|e| OrangeError::io("creating run/review", e))?;
    let file = tempfile::Builder::new()
        .prefix(&format!("{}-", task.id))
        .suffix(".diff")
        .tempfile_in(&dir)
        .map_err(|e| OrangeError::io("creating the review file", e))?;
    let (shown, unplaced) = if written.is_empty() {
        (file::render(&title, &diff), vec![])
    } else {
        file::render_with(&title, &diff, written)
    };
    std::fs::write(file.path(), shown)
        .map_err(|e| OrangeError::io("writing the review file", e))?;
    editor::edit(file.path()).map_err(|e| match e {
        OrangeError::BackendCommandFailed(m) => {
            OrangeError::BackendCommandFailed(format!("{m}: nothing recorded"))
        }
        other => other,
    })?;
    let saved = read_lossy(file.path())?;
    let parsed = file::parse(&saved, &diff);
    Ok((parsed.comments, parsed.diff_edited, unplaced))
}

fn read_lossy(path: &Path) -> Result<String> {
    std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(|e| OrangeError::io("reading the review file", e))
}

/// Keep a new round with the task; history `review round N: K comments`.
fn record(
    tasks: &mut TaskService,
    task: &Task,
    dir: &Path,
    by: Author,
    comments: Vec<Comment>,
) -> Result<Round> {
    let round = review::create(dir, by, comments)?;
    tasks.store.append_history(
        task,
        "review.round",
        json!({"round": round.n, "comments": round.comments.len(), "by": round.by}),
    )?;
    Ok(round)
}

/// Send a round through `task send`'s path (`review::send_round`), audited.
fn send(
    ctx: &Ctx,
    tasks: &mut TaskService,
    task: &Task,
    dir: &Path,
    round: &mut Round,
    force: bool,
) -> Result<Sent> {
    audited(
        ctx,
        "task.review.send",
        json!({"id": task.id, "round": round.n, "force": force}),
        || {
            review::send_round(tasks, task, dir, round, force, |p| {
                changes::workspace_file(&ctx.home, task, p)
            })
        },
    )
}

fn sent_text(round: &Round, sent: &Sent) -> String {
    let mut s = match sent.outcome {
        Outcome::Sent => format!(
            "review round {}: {} sent to the agent\n",
            round.n,
            count(round.comments.len())
        ),
        Outcome::Held => format!(
            "review round {}: {} held: the agent is working; typed in when its turn ends\n",
            round.n,
            count(round.comments.len())
        ),
    };
    for c in round.comments.iter().filter(|c| c.lost) {
        s.push_str(&format!(
            "  {}: the line `{}` is no longer in the file (sent, saying so)\n",
            c.path,
            c.code.trim()
        ));
    }
    s
}

/// `--approve`: the outcome in the history; a task still at work moves on to `reviewing`.
fn approve(ctx: &Ctx, tasks: &mut TaskService, task: &Task) -> Result<()> {
    audited(ctx, "task.review.approve", json!({"id": task.id}), || {
        let now = tasks.store.load(&task.project, &task.id)?;
        tasks
            .store
            .append_history(&now, "review.approved", json!({}))?;
        if now.status != Status::Reviewing && now.status.can_become(Status::Reviewing) {
            tasks.set_status(&now, Status::Reviewing, "task review --approve")?;
        }
        Ok(())
    })
}
