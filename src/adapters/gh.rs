//! The GitHub CLI adapter: every `gh` orange runs is here (pull requests: find, create,
//! list, merge, review comments). gh finds the repository from the directory's git
//! remotes and its host and token from its own config or `GH_HOST` / `GH_TOKEN` /
//! `GH_ENTERPRISE_TOKEN`; orange passes every value as an argument (a title with quotes,
//! `$(…)` or newlines never meets a shell) and never lets gh prompt.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde::{Deserialize, Serialize};

use crate::adapters::shell;
use crate::error::{OrangeError, Result};

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Pr {
    /// No pull request for the branch.
    None,
    Found {
        number: u64,
        pr_state: String,
        url: String,
    },
    /// `gh` is missing or could not answer (the reason).
    Unknown { reason: String },
}

impl Pr {
    pub fn is_merged(&self) -> bool {
        matches!(self, Pr::Found { pr_state, .. } if pr_state == "MERGED")
    }
}

/// The checks of a pull request's last commit, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checks {
    pub total: u32,
    pub passed: u32,
    pub failed: u32,
    pub pending: u32,
}

/// A pull request as orange keeps it with its task (task.json's `pr`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PrStatus {
    pub number: u64,
    pub url: String,
    /// OPEN, CLOSED or MERGED (the name `pr_state`: what task.json always called it).
    #[serde(rename = "pr_state")]
    pub state: String,
    #[serde(default)]
    pub branch: String,
    #[serde(default)]
    pub draft: bool,
    /// APPROVED, CHANGES_REQUESTED, REVIEW_REQUIRED or empty.
    #[serde(default)]
    pub review: String,
    #[serde(default)]
    pub checks: Checks,
    /// MERGEABLE, CONFLICTING or UNKNOWN.
    #[serde(default)]
    pub mergeable: String,
}

impl PrStatus {
    /// The PR kept in a task's record (task.json's `pr`), when it names one.
    pub fn of_record(v: Option<&serde_json::Value>) -> Option<PrStatus> {
        serde_json::from_value::<PrStatus>(v?.clone())
            .ok()
            .filter(|p| p.number > 0)
    }
}

/// The fields of `gh pr list|view --json` orange reads.
pub const PR_FIELDS: &str =
    "number,url,headRefName,state,isDraft,reviewDecision,statusCheckRollup,mergeable";

/// One pull request as gh prints it with [`PR_FIELDS`].
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GhPr {
    number: u64,
    #[serde(default)]
    url: String,
    #[serde(default)]
    head_ref_name: String,
    #[serde(default)]
    state: String,
    #[serde(default)]
    is_draft: bool,
    #[serde(default)]
    review_decision: Option<String>,
    #[serde(default)]
    status_check_rollup: Option<Vec<GhCheck>>,
    #[serde(default)]
    mergeable: Option<String>,
}

/// A check run (`name`, `status`, `conclusion`) or a commit status (`context`, `state`).
#[derive(Debug, Deserialize)]
struct GhCheck {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    conclusion: Option<String>,
    #[serde(default)]
    state: Option<String>,
}

impl GhPr {
    fn status(self) -> PrStatus {
        let mut checks = Checks::default();
        for c in self.status_check_rollup.unwrap_or_default() {
            checks.total += 1;
            let outcome = match (&c.status, &c.conclusion, &c.state) {
                (Some(s), _, _) if s != "COMPLETED" => "pending",
                (_, Some(c), _) if !c.is_empty() => c.as_str(),
                (_, _, Some(s)) => s.as_str(),
                _ => "pending",
            };
            match outcome {
                "SUCCESS" | "NEUTRAL" | "SKIPPED" => checks.passed += 1,
                "PENDING" | "EXPECTED" | "pending" => checks.pending += 1,
                _ => checks.failed += 1,
            }
        }
        PrStatus {
            number: self.number,
            url: self.url,
            state: self.state,
            branch: self.head_ref_name,
            draft: self.is_draft,
            review: self.review_decision.unwrap_or_default(),
            checks,
            mergeable: self.mergeable.unwrap_or_default(),
        }
    }
}

/// Run `gh ARGS` in `repo`, never prompting: its output, or why it could not run (not
/// installed; not logged in: gh exits 4 and tells to `gh auth login`).
fn run(repo: &Path, args: &[&str]) -> Result<Output> {
    if !shell::on_path("gh") {
        return Err(OrangeError::GhNotInstalled);
    }
    let out = Command::new("gh")
        .args(args)
        .current_dir(repo)
        .stdin(Stdio::null())
        .env("GH_PROMPT_DISABLED", "1")
        .env("GH_NO_UPDATE_NOTIFIER", "1")
        .env("NO_COLOR", "1")
        .env("GH_PAGER", "cat")
        .output()
        .map_err(|e| OrangeError::io("running gh", e))?;
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(4) || err.contains("gh auth login") {
        return Err(OrangeError::GhNotLoggedIn(String::new()));
    }
    Ok(out)
}

