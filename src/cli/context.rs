//! What every command shares: [`Ctx`] (where state lives, the project override, the cwd),
//! [`audited`] for what changes state, [`confirm`] for what asks first, and the effects
//! around a command, [`before`] and [`after`], as the table ([`Does`]) and the command's
//! typed outcome ([`Done`]) say.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use super::args::{Does, Widgets};
use crate::adapters::store::{self, Home};
use crate::adapters::tmux::Tmux;
use crate::error::{OrangeError, Result};
use crate::orchestration::project::{self, Project};
use crate::ui::output::Out;

/// How a command line runs in this process (`args[0]` is the program; `serving`: a request
/// of `orange serve`), returning its exit status: what `orange serve` runs each request
/// with.
pub type RunLine = fn(Vec<OsString>, bool) -> i32;

/// What every command gets: where state lives, the project override, the cwd.
pub struct Ctx {
    pub home: Home,
    pub project: Option<String>,
    pub cwd: PathBuf,
    /// `--json`: a forwarded command asks the host for JSON too.
    pub json: bool,
    /// The command line after the program name (what a remote host is sent).
    pub args: Vec<String>,
    /// How a command line runs here (`entry::run`), for `orange serve`.
    pub run_line: RunLine,
}

impl Ctx {
    pub fn new(project: Option<String>, run_line: RunLine) -> Result<Ctx> {
        Ok(Ctx {
            home: Home::from_env()?,
            project,
            cwd: std::env::current_dir()
                .map_err(|e| OrangeError::io("reading the current directory", e))?,
            json: false,
            args: std::env::args().skip(1).collect(),
            run_line,
        })
    }

    /// The project named by --project, else the one containing the current directory.
    pub fn project(&self) -> Result<Project> {
        project::resolve(&self.home, self.project.as_deref(), &self.cwd)
    }
}

/// What a command did, typed, for the effects that follow it ([`after`]).
pub struct Done {
    pub out: Out,
    /// The tmux session (id) of the task it acted on: opened with the sidebar when the
    /// verb starts agents ([`Does::starts`]).
    pub session: Option<String>,
    /// The tmux session (id) of the queued task it started by freeing a workspace.
    pub next_session: Option<String>,
}

impl From<Out> for Done {
    fn from(out: Out) -> Done {
        Done {
            out,
            session: None,
            next_session: None,
        }
    }
}

/// Before a command runs here: its progress on stderr or not, and the repairs it needs.
pub fn before(ctx: &Ctx, does: &Does) {
    crate::ui::progress::install(ctx.json || !does.progress);
    if does.repairs {
        // It sees repaired state (a crashed command's leftovers).
        reconcile(ctx);
    }
}

/// After a command ran here: the status widgets follow, an agent session it started
/// opens with the sidebar (`@orange-sidebar-auto on`), and a command that may have started
/// an agent starts a monitor on its tmux server when none watches it. Best effort: none
/// fails the command.
pub fn after(ctx: &Ctx, does: &Does, done: Result<Done>) -> Result<Out> {
    let widgets = match does.widgets {
        Widgets::Never => false,
        Widgets::OnSuccess => done.is_ok(),
        Widgets::Always => true,
    };
    let tmux = Tmux::from_env();
    if widgets {
        crate::ui::status::changed(&ctx.home, &tmux);
    }
    if let Ok(done) = &done {
        let own = done.session.as_ref().filter(|_| does.starts);
        for s in own.into_iter().chain(&done.next_session) {
            let _ = crate::ui::plugin::auto_sidebar(&ctx.home, &tmux, s);
        }
        // Every agent is watched, with or without the plugin.
        if does.starts || done.next_session.is_some() {
            let _ = crate::orchestration::monitor::presence::ensure(&ctx.home, &tmux);
        }
    }
    done.map(|d| d.out)
}

/// Repair what crashed commands left behind, before a command that changes state (see
/// `reconcile`). Never fails the command: a repair that cannot be made now is logged and
/// tried again by the next command or monitor pass. Each repair is said on stderr.
pub fn reconcile(ctx: &Ctx) {
    // Off only for measurements and debugging (`scripts/bench-reconcile.sh`).
    if std::env::var_os("ORANGE_RECONCILE").is_some_and(|v| v == "0") {
        return;
    }
    match crate::orchestration::reconcile::reconcile(&ctx.home, &Tmux::from_env(), false) {
        Ok(repairs) => {
            for r in &repairs {
                // A repair names sessions and workspaces as it found them.
                eprintln!(
                    "orange: repaired: {}",
                    crate::text::safe_line(&r.to_string())
                );
            }
            // A freed workspace starts what waits in its project's queue.
            let mut tasks = crate::orchestration::task::service::TaskService::new(&ctx.home);
            for next in tasks.after_repairs(&repairs) {
                if let Some(id) = next.spawned {
                    eprintln!("orange: started queued task {id}");
                }
            }
        }
        Err(e) => store::log(
            &ctx.home,
            "warn",
            "reconcile failed",
            serde_json::json!({"error": e.to_string(), "code": e.code()}),
        ),
    }
}

/// Run a mutating operation and write its audit line, success or failure.
pub fn audited<T: serde::Serialize>(
    ctx: &Ctx,
    op: &str,
    inputs: serde_json::Value,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let result = f();
    let summary = match &result {
        Ok(v) => Ok(serde_json::to_value(v).unwrap_or(serde_json::Value::Null)),
        Err(e) => Err(e.code().to_string()),
    };
    store::audit(&ctx.home, op, inputs, &summary);
    result
}

/// Write `prompt` to the terminal and read one line of answer. The prompt goes out in one
/// write: inside a tmux popup, a prompt written in pieces can be drawn apart (a status-line
/// redraw between the pieces moves the cursor away and back), and then the whole question
/// is never on the screen as one run of text.
pub fn ask(prompt: &str) -> Result<String> {
    {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(prompt.as_bytes());
        let _ = err.flush();
    }
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .map_err(|e| OrangeError::io("reading the answer", e))?;
    Ok(answer)
}

/// Go on once the person said yes to `question` (or passed --yes); without a terminal to
/// ask on, refused.
pub fn confirm(question: &str, yes: bool) -> Result<()> {
    if yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        return Err(OrangeError::invalid(format!(
            "{question} — pass --yes to confirm (no terminal to ask on)"
        )));
    }
    let answer = ask(&format!("{question} [y/N] "))?;
    if matches!(answer.trim(), "y" | "Y" | "yes") {
        Ok(())
    } else {
        Err(OrangeError::invalid("not confirmed; nothing changed"))
    }
}
