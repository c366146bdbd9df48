//! `orange doctor`: what would stop an agent before a task is created — the program and
//! its version here, then what its harness knows to check (Claude Code's: root without
//! `IS_SANDBOX`, its first-run setup, the API key confirmation, the folder-trust dialog,
//! and, only when asked, recording the repository's trust: see
//! `execution::harness::claude::doctor`).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::adapters::shell;
use crate::error::Result;
use crate::execution::harness::kind::{check, DoctorAsk};
use crate::execution::harness::Harness;
use crate::orchestration::agent;
use crate::orchestration::monitor::presence::Watch;
use crate::orchestration::task::store::TaskStore;

pub use crate::execution::harness::kind::Check;

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub harness: String,
    pub ok: bool,
    pub checks: Vec<Check>,
    /// `--trust` recorded the repository's trust now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust_recorded: Option<PathBuf>,
}

/// Check `harness` for a task in `repo` (the project's main repository, when known);
/// `trust`: record the repository's trust first.
pub fn run(harness: &Harness, repo: Option<&Path>, trust: bool) -> Result<Report> {
    let mut report = Report {
        harness: harness.name.clone(),
        ok: true,
        checks: vec![],
        trust_recorded: None,
    };
    let Some(program) = harness.program() else {
        report.checks.push(check(
            "program",
            true,
            format!(
                "user harness {:?}: its command is checked by the shell that runs it",
                harness.name
            ),
            None,
        ));
        return Ok(report);
    };
    let installed = shell::on_path(program);
    report.checks.push(check(
        "program",
        installed,
        if installed {
            format!("{program} is on PATH")
        } else {
            format!("{program} is not on PATH")
        },
        Some(format!(
            "install it (e.g. `npm install -g {}`) or pass --harness",
            harness.kind().package()
        )),
    ));
    if installed {
        let v = shell::version_of(program);
        report.checks.push(check(
            "version",
            v.is_some(),
            v.clone()
                .unwrap_or_else(|| format!("`{program} --version` printed nothing")),
            Some(format!(
                "run `{program} --version` to see why it does not start"
            )),
        ));
    }
    let own = harness.kind().doctor(&DoctorAsk {
        bypass: harness.bypasses_permissions(),
        repo,
        trust,
    })?;
    report.checks.extend(own.checks);
    report.trust_recorded = own.trust_recorded;
    report.ok = report.checks.iter().all(|c| c.ok);
    Ok(report)
}

/// Whether a monitor watches this tmux server (agent states, policies, notifications):
/// a check failed only when none does and none is turned off on purpose.
pub fn add_monitor_check(report: &mut Report, watch: &Watch) {
    let (ok, detail) = match watch {
        Watch::NoServer => (
            true,
            "no tmux server runs; the first task started here starts a monitor".to_string(),
        ),
        Watch::Watched => (true, "a monitor watches this tmux server".to_string()),
        Watch::Unwatched { off: true } => (
            true,
            "none watches this tmux server: its @orange-monitor is off".to_string(),
        ),
        Watch::Unwatched { off: false } => (
            false,
            "no monitor watches this tmux server: agent states are not updated, no policy acts"
                .to_string(),
        ),
    };
    add(
        report,
        check(
            "monitor",
            ok,
            detail,
            Some("run `orange monitor &` (starting a task here starts one too)".into()),
        ),
    );
}

/// Which mechanism enforces resource limits (`memory`, `cpu`, `pids`) here, and why the
/// better ones were passed over; the limits its cgroup would refuse whatever their size (a
/// controller it lacks). Failed only when none can: limits are then refused.
pub fn add_resources_check(report: &mut Report) {
    use crate::execution::resources::{mechanism, refused_here, Mechanism};
    let (m, why) = mechanism();
    let ok = *m != Mechanism::Unavailable;
    let mut detail = format!("{}: {why}", m.name());
    for r in refused_here() {
        detail.push_str(&format!("; {r}"));
    }
    add(
        report,
        check(
            "resources",
            ok,
            detail,
            (!ok).then(|| {
                "install util-linux's prlimit, or run orange under a user systemd (loginctl enable-linger)".into()
            }),
        ),
    );
}

/// One more check in the report, counted in its verdict.
fn add(report: &mut Report, c: Check) {
    report.ok &= c.ok;
    report.checks.push(c);
}

/// The notification channels of config.toml's `[notify]` (none configured: no check):
/// curl to send with, and what failed so far (`run/notify-failures.json`), never silent.
pub fn add_notify_check(
    report: &mut Report,
    home: &crate::adapters::store::Home,
    notify: &crate::execution::fleet::NotifyConfig,
) {
    if !notify.any() {
        return;
    }
    let curl = shell::on_path("curl");
    let f = crate::orchestration::monitor::phone::failures(home);
    let mut detail = format!(
        "{} notification(s) failed, {} answer(s) refused",
        f.failed, f.refused
    );
    if let Some(last) = &f.last {
        detail.push_str(&format!(
            "; last: {} at {}",
            crate::text::safe_line(last["error"].as_str().unwrap_or("?")),
            last["at"].as_str().unwrap_or("?")
        ));
    }
    if !curl {
        detail = format!("curl is not on PATH: nothing can be sent; {detail}");
    }
    let fix = "install curl; see orange.log (`notify:` lines) for each failure, and check [notify] in config.toml";
    add(
        report,
        check("notify", curl && f.failed == 0, detail, Some(fix.into())),
    );
}

/// Whether the running agents of this harness are heard on their own event channel (pi's
/// extension, codex's hooks, opencode's plugin): one that said "working" and then nothing
/// while its screen went quiet is named — orange reads its screen instead, and says so.
pub fn add_channel_check(report: &mut Report, harness: &Harness, store: &TaskStore) {
    let Some((channel, _)) = harness.kind().channel() else {
        return;
    };
    let (tasks, _) = store.list_open_lenient();
    let ours: Vec<_> = tasks.iter().filter(|t| t.harness == harness.name).collect();
    let silent: Vec<String> = ours
        .iter()
        .filter_map(|t| {
            let info = agent::load(&store.dir(&t.project, &t.id)).current();
            info.channel_silent.map(|_| t.id.clone())
        })
        .collect();
    let ok = silent.is_empty();
    let detail = if ok {
        format!("{channel}: {} running agent(s), none silent", ours.len())
    } else {
        format!(
            "{channel} is silent for {}: orange reads the screen instead",
            silent.join(", ")
        )
    };
    report.checks.push(check(
        "channel",
        ok,
        detail,
        Some(format!(
            "`orange task explain {}` says since when; `orange task respawn ID` starts the agent with its channel again",
            silent.first().map(String::as_str).unwrap_or("ID")
        )),
    ));
    report.ok &= ok;
}

/// The report as text: one line per check, with what to do under a failed one.
pub fn render(r: &Report) -> String {
    let mut s = format!("orange doctor: harness {}\n", r.harness);
    for c in &r.checks {
        s.push_str(&format!(
            "  {} {:<10} {}\n",
            if c.ok { "ok " } else { "FIX" },
            c.name,
            c.detail
        ));
        if let Some(f) = &c.fix {
            s.push_str(&format!("      → {f}\n"));
        }
    }
    if let Some(p) = &r.trust_recorded {
        s.push_str(&format!(
            "recorded the repository's trust in {}\n",
            p.display()
        ));
    }
    s.push_str(if r.ok {
        "ready\n"
    } else {
        "not ready: fix the lines marked FIX\n"
    });
    s
}
