//! The sidebar's own tmux pane and what its keys do there (seed 002's focus keys): `Tab`
//! and `Enter` go to the agent's pane, `Esc` back to the pane the person came from (tmux's
//! last pane of the window: the one that had the focus before the sidebar took it), `q`
//! closes the sidebar. Whether the pane has the focus decides its footer: the terminal's
//! focus reports say (`ESC [ I`, `ESC [ O`: tmux sends them with `focus-events on`, and
//! the plugin's `window-pane-changed` hook sends them to a sidebar on every pane change,
//! with the mouse or any key), and so does a key typed in it. One tmux call when it
//! starts; one per key that moves the focus.

use crate::adapters::tmux::Tmux;
use crate::ui::plugin::{ENV_AGENT_PANE, PANE_SIDEBAR, PANE_SIDEBAR_FOR};
use crate::ui::sidebar::screen::Wake;

/// The sidebar's pane (none outside tmux) and whether it has the focus.
pub struct Pane {
    /// The server the pane is on (`$TMUX`).
    tmux: Tmux,
    /// `$TMUX_PANE`; `None` outside tmux.
    id: Option<String>,
    /// Its session's id.
    pub session_id: Option<String>,
    /// The agent's pane it sits beside (`$ORANGE_AGENT_PANE`, else `@orange_sidebar_for`).
    agent: Option<String>,
    /// The pane has the focus: the footer names the sidebar's own keys.
    pub focused: bool,
}

impl Pane {
    /// This process's pane (`$TMUX_PANE` on the server of `$TMUX`) as tmux describes it:
    /// one call. Focused when it is its window's active pane, in its session's current
    /// window, with a client attached.
    pub fn find(tmux: Tmux, id: Option<String>) -> Pane {
        let fields = [
            PANE_SIDEBAR_FOR,
            "session_id",
            "pane_active",
            "window_active",
            "session_attached",
        ];
        let v = id
            .as_deref()
            .and_then(|p| tmux.pane_values(p, &fields).ok().flatten());
        let get = |i: usize| v.as_ref().map(|v| v[i].as_str()).filter(|s| !s.is_empty());
        // The plugin marks its pane right after it split it off (maybe not yet): the
        // agent's pane it gave in the environment first.
        let agent = std::env::var(ENV_AGENT_PANE)
            .ok()
            .filter(|p| p.starts_with('%'))
            .or_else(|| get(0).map(str::to_string));
        Pane {
            session_id: get(1).map(str::to_string),
            focused: get(2) == Some("1") && get(3) == Some("1") && get(4).is_some_and(|n| n != "0"),
            agent,
            id,
            tmux,
        }
    }

    /// A key that moves the focus, or a report of it: `Tab`/`Enter` to the agent's pane
    /// (else the last pane), `Esc` to the last pane (else the agent's). A move that tmux
    /// refused (no such pane) leaves the focus here.
    pub fn key(&mut self, wake: Wake) {
        let Some(me) = self.id.clone() else {
            return;
        };
        let to_agent = |p: &Pane| {
            p.agent
                .as_deref()
                .is_some_and(|a| a != me && p.tmux.select_pane(a).unwrap_or(false))
        };
        let back = |p: &Pane| p.tmux.last_pane(&me).unwrap_or(false);
        match wake {
            Wake::Agent => self.focused = !(to_agent(self) || back(self)),
            Wake::Back => self.focused = !(back(self) || to_agent(self)),
            Wake::Focus(on) => self.focused = on,
            // Any other key was typed here: the pane has the focus.
            Wake::Refresh | Wake::Send | Wake::Review => self.focused = true,
            Wake::Tick | Wake::Quit | Wake::Interrupt => {}
        }
    }

    /// `q`: close the sidebar's pane, whatever `remain-on-exit` says: the plugin's sidebar
    /// only (marked `@orange_sidebar`; a sidebar run by hand in a pane of its own leaves it
    /// to its shell). tmux gives the focus back to the pane the person came from. Call
    /// after the terminal was restored.
    pub fn close(&self) {
        let Some(me) = self.id.as_deref() else {
            return;
        };
        let marked = self.tmux.pane_values(me, &[PANE_SIDEBAR]).ok().flatten();
        if marked.is_some_and(|v| v[0] == "1") {
            let _ = self.tmux.kill_pane(me);
        }
    }
}
