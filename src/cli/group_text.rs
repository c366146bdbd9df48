//! What `orange group …` prints (pure: from records to text). Everything an agent or a
//! check wrote (reasons, output) is made safe by `table` and [`first_line`].

use crate::cli::task_text::first_line;
use crate::orchestration::group::members::MemberNow;
use crate::orchestration::group::model::{CheckResult, DiffSize, Group, MemberResult};
use crate::orchestration::group::service::GroupCreated;
use crate::ui::output::table;

/// `task create … --n N`: the group and each member's start.
pub fn created(c: &GroupCreated) -> String {
    let g = &c.group;
    let mut s = format!(
        "created group {} ({}/{}): {} members\n",
        g.id,
        g.project,
        g.base,
        c.members.len()
    );
    let rows: Vec<Vec<String>> = c
        .members
        .iter()
        .map(|m| {
            let what = match (&m.task, m.outcome.as_str()) {
                (Some(t), "spawned") => format!(
                    "spawned in {} → {}",
                    t.workspace.as_deref().unwrap_or("?"),
                    t.tmux_session.as_deref().unwrap_or("?")
                ),
                (_, "queued") => format!(
                    "queued: {}",
                    m.note
                        .as_deref()
                        .map_or("it starts when a workspace is free".into(), |n| first_line(
                            n, 80
                        ))
                ),
                (_, o) => match &m.error {
                    Some(e) => format!("{o}: {}", first_line(e, 80)),
                    None => o.to_string(),
                },
            };
            vec![
                format!("/{}", m.member),
                m.task.as_ref().map_or("-".into(), |t| t.id.clone()),
                m.harness.clone(),
                m.branch.clone(),
                what,
            ]
        })
        .collect();
    s.push_str(&indent(&table(
        &["MEMBER", "TASK", "AGENT", "BRANCH", "STARTED"],
        &rows,
    )));
    s.push_str(&format!(
        "judge them with `orange group judge {}` once they are done\n",
        g.id
    ));
    s
}

fn indent(t: &str) -> String {
    t.lines().map(|l| format!("  {l}\n")).collect()
}

/// One line per group: `group list`.
pub fn list(groups: &[(Group, Vec<MemberNow>)], all: bool) -> String {
    if groups.is_empty() {
        return "no groups\n".to_string();
    }
    let rows: Vec<Vec<String>> = groups
        .iter()
        .map(|(g, ms)| {
            let mut r = vec![
                g.id.clone(),
                g.base.clone(),
                states(ms),
                state_of(g),
                first_line(&g.prompt, 40),
            ];
            if all {
                r.insert(0, g.project.clone());
            }
            r
        })
        .collect();
    let mut header = vec!["ID", "BRANCH", "MEMBERS", "STATE", "PROMPT"];
    if all {
        header.insert(0, "PROJECT");
    }
    table(&header, &rows)
}

/// `task list`'s rows with each group's members under one parent row (the group's id,
/// `group`, its base branch, its member count and prompt), members indented, at the place
/// of its first member. `rows`: each task's row and its group (`None`: no group).
pub fn nest(rows: Vec<(Option<&Group>, Vec<String>)>, all: bool) -> Vec<Vec<String>> {
    let col = usize::from(all);
    let mut out: Vec<Vec<String>> = vec![];
    let mut done: Vec<&str> = vec![];
    for (i, (g, row)) in rows.iter().enumerate() {
        let Some(g) = g else {
            out.push(row.clone());
            continue;
        };
        if done.contains(&g.id.as_str()) {
            continue;
        }
        done.push(&g.id);
        let mut parent = vec![
            g.id.clone(),
            "group".into(),
            "-".into(),
            state_of(g),
            g.base.clone(),
            format!("{} members", g.members.len()),
            first_line(&g.prompt, 48),
        ];
        if all {
            parent.insert(0, g.project.clone());
        }
        out.push(parent);
        for (g2, r) in &rows[i..] {
            if g2.is_some_and(|g2| g2.id == g.id) {
                let mut r = r.clone();
                r[col] = format!("└ {}", r[col]);
                out.push(r);
            }
        }
        // Its judge agent at work, under the members.
        if let Some(run) = g.judging() {
            let width = out.last().map_or(7, Vec::len);
            let mut r = vec!["-".to_string(); width];
            r[col] = "└ judge".into();
            r[col + 1] = "judging".into();
            r[col + 2] = run.session.clone();
            if let (Some(cell), Some(agent)) = (r.get_mut(col + 5), judge_agent(g)) {
                *cell = agent;
            }
            if let Some(cell) = r.last_mut() {
                *cell = format!("ranks the {} members", g.members.len());
            }
            if all {
                r[0] = g.project.clone();
            }
            out.push(r);
        }
    }
    out
}

