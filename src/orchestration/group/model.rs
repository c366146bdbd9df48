//! A group: N tasks from one prompt (best of N). Its record (`tasks/<p>/.groups/<gid>.json`),
//! the plan of its members (labels and branches from `--n` / `--harness H[:N]`), its
//! judgement, and the two pure rules the judge follows: how a judge agent's answer is read
//! and how members are ranked.

use serde::{Deserialize, Serialize};

use crate::error::{OrangeError, Result};

/// The most members a group has without `--force`.
pub const MAX_MEMBERS: u32 = 10;

/// `tasks/<p>/.groups/<gid>.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Group {
    pub id: String,
    pub project: String,
    /// The branch the members' branches are named after (`api/fix` → `api/fix/1`).
    pub base: String,
    /// The prompt every member was given.
    pub prompt: String,
    /// The planned members, in order (each created as a task with `group` = this id).
    pub members: Vec<Member>,
    /// `auto`: the monitor judges when the last member is ready.
    #[serde(default)]
    pub judge: JudgeMode,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judgement: Option<Judgement>,
    /// The member picked (`group pick`): its label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub picked: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancelled: bool,
    /// When the monitor started its automatic judging (`--judge auto`), on the monitor's
    /// clock, and how many times (one that died without a judgement is started again, at
    /// most [`AUTO_ATTEMPTS`] in all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_started: Option<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub auto_attempts: u32,
    /// The people attached were told of its judgement (once; a judge agent asked for
    /// later makes a judgement of its own, told again when it answers).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub notified: bool,
}

/// How many times the monitor starts a group's automatic judging before it leaves it to a
/// person (`group judge G`).
pub const AUTO_ATTEMPTS: u32 = 3;

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Group {
    /// What the picker (`prefix O l`, tmux's choose-tree) shows before the status of the
    /// session of the member on `branch` (the `@orange_tree` mark, set when it starts):
    /// the first member's row heads the group, `group api/fix ┬ /1 `, the others hang
    /// under it, `├ /2 ` and the last `└ /3 `. Members start one after another, so their
    /// sessions are next to each other in the picker's (creation) order. Safe for tmux:
    /// the branch's `#` is doubled.
    pub fn picker_prefix(&self, branch: &str) -> Option<String> {
        let at = self.members.iter().position(|m| m.branch == branch)?;
        let head = format!("group {} ", self.base);
        let (lead, glyph) = match at {
            0 => (head, '┬'),
            _ if at + 1 == self.members.len() => (" ".repeat(head.chars().count()), '└'),
            _ => (" ".repeat(head.chars().count()), '├'),
        };
        let label = &self.members[at].label;
        Some(crate::text::for_tmux(&format!("{lead}{glyph} /{label} ")))
    }

    /// The picker's row of its judge agent, under the members (`└ judge `); the last
    /// member's row then reads `├` ([`Group::picker_prefix`] with `judged`).
    pub fn judge_picker_prefix(&self) -> String {
        let lead = " ".repeat(format!("group {} ", self.base).chars().count());
        crate::text::for_tmux(&format!("{lead}└ judge "))
    }

    /// Is a judge agent at work?
    pub fn judging(&self) -> Option<&AgentRun> {
        self.judgement.as_ref().and_then(|j| j.agent_run.as_ref())
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JudgeMode {
    #[default]
    Manual,
    Auto,
}

impl JudgeMode {
    pub fn parse(s: &str) -> Result<JudgeMode> {
        match s {
            "auto" => Ok(JudgeMode::Auto),
            "manual" | "off" => Ok(JudgeMode::Manual),
            _ => Err(OrangeError::invalid(format!(
                "--judge {s:?}: one of auto, manual"
            ))),
        }
    }
}

/// One planned member.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Member {
    /// `1`, `2`… or `claude`, `claude-2`, `codex`: shown as `/1`, `/claude`.
    pub label: String,
    pub branch: String,
    pub harness: String,
    /// Its task, once created (a command killed before that leaves `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
}

/// What `group judge` found.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Judgement {
    pub at: String,
    /// Every member judged, best first.
    pub results: Vec<MemberResult>,
    /// The judge agent's harness, when one was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Why the judge agent gave no ranking (it failed, timed out, answered nothing usable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_error: Option<String>,
    /// The check command that ran (none: no check_cmd).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_cmd: Option<String>,
    /// "no member passes the checks", "/1 and /3 tie", …
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The judge agent while it is at work (`group judge --agent` returns once it is
    /// started): the next `group judge G`, or the monitor once it has answered, reads its
    /// ranking into this judgement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_run: Option<AgentRun>,
}

/// A judge agent at work.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct AgentRun {
    /// Its tmux session (the name is recorded before it starts: a command killed in
    /// between leaves a session the next one finds).
    pub session: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    pub started_at: String,
    /// When its time is up (RFC 3339): its answer is read as it is then, or it has none.
    pub until: String,
}