/// Run gh and require success; the error carries gh's own message.
fn run_ok(repo: &Path, args: &[&str]) -> Result<String> {
    let out = run(repo, args)?;
    if !out.status.success() {
        return Err(OrangeError::BackendCommandFailed(format!(
            "gh {} failed: {}",
            args.first().copied().unwrap_or(""),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The pull request whose head is `branch`, as `gh pr view` reports it.
pub fn pr_for_branch(repo: &Path, branch: &str) -> Pr {
    match pr_view(repo, branch) {
        Ok(Some(p)) => Pr::Found {
            number: p.number,
            pr_state: p.state,
            url: p.url,
        },
        Ok(None) => Pr::None,
        Err(OrangeError::GhNotInstalled) => Pr::Unknown {
            reason: "gh is not installed: PR status unknown".into(),
        },
        Err(e) => Pr::Unknown {
            reason: e.to_string(),
        },
    }
}

/// `gh pr view SELECTOR` (a branch or a number): the pull request, or None when there is
/// none for that branch.
pub fn pr_view(repo: &Path, selector: &str) -> Result<Option<PrStatus>> {
    let out = run(repo, &["pr", "view", selector, "--json", PR_FIELDS])?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("no pull requests found") {
            return Ok(None);
        }
        return Err(OrangeError::BackendCommandFailed(format!(
            "gh pr view failed: {}",
            err.trim()
        )));
    }
    let p: GhPr = serde_json::from_slice(&out.stdout).map_err(|e| {
        OrangeError::BackendCommandFailed(format!("gh pr view printed no PR JSON: {e}"))
    })?;
    Ok(Some(p.status()))
}

/// What a new pull request is opened with.
#[derive(Debug, Clone, Default)]
pub struct NewPr<'a> {
    pub head: &'a str,
    pub base: &'a str,
    pub title: &'a str,
    pub body: &'a str,
    pub draft: bool,
}

/// `gh pr create --head BRANCH` (the branch already pushed: gh pushes nothing): its
/// number and URL.
pub fn pr_create(repo: &Path, pr: &NewPr) -> Result<(u64, String)> {
    let mut args = vec![
        "pr", "create", "--head", pr.head, "--base", pr.base, "--title", pr.title, "--body",
        pr.body,
    ];
    if pr.draft {
        args.push("--draft");
    }
    let out = run_ok(repo, &args)?;
    let url = out
        .lines()
        .rev()
        .find(|l| l.starts_with("https://") || l.starts_with("http://"))
        .unwrap_or("")
        .trim()
        .to_string();
    let number = url
        .rsplit('/')
        .next()
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| {
            OrangeError::BackendCommandFailed(format!(
                "gh pr create printed no pull request URL: {}",
                out.trim()
            ))
        })?;
    Ok((number, url))
}

/// The repository's pull requests, newest first (`gh pr list --state all`): ONE call
/// for every task of a project.
pub fn pr_list(repo: &Path, limit: u32) -> Result<Vec<PrStatus>> {
    let limit = limit.to_string();
    let out = run_ok(
        repo,
        &[
            "pr", "list", "--state", "all", "--limit", &limit, "--json", PR_FIELDS,
        ],
    )?;
    let prs: Vec<GhPr> = serde_json::from_str(&out).map_err(|e| {
        OrangeError::BackendCommandFailed(format!("gh pr list printed no PR JSON: {e}"))
    })?;
    Ok(prs.into_iter().map(GhPr::status).collect())
}

/// How `gh pr merge` merges (`[pr] merge` in config.toml).
pub fn merge_flag(method: &str) -> Result<&'static str> {
    match method {
        "merge" => Ok("--merge"),
        "squash" => Ok("--squash"),
        "rebase" => Ok("--rebase"),
        other => Err(OrangeError::invalid(format!(
            "unknown PR merge method {other:?}; one of: merge, squash, rebase"
        ))),
    }
}

/// `gh pr merge NUMBER --merge|--squash|--rebase`.
pub fn pr_merge(repo: &Path, number: u64, method: &str) -> Result<()> {
    let flag = merge_flag(method)?;
    run_ok(repo, &["pr", "merge", &number.to_string(), flag]).map(|_| ())
}

/// A review comment on a line of a pull request's diff.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ReviewComment {
    pub path: String,
    /// The line in the file (None: on a line no longer in the diff).
    #[serde(default)]
    pub line: Option<u64>,
    #[serde(default)]
    pub original_line: Option<u64>,
    /// RIGHT (the new side) or LEFT.
    #[serde(default)]
    pub side: Option<String>,
    pub body: String,
    #[serde(default)]
    pub user: Option<User>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct User {
    pub login: String,
}

/// The review comments of pull request `number` (`gh api
/// repos/{owner}/{repo}/pulls/N/comments`, gh filling in the repository).
pub fn review_comments(repo: &Path, number: u64) -> Result<Vec<ReviewComment>> {
    let path = format!("repos/{{owner}}/{{repo}}/pulls/{number}/comments");
    let out = run_ok(repo, &["api", &path])?;
    serde_json::from_str(&out).map_err(|e| {
        OrangeError::BackendCommandFailed(format!("gh api printed no review comments: {e}"))
    })
}
