//! Review rounds (DESIGN.md "After done"): comments on the lines of a task's diff, kept
//! with the task (`tasks/<p>/<id>/reviews/<n>.json`) and sent to its agent as ONE message
//! through `task send`'s path.
//!
//! - [`file`]: the review file the person's editor opens, and the comments it holds once
//!   saved.
//! - [`Round`]: one round: its comments (anchored to file, side, line and the code line),
//!   who wrote them, when it was sent and what became of it.
//! - [`refind`]: before a round is sent, each anchor is looked for again in the file as it
//!   is now (the agent may have changed it since): by its line, else by its code line
//!   (the nearest), else it is listed as lost — never dropped.
//! - [`message`]: what the agent reads.

pub mod file;
pub mod findings;
pub mod record;
pub mod reviewer;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::adapters::store;
use crate::error::{OrangeError, Result};

/// Which side of the diff a comment's line is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The file as the task has it (an added or unchanged line).
    New,
    /// The file as the base has it (a removed line).
    Old,
}

/// One comment, anchored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comment {
    pub path: String,
    /// `None` with `line`: about the whole file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<Side>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// The code line the comment is about, as it was when written.
    #[serde(default)]
    pub code: String,
    pub text: String,
    /// Found again at `line` by its code line: the line it was written at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_from: Option<u32>,
    /// Its code line is no longer in the file: kept, and said.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lost: bool,
}

/// Who wrote a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Author {
    /// In the review file, in the person's editor.
    Person,
    /// With `--comment` (a script, or a person on the command line).
    CommandLine,
    /// The review comments of the task's pull request (`--from-pr`).
    PullRequest,
    /// A reviewer agent (`task review --agent`, `[review] on_complete`).
    Reviewer,
}

/// What became of a round sent to the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// Typed into the agent.
    Sent,
    /// Held until its turn ends (it was working).
    Held,
}

/// One review round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// 1, 2, …: the task's rounds in order.
    pub n: u32,
    pub by: Author,
    pub created_at: String,
    pub comments: Vec<Comment>,
    /// When it went to the agent, and how.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
}

fn dir(task_dir: &Path) -> PathBuf {
    task_dir.join("reviews")
}

fn path(task_dir: &Path, n: u32) -> PathBuf {
    dir(task_dir).join(format!("{n}.json"))
}

/// The task's rounds, in order. A damaged file is an error naming it.
pub fn rounds(task_dir: &Path) -> Result<Vec<Round>> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir(task_dir)) else {
        return Ok(out);
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name
            .strip_suffix(".json")
            .and_then(|n| n.parse::<u32>().ok())
            .is_none()
        {
            continue;
        }
        let bytes = std::fs::read(e.path())
            .map_err(|err| OrangeError::io("reading a review round", err))?;
        let round: Round =
            serde_json::from_slice(&bytes).map_err(|err| OrangeError::StateCorrupt {
                path: e.path(),
                detail: err.to_string(),
            })?;
        out.push(round);
    }
    out.sort_by_key(|r| r.n);
    Ok(out)
}

/// Record a new round (numbered after the last one).
pub fn create(task_dir: &Path, by: Author, comments: Vec<Comment>) -> Result<Round> {
    std::fs::create_dir_all(dir(task_dir)).map_err(|e| OrangeError::io("creating reviews/", e))?;
    let n = rounds(task_dir)?.last().map_or(1, |r| r.n + 1);
    let round = Round {
        n,
        by,
        created_at: store::now_rfc3339(),
        comments,
        sent_at: None,
        delivery: None,
    };
    save(task_dir, &round)?;
    Ok(round)
}

pub fn save(task_dir: &Path, round: &Round) -> Result<()> {
    store::write_json_atomic(&path(task_dir, round.n), round)
}

/// Look for each anchor of the new side again in the workspace's files as they are now
/// (`read` gives a file's text by its path, `None` when it is gone): at its line when the
/// code line is still there, else at the nearest line holding the same code, else lost.
pub fn refind(comments: &mut [Comment], read: impl Fn(&str) -> Option<String>) {
    for c in comments.iter_mut() {
        let (Some(Side::New), Some(line)) = (c.side, c.line) else {
            continue;
        };
        let Some(text) = read(&c.path) else {
            c.lost = true;
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        if lines.get(line as usize - 1) == Some(&c.code.as_str()) {
            c.lost = false;
            continue;
        }
        let nearest = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| **l == c.code)
            .map(|(i, _)| i as u32 + 1)
            .min_by_key(|i| i.abs_diff(line));
        match nearest {
            Some(now) => {
                c.moved_from = Some(c.moved_from.unwrap_or(line));
                c.line = Some(now);
                c.lost = false;
            }
            None => c.lost = true,
        }
    }
}