/// One member's result.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MemberResult {
    pub member: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckResult>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<DiffSize>,
    /// Its place in the judge agent's ranking (1 = best) and the reason given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_place: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_reason: Option<String>,
    /// 1 = best; members that tie share a rank.
    pub rank: usize,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tied: bool,
}

/// The check command's run in one workspace.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CheckResult {
    pub passed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
    pub duration_ms: u64,
    /// Its last lines of output (stdout and stderr together).
    #[serde(default)]
    pub tail: Vec<String>,
}

/// What a member's branch changed against the base: files, lines added and removed.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct DiffSize {
    pub files: usize,
    pub added: usize,
    pub removed: usize,
}

impl DiffSize {
    pub fn lines(&self) -> usize {
        self.added + self.removed
    }
}

/// The members of a new group: `n` of `harnesses[0]` when one harness is named (or none:
/// `default`), else each harness `H[:N]` N times. Labels are numbers when every member
/// runs the same harness, else the harness (`claude`, `claude-2`).
pub fn plan(base: &str, n: Option<u32>, harnesses: &[(String, u32)], default: &str) -> Vec<Member> {
    let mut agents: Vec<String> = vec![];
    match harnesses {
        [] => agents.extend((0..n.unwrap_or(1)).map(|_| default.to_string())),
        [(h, c)] => agents.extend((0..n.unwrap_or(*c).max(*c)).map(|_| h.clone())),
        many => {
            for (h, c) in many {
                agents.extend((0..*c).map(|_| h.clone()));
            }
        }
    }
    let mixed = agents.iter().any(|h| *h != agents[0]);
    let mut seen: std::collections::HashMap<&str, usize> = Default::default();
    agents
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let label = if mixed {
                let k = seen.entry(h.as_str()).or_default();
                *k += 1;
                if *k == 1 {
                    h.clone()
                } else {
                    format!("{h}-{k}")
                }
            } else {
                (i + 1).to_string()
            };
            Member {
                branch: format!("{base}/{label}"),
                label,
                harness: h.clone(),
                task: None,
            }
        })
        .collect()
}

/// `claude:2` → (`claude`, 2); `claude` → (`claude`, 1).
pub fn parse_harness(s: &str) -> Result<(String, u32)> {
    match s.rsplit_once(':') {
        Some((h, n)) if !h.is_empty() => {
            let n: u32 = n.parse().map_err(|_| {
                OrangeError::invalid(format!("--harness {s:?}: the count after ':' is a number"))
            })?;
            if n == 0 {
                return Err(OrangeError::invalid(format!(
                    "--harness {s:?}: at least one"
                )));
            }
            Ok((h.to_string(), n))
        }
        _ => Ok((s.to_string(), 1)),
    }
}

/// A judge agent's ranking, read from its answer: one line per member, best first,
/// `/LABEL: reason` (a leading `1.` or `-` is allowed; other lines are ignored). Labels
/// not in `labels` and repeats are dropped. `(label, reason)`, best first.
pub fn parse_ranking(text: &str, labels: &[String]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = vec![];
    for line in text.lines() {
        let l = line
            .trim()
            .trim_start_matches(|c: char| c.is_ascii_digit() || matches!(c, '.' | ')' | '-' | '*'))
            .trim_start();
        let Some(rest) = l.strip_prefix('/') else {
            continue;
        };
        let end = rest
            .find(|c: char| c == ':' || c.is_whitespace())
            .unwrap_or(rest.len());
        let label = &rest[..end];
        if !labels.iter().any(|x| x == label) || out.iter().any(|(x, _)| x == label) {
            continue;
        }
        let reason = rest[end..]
            .trim_start_matches([':', ' ', '\t', '-', '—'])
            .trim()
            .to_string();
        out.push((label.to_string(), reason));
    }
    out
}

