//! Pull requests (issue 26 parts 3–5): the REAL `gh` (2.23.0) against the stand-in GitHub
//! API over TLS (tests/common/gh_standin.rs), a real bare origin receiving the pushes, and
//! what orange prints and stores. Assertions are on the requests gh made to the stand-in.

use std::process::Command;

use serde_json::Value;

use crate::common::gh_standin::GhStandin;
use crate::common::*;

/// gh is there (else the test is skipped, or fails in CI).
fn have_gh() -> bool {
    require(
        "gh",
        find_program(&std::env::var("PATH").unwrap_or_default(), "gh").is_some(),
        "the pull-request tests run the real GitHub CLI",
    )
}

/// The real gh in `dir` against the stand-in.
fn gh(sd: &GhStandin, dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let mut c = Command::new("gh");
    c.args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null");
    for (k, v) in sd.env() {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn the_real_gh_talks_to_the_standin_over_tls() {
    if !have_gh() {
        return;
    }
    let env = Env::new();
    let sd = GhStandin::start();
    sd.add_remote(&env.repo);
    git(&env.repo, &["switch", "-qc", "feature"]);
    let out = gh(
        &sd,
        &env.repo,
        &[
            "pr", "create", "--head", "feature", "--title", "T", "--body", "B",
        ],
    );
    assert!(out.status.success(), "gh pr create: {out:?}");
    let url = String::from_utf8_lossy(&out.stdout);
    assert!(url.contains("/acme/widget/pull/1"), "{url}");
    assert_eq!(sd.pr(1).head, "feature");
    let out = gh(
        &sd,
        &env.repo,
        &[
            "pr",
            "list",
            "--json",
            "number,headRefName,state,isDraft,reviewDecision,statusCheckRollup,mergeable",
        ],
    );
    assert!(out.status.success(), "gh pr list: {out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["number"], 1, "{v}");
    assert_eq!(v[0]["headRefName"], "feature", "{v}");
    let calls = sd.calls();
    assert!(
        calls.contains(&"PullRequestCreate".to_string()),
        "{calls:?}"
    );
    assert!(calls.contains(&"PullRequestList".to_string()), "{calls:?}");
    assert_eq!(
        sd.connects.lock().unwrap()[0],
        "github.orange.test:443",
        "gh went through the stand-in as its proxy"
    );
    assert!(sd
        .requests()
        .iter()
        .all(|r| r.authorization.as_deref() == Some("token standin-token")));
}