/// The harness of a group's judge agent, when it has one.
fn judge_agent(g: &Group) -> Option<String> {
    g.judgement.as_ref().and_then(|j| j.agent.clone())
}

/// `3 members: 2 reviewing, 1 working`.
fn states(ms: &[MemberNow]) -> String {
    let mut counts: Vec<(String, usize)> = vec![];
    for m in ms {
        match counts.iter_mut().find(|(s, _)| *s == m.state) {
            Some((_, n)) => *n += 1,
            None => counts.push((m.state.clone(), 1)),
        }
    }
    format!(
        "{}: {}",
        ms.len(),
        counts
            .iter()
            .map(|(s, n)| format!("{n} {s}"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// open, judged, picked /2, cancelled.
fn state_of(g: &Group) -> String {
    match (&g.picked, g.cancelled, &g.judgement) {
        (Some(p), _, _) => format!("picked /{p}"),
        (None, true, _) => "cancelled".into(),
        (None, false, Some(j)) if j.agent_run.is_some() => "judging".into(),
        (None, false, Some(j)) => match j.results.first() {
            Some(w) => format!("judged: /{} leads", w.member),
            None => "judged".into(),
        },
        _ => "open".into(),
    }
}

/// `group show`: the group, then one row per member (judged members in their rank order,
/// the others after), then the judgement's notes.
pub fn show(g: &Group, ms: &[MemberNow]) -> String {
    let mut s = format!(
        "group {} ({}/{}) · {} · {}\nprompt: {}\n",
        g.id,
        g.project,
        g.base,
        state_of(g),
        states(ms),
        first_line(&g.prompt, 100)
    );
    let results: &[MemberResult] = g.judgement.as_ref().map_or(&[], |j| &j.results);
    let mut order: Vec<&MemberNow> = vec![];
    for r in results {
        order.extend(ms.iter().filter(|m| m.member.label == r.member));
    }
    order.extend(
        ms.iter()
            .filter(|m| !results.iter().any(|r| r.member == m.member.label)),
    );
    let rows: Vec<Vec<String>> = order
        .iter()
        .map(|m| {
            let r = results.iter().find(|r| r.member == m.member.label);
            vec![
                format!("/{}", m.member.label),
                m.member.task.clone().unwrap_or("-".into()),
                m.member.harness.clone(),
                m.state.clone(),
                r.and_then(|r| r.check.as_ref())
                    .map_or("-".into(), check_cell),
                r.and_then(|r| r.diff).map_or("-".into(), diff_cell),
                r.and_then(|r| r.judge_reason.as_deref())
                    .map_or("-".into(), |t| first_line(t, 48)),
                r.map_or("-".into(), |r| match r.tied {
                    true => format!("{} (tie)", r.rank),
                    false => r.rank.to_string(),
                }),
            ]
        })
        .collect();
    s.push_str(&table(
        &[
            "MEMBER", "TASK", "AGENT", "STATE", "CHECKS", "DIFF", "JUDGE", "RANK",
        ],
        &rows,
    ));
    if let Some(j) = &g.judgement {
        if j.check_cmd.is_none() {
            s.push_str("no check command (`orange project update --check-cmd CMD`)\n");
        }
        if let Some(e) = &j.agent_error {
            s.push_str(&format!("judge agent: {}\n", first_line(e, 120)));
        }
        if let Some(run) = &j.agent_run {
            s.push_str(&format!(
                "judge agent ({}): at work in session {} since {} (its order is not in the ranking yet)\n",
                j.agent.as_deref().unwrap_or("?"),
                run.session,
                run.started_at
            ));
        }
        for n in &j.notes {
            s.push_str(&format!("{n}\n"));
        }
        if let (Some(w), None, false) = (j.results.first(), &g.picked, g.cancelled) {
            s.push_str(&format!(
                "pick the winner with `orange group pick {} {}`\n",
                g.id, w.member
            ));
        }
    } else if !g.cancelled {
        s.push_str(&format!("not judged yet: `orange group judge {}`\n", g.id));
    }
    s
}

/// `✓ 1.2s`, `✗ exit 3`, `✗ timed out`.
pub fn check_cell(c: &CheckResult) -> String {
    let secs = format!("{:.1}s", c.duration_ms as f64 / 1000.0);
    match (c.passed, c.timed_out, c.exit_code) {
        (true, _, _) => format!("✓ {secs}"),
        (false, true, _) => format!("✗ timed out {secs}"),
        (false, false, Some(code)) => format!("✗ exit {code}"),
        (false, false, None) => "✗ killed".into(),
    }
}

/// `2 files +10 −3`.
pub fn diff_cell(d: DiffSize) -> String {
    format!(
        "{} file{} +{} −{}",
        d.files,
        if d.files == 1 { "" } else { "s" },
        d.added,
        d.removed
    )
}

/// The one line that tells a judgement: `group api/fix judged: /2 wins (checks ✓; judge: "…")`.
pub fn verdict(g: &Group) -> Option<String> {
    let j = g.judgement.as_ref()?;
    let w = j.results.first()?;
    let mut why = vec![];
    if let Some(c) = &w.check {
        why.push(format!("checks {}", if c.passed { "✓" } else { "✗" }));
    }
    if let Some(r) = &w.judge_reason {
        why.push(format!(
            "judge: \"{}\"",
            crate::text::safe_line(&first_line(r, 60))
        ));
    }
    if let Some(d) = w.diff {
        why.push(format!("diff {}", diff_cell(d)));
    }
    let tie = if w.tied { ", tied" } else { "" };
    Some(format!(
        "group {} judged: /{} wins{tie} ({})",
        g.base,
        w.member,
        why.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::orchestration::group::model::{Judgement, Member};

    fn group() -> (Group, Vec<MemberNow>) {
        let member = |l: &str, h: &str| Member {
            label: l.into(),
            branch: format!("api/fix/{l}"),
            harness: h.into(),
            task: Some(format!("t{l}")),
        };
        let g = Group {
            id: "g1abcd".into(),
            project: "app".into(),
            base: "api/fix".into(),
            prompt: "fix the api\nsecond line".into(),
            members: vec![
                member("1", "claude"),
                member("2", "codex"),
                member("3", "pi"),
            ],
            judgement: Some(Judgement {
                check_cmd: Some("make test".into()),
                results: vec![
                    MemberResult {
                        member: "2".into(),
                        status: "reviewing".into(),
                        check: Some(CheckResult {
                            passed: true,
                            exit_code: Some(0),
                            duration_ms: 1234,
                            ..Default::default()
                        }),
                        diff: Some(DiffSize {
                            files: 1,
                            added: 4,
                            removed: 1,
                        }),
                        judge_place: Some(1),
                        judge_reason: Some("smallest \x1b[31mand\x1b[0m passes".into()),
                        rank: 1,
                        ..Default::default()
                    },
                    MemberResult {
                        member: "1".into(),
                        status: "reviewing".into(),
                        check: Some(CheckResult {
                            exit_code: Some(2),
                            ..Default::default()
                        }),
                        diff: Some(DiffSize {
                            files: 3,
                            added: 40,
                            removed: 0,
                        }),
                        rank: 2,
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }),
            ..Default::default()
        };
        let ms = g
            .members
            .iter()
            .map(|m| MemberNow {
                member: m.clone(),
                state: if m.label == "3" { "gone" } else { "reviewing" }.into(),
                task: None,
                error: None,
            })
            .collect();
        (g, ms)
    }

    #[test]
    fn group_show_is_a_ranked_table_with_what_is_not_judged_last() {
        let (g, ms) = group();
        insta::assert_snapshot!(show(&g, &ms));
    }

    #[test]
    fn a_cancelled_group_shows_no_pick_to_make_and_an_unreadable_member_says_so() {
        let (mut g, mut ms) = group();
        assert!(show(&g, &ms).contains("pick the winner with"));
        g.cancelled = true;
        ms[0].state = "unreadable".into();
        let text = show(&g, &ms);
        assert!(!text.contains("pick the winner"), "{text}");
        assert!(text.contains("unreadable"), "{text}");
        g.judgement = None;
        assert!(!show(&g, &ms).contains("not judged yet"));
    }

    #[test]
    fn task_list_nests_a_groups_members_under_one_parent_row() {
        let (g, _) = group();
        let row = |id: &str, branch: &str| {
            ["reviewing", "● alive", "-", branch, "claude", "fix the api"]
                .iter()
                .fold(vec![id.to_string()], |mut r, c| {
                    r.push(c.to_string());
                    r
                })
        };
        let rows = vec![
            (None, row("aaa111", "other")),
            (Some(&g), row("t1", "api/fix/1")),
            (None, row("bbb222", "later")),
            (Some(&g), row("t2", "api/fix/2")),
        ];
        let header = [
            "ID", "STATUS", "SESSION", "AGENT", "BRANCH", "HARNESS", "SUMMARY",
        ];
        insta::assert_snapshot!(table(&header, &nest(rows, false)));
    }

    #[test]
    fn group_list_and_the_verdict_line() {
        let (g, ms) = group();
        insta::assert_snapshot!(list(&[(g.clone(), ms)], false));
        assert_eq!(
            verdict(&g).unwrap(),
            "group api/fix judged: /2 wins (checks ✓; judge: \"smallest ␛[31mand␛[0m passes\"; diff 1 file +4 −1)"
        );
    }
}
