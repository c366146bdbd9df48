//! Options (`set-option`, `show-options`) in one [`OptionScope`], several set in one call
//! ([`Tmux::set_options`]), and the server's global environment.

use tmux_interface as ti;

use super::handle::Tmux;
use super::target::{pane_target, validate_word};
use crate::error::Result;

/// Where an option lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionScope<'a> {
    /// Global session options (`-g`): what `#{@name}` falls back to everywhere.
    Global,
    /// One session's options.
    Session(&'a str),
    /// The window options of the target's window.
    Window(&'a str),
    /// The pane options of the target pane.
    Pane(&'a str),
}

/// `set-option` and `show-options` builders aimed at `scope`.
fn option_cmds(scope: OptionScope<'_>) -> (ti::SetOption<'static>, ti::ShowOptions<'static>) {
    let (mut s, mut g) = (ti::SetOption::new(), ti::ShowOptions::new());
    match scope {
        OptionScope::Global => {
            s = s.global();
            g = g.global();
        }
        OptionScope::Session(t) => {
            s = s.target_pane(pane_target(t));
            g = g.target_pane(pane_target(t));
        }
        OptionScope::Window(t) => {
            s = s.window().target_pane(pane_target(t));
            g = g.window().target_pane(pane_target(t));
        }
        OptionScope::Pane(t) => {
            s = s.pane().target_pane(pane_target(t));
            g = g.pane().target_pane(pane_target(t));
        }
    }
    (s, g)
}

// Options and the global environment.
impl Tmux {
    /// `set-option` in `scope`. The value reaches tmux verbatim (a trailing `;` included).
    pub fn set_option(&self, scope: OptionScope<'_>, name: &str, value: &str) -> Result<()> {
        validate_word("option name", name)?;
        let (s, _) = option_cmds(scope);
        self.run(vec![s
            .option(name.to_string())
            .value(value.to_string())
            .build()])?;
        Ok(())
    }

    /// The option's own value in `scope` (no inheritance from global); `None` when unset or
    /// when no server runs. A missing session is an error.
    pub fn get_option(&self, scope: OptionScope<'_>, name: &str) -> Result<Option<String>> {
        let (_, g) = option_cmds(scope);
        let mut cmds = Vec::new();
        // `show-options -q` also hides a missing target: check it in the same sequence.
        if let OptionScope::Session(t) | OptionScope::Window(t) | OptionScope::Pane(t) = scope {
            cmds.push(ti::HasSession::new().target_session(pane_target(t)).build());
        }
        cmds.push(g.quiet().value().option(name.to_string()).build());
        let ran = self.exec(cmds)?;
        if ran.no_server() {
            return Ok(None);
        }
        let out = ran.ok()?;
        // `-qv` prints nothing for an unset option and "value\n" for a set one, even empty.
        if out.is_empty() {
            return Ok(None);
        }
        Ok(Some(out.strip_suffix('\n').unwrap_or(&out).to_string()))
    }

    /// Set (`Some(value)`) or unset (`None`) several options in ONE tmux call. tmux stops a
    /// command sequence at the first failure (a session closed meanwhile), so after a
    /// failure the changes are applied one by one, a missing session skipped. Nothing to do
    /// when no server runs.
    pub fn set_options(&self, changes: &[(OptionScope<'_>, &str, Option<&str>)]) -> Result<()> {
        for (_, name, _) in changes {
            validate_word("option name", name)?;
        }
        let build = |(scope, name, value): &(OptionScope<'_>, &str, Option<&str>)| {
            let (s, _) = option_cmds(*scope);
            match value {
                Some(v) => s.option(name.to_string()).value(v.to_string()).build(),
                None => s.unset().option(name.to_string()).build(),
            }
        };
        if changes.is_empty() {
            return Ok(());
        }
        let ran = self.exec(changes.iter().map(build).collect())?;
        if ran.success || ran.no_server() {
            return Ok(());
        }
        let mut first_error = None;
        for change in changes {
            let ran = self.exec(vec![build(change)])?;
            if !ran.success && !ran.missing() && first_error.is_none() {
                first_error = Some(ran.error());
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Set a variable in the server's global environment (seen by sessions, hooks and
    /// `run-shell` jobs started later).
    pub fn set_global_environment(&self, key: &str, value: &str) -> Result<()> {
        validate_word("environment variable name", key)?;
        self.run(vec![ti::SetEnvironment::new()
            .global()
            .name(key.to_string())
            .value(value.to_string())
            .build()])?;
        Ok(())
    }
}
