//! The tmux adapter: every tmux process orange starts is started by `Tmux::exec` in
//! exec.rs (the only other is [`Tmux::attach`], which replaces orange with
//! `tmux attach-session`). Commands are built with `tmux_interface` builders where they fit;
//! where a builder cannot express what we need (`--` before a literal argument, several
//! shell-command arguments) we push the extra argv elements onto the built command, and it
//! still runs through `exec`. Every exit status is checked: `tmux_interface`'s own `output()`
//! reports success even when tmux failed, so it is not used.
//!
//! Targets. Every method taking a `target` accepts:
//! - a session id (`$3`), a window id (`@4`) or a pane id (`%5`): exact by construction;
//! - anything else is an exact session name, sent as `=name` (session commands) or `=name:`
//!   (window and pane commands: the session's current window and its active pane, whatever
//!   `base-index`/`pane-base-index` say). tmux never prefix-matches such a target, so
//!   `p/feat` can never hit `p/feature-x`.
//!
//! tmux 3.3a facts this module designs around:
//! - an argv element ending in `;` ends a command; `exec` escapes it (`x;` → `x\;`, which
//!   tmux turns back into `x;`), so text, option values and commands may end in `;`;
//! - a session's command given as several argv elements is `execvp`ed by tmux, one element
//!   goes through the user's `default-shell -c` (fish, zsh…). Agent commands are run as
//!   `/bin/sh -c 'exec <argv quoted for sh>'`: never the user's shell, argv arrives intact,
//!   and a missing program is a visible `exit 127`;
//! - `set-option -t`/`show-options -t` take a *pane* target: `=name` alone is refused there,
//!   `=name:` works; `show-options -q` also hides a missing target;
//! - `display-message -p -t <missing>` succeeds with empty fields, so it is never used to
//!   resolve a target (a send to the empty pane id would go to whatever pane tmux picks):
//!   `list-panes -t` is, as it fails on a missing target;
//! - Debian's tmux (built with libutempter) sometimes never collects the exit status of a
//!   program that exits at once: see `Tmux::nudge_reaper`.
//!
//! The files: handle.rs (the `Tmux` handle: which server, attaching), target.rs (session
//! names, exact targets, the checks before a name reaches tmux), exec.rs (running tmux),
//! parse.rs (the formats and the ONE list of pane fields), and one `impl Tmux` block each
//! in observe.rs (the whole server in one call), sessions.rs, panes.rs (capture, typing),
//! options.rs, clients.rs, layout.rs (the plugin's panes and windows), windows.rs (a second
//! agent's window beside a task's own). This file only
//! declares them and names what callers use.

mod clients;
mod exec;
mod handle;
mod layout;
mod observe;
mod options;
mod panes;
mod parse;
mod sessions;
mod target;
mod windows;

pub use self::clients::{quote as tmux_quote, ClientInfo};
pub use self::handle::{Server, Tmux};
pub use self::observe::{Marked, MarkedSession, Observed};
pub use self::options::OptionScope;
pub use self::parse::{PaneExit, PaneInfo, ServerId, SessionInfo};
pub use self::sessions::{Made, SessionRow};
pub use self::target::session_char_ok;
pub use self::windows::AgentWindow;
pub use crate::adapters::mux::{submit_pause, NewSession};
pub use crate::adapters::shell::join as shell_join;
pub use crate::adapters::shell::quote as shell_quote;

/// The argv tmux runs in a new pane for `command` (tmux execvp's two or more arguments,
/// never through the user's `default-shell`): `/bin/sh -c 'exec <argv>'`, so that a program
/// /bin/sh cannot find exits 127 with its words (tmux would not say them). A command that
/// is /bin/sh already (a declared harness's `/bin/sh -c LINE`) runs as it is: one shell
/// started to start the same shell is a process start per pane for nothing.
fn pane_argv(command: &[String]) -> Vec<String> {
    match command {
        [sh, _, ..] if sh == "/bin/sh" => command.to_vec(),
        _ => vec![
            "/bin/sh".into(),
            "-c".into(),
            format!("exec {}", shell_join(command)),
        ],
    }
}

#[cfg(test)]
mod pane_argv_tests {
    use super::pane_argv;

    /// Any program is started by /bin/sh (its "not found" is its words and 127); one that
    /// is /bin/sh already is not wrapped in another.
    #[test]
    fn a_program_is_wrapped_in_sh_unless_it_is_sh() {
        let argv = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            pane_argv(&argv(&["claude", "it's"])),
            argv(&["/bin/sh", "-c", "exec claude 'it'\\''s'"])
        );
        let line = argv(&["/bin/sh", "-c", "mine --yes 'a b'"]);
        assert_eq!(pane_argv(&line), line);
        // `sh` looked up on PATH is another program: wrapped.
        assert_eq!(pane_argv(&argv(&["sh", "-c", "x"]))[0], "/bin/sh");
        assert_eq!(pane_argv(&argv(&["sh", "-c", "x"])).len(), 3);
    }
}