/// The round as the agent reads it: one message, each comment with its file, line and
/// code line.
pub fn message(round: &Round) -> String {
    let count = round.comments.len();
    let mut s = format!(
        "Review round {} of your changes: {count} comment{}. Address each one, then say what you changed.\n",
        round.n,
        if count == 1 { "" } else { "s" }
    );
    for (i, c) in round.comments.iter().enumerate() {
        let place = match (c.side, c.line) {
            (Some(Side::New), Some(_)) if c.lost => {
                format!(
                    "{} (the line `{}` is no longer in the file)",
                    c.path,
                    c.code.trim()
                )
            }
            (Some(Side::New), Some(l)) => format!("{}:{l}: `{}`", c.path, c.code.trim()),
            (Some(Side::Old), Some(l)) => {
                format!(
                    "{} (removed line {l} of the base: `{}`)",
                    c.path,
                    c.code.trim()
                )
            }
            _ => format!("{} (the whole file)", c.path),
        };
        s.push_str(&format!("\n{}. {place}\n", i + 1));
        for line in c.text.lines() {
            s.push_str(&format!("   {line}\n"));
        }
    }
    s
}

/// Send a round: its anchors found again in the files as they are now (`read`: a
/// workspace file by its path), then ONE message through `task send`'s path; the round
/// keeps when and how, the history says it.
pub fn send_round(
    tasks: &mut crate::orchestration::task::service::TaskService,
    task: &crate::orchestration::task::Task,
    task_dir: &Path,
    round: &mut Round,
    force: bool,
    read: impl Fn(&str) -> Option<String>,
) -> Result<crate::orchestration::task::send::Sent> {
    use crate::orchestration::task::send::Outcome;
    refind(&mut round.comments, read);
    let text = message(round);
    let sent = tasks.send(
        &task.id,
        Some(&task.project),
        &text,
        crate::orchestration::task::SendKind::Review,
        force,
    )?;
    round.sent_at = Some(store::now_rfc3339());
    round.delivery = Some(match sent.outcome {
        Outcome::Sent => Delivery::Sent,
        Outcome::Held => Delivery::Held,
    });
    save(task_dir, round)?;
    let lost = round.comments.iter().filter(|c| c.lost).count();
    tasks.store.append_history(
        task,
        "review.sent",
        serde_json::json!({"round": round.n, "comments": round.comments.len(), "delivery": round.delivery, "lost": lost}),
    )?;
    Ok(sent)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comment(line: u32, code: &str) -> Comment {
        Comment {
            path: "a.rs".into(),
            side: Some(Side::New),
            line: Some(line),
            code: code.into(),
            text: "t".into(),
            moved_from: None,
            lost: false,
        }
    }

    #[test]
    fn anchors_are_found_again_by_their_code_line_or_listed_lost() {
        let mut cs = vec![
            comment(2, "b"),
            comment(3, "c"),
            comment(1, "gone"),
            Comment {
                side: Some(Side::Old),
                ..comment(9, "old")
            },
        ];
        refind(&mut cs, |_| Some("new\nfirst\nb\nx\nc\n".into()));
        assert_eq!(
            (cs[0].line, cs[0].moved_from, cs[0].lost),
            (Some(3), Some(2), false)
        );
        assert_eq!(
            (cs[1].line, cs[1].moved_from, cs[1].lost),
            (Some(5), Some(3), false)
        );
        assert!(cs[2].lost);
        assert_eq!((cs[3].line, cs[3].lost), (Some(9), false));
        let mut gone = vec![comment(1, "a")];
        refind(&mut gone, |_| None);
        assert!(gone[0].lost);
    }

    #[test]
    fn the_message_names_file_line_and_code_of_each_comment() {
        let round = Round {
            n: 2,
            by: Author::Person,
            created_at: String::new(),
            comments: vec![
                Comment {
                    text: "needs a test\nand docs".into(),
                    ..comment(12, "    let y = f();")
                },
                Comment {
                    lost: true,
                    ..comment(3, "gone()")
                },
                Comment {
                    side: None,
                    line: None,
                    code: String::new(),
                    ..comment(0, "")
                },
            ],
            sent_at: None,
            delivery: None,
        };
        let m = message(&round);
        assert!(
            m.starts_with("Review round 2 of your changes: 3 comments."),
            "{m}"
        );
        assert!(
            m.contains("\n1. a.rs:12: `let y = f();`\n   needs a test\n   and docs\n"),
            "{m}"
        );
        assert!(
            m.contains("2. a.rs (the line `gone()` is no longer in the file)"),
            "{m}"
        );
        assert!(m.contains("3. a.rs (the whole file)\n   t\n"), "{m}");
    }
}