/// Rank `results` in place, best first: passing checks first, then the judge's order,
/// then the smaller diff. Members equal on all three share a rank and are `tied`.
pub fn rank(results: &mut [MemberResult]) {
    let key = |r: &MemberResult| {
        (
            !r.check.as_ref().is_some_and(|c| c.passed),
            r.judge_place.unwrap_or(usize::MAX),
            r.diff.map_or(usize::MAX, |d| d.lines()),
        )
    };
    results.sort_by(|a, b| key(a).cmp(&key(b)).then(a.member.cmp(&b.member)));
    let keys: Vec<_> = results.iter().map(key).collect();
    for i in 0..results.len() {
        let first = keys.iter().position(|k| *k == keys[i]).unwrap_or(i);
        results[i].rank = first + 1;
        results[i].tied = keys.iter().filter(|k| **k == keys[i]).count() > 1;
    }
}

/// The notes a judgement carries: no member passing, ties.
pub fn notes(results: &[MemberResult], checked: bool) -> Vec<String> {
    let mut notes = vec![];
    if checked
        && !results
            .iter()
            .any(|r| r.check.as_ref().is_some_and(|c| c.passed))
    {
        notes.push("no member passes the checks; ranked anyway".to_string());
    }
    let mut ranks: Vec<usize> = results.iter().filter(|r| r.tied).map(|r| r.rank).collect();
    ranks.dedup();
    for rk in ranks {
        let tied: Vec<String> = results
            .iter()
            .filter(|r| r.rank == rk)
            .map(|r| format!("/{}", r.member))
            .collect();
        notes.push(format!("{} tie at rank {rk}", tied.join(" and ")));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(m: &[Member]) -> Vec<String> {
        m.iter().map(|m| m.branch.clone()).collect()
    }

    #[test]
    fn members_are_numbered_or_named_after_their_harness() {
        let h = |s: &str| parse_harness(s).unwrap();
        assert_eq!(
            labels(&plan("api/fix", Some(3), &[], "pi")),
            ["api/fix/1", "api/fix/2", "api/fix/3"]
        );
        assert_eq!(
            labels(&plan("b", None, &[h("claude"), h("codex")], "pi")),
            ["b/claude", "b/codex"]
        );
        assert_eq!(
            labels(&plan("b", None, &[h("claude:2"), h("codex")], "pi")),
            ["b/claude", "b/claude-2", "b/codex"]
        );
        assert_eq!(
            labels(&plan("b", None, &[h("claude:2")], "pi")),
            ["b/1", "b/2"]
        );
        assert_eq!(plan("b", Some(2), &[h("codex")], "pi")[1].harness, "codex");
        assert!(parse_harness("x:0").is_err() && parse_harness("x:y").is_err());
    }

    #[test]
    fn a_judges_answer_is_read_line_by_line() {
        let l: Vec<String> = ["1", "2", "claude"].iter().map(|s| s.to_string()).collect();
        let text = "Here is my ranking:\n1. /2: smallest and passes\n- /claude — good\n/9: nope\n/2: again\nnoise /1\n";
        assert_eq!(
            parse_ranking(text, &l),
            [
                ("2".to_string(), "smallest and passes".to_string()),
                ("claude".to_string(), "good".to_string())
            ]
        );
    }

    fn result(m: &str, passed: Option<bool>, place: Option<usize>, lines: usize) -> MemberResult {
        MemberResult {
            member: m.into(),
            check: passed.map(|p| CheckResult {
                passed: p,
                ..Default::default()
            }),
            judge_place: place,
            diff: Some(DiffSize {
                files: 1,
                added: lines,
                removed: 0,
            }),
            ..Default::default()
        }
    }

    #[test]
    fn passing_checks_rank_first_then_the_judge_then_the_smaller_diff() {
        let mut r = vec![
            result("1", Some(false), Some(1), 1),
            result("2", Some(true), Some(2), 50),
            result("3", Some(true), None, 5),
            result("4", Some(true), Some(3), 5),
        ];
        rank(&mut r);
        let order: Vec<&str> = r.iter().map(|r| r.member.as_str()).collect();
        assert_eq!(order, ["2", "4", "3", "1"]);
        assert_eq!(r[0].rank, 1);
        assert!(notes(&r, true).is_empty());
        let mut r = vec![
            result("1", Some(false), None, 3),
            result("2", Some(false), None, 3),
            result("3", None, None, 1),
        ];
        rank(&mut r);
        assert_eq!(r[0].member, "3");
        assert_eq!((r[1].rank, r[2].rank, r[1].tied), (2, 2, true));
        let n = notes(&r, true);
        assert!(n[0].contains("no member passes"), "{n:?}");
        assert!(n[1].contains("/1 and /2 tie at rank 2"), "{n:?}");
    }
}
