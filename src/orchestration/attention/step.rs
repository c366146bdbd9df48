//! What moves a task that needs you on ([`Action`]): its word, its command and the
//! actions menu's key for it. Which one a task needs is [`super::next::action`]'s to
//! decide; an [`Item`](super::classify::Item) carries it.

use serde::{Deserialize, Serialize};

/// What moves a task that needs you on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Its agent is gone (exited, killed, its session closed) or never started: start it
    /// again, continuing its conversation where the agent can.
    Respawn,
    /// Its agent hangs alive: stop it and start it again.
    Restart,
    /// It waits for the person in its pane: a dialog, a question, a report of trouble.
    Answer,
    /// Its agent must log in (the API refused its credentials).
    LogIn,
    /// An API error the agent does not retry by itself: ask it to go on.
    Retry,
    /// Its account's usage limit: go on once the limit resets.
    Resume,
    /// Its pull request's checks failed or a reviewer asked for changes: send that to
    /// its agent as a review round.
    PrFeedback,
}

impl Action {
    /// The step in a word or three: what the person does.
    pub fn word(self) -> &'static str {
        match self {
            Action::Respawn => "respawn",
            Action::Restart => "restart",
            Action::Answer => "answer",
            Action::LogIn => "log in",
            Action::Retry => "retry",
            Action::Resume => "resume after the reset",
            Action::PrFeedback => "send the PR's feedback",
        }
    }

    /// The command that does it for task `id`.
    pub fn command(self, id: &str) -> String {
        match self {
            Action::Respawn => format!("orange task respawn {id}"),
            Action::Restart => format!("orange task respawn {id} --force"),
            Action::Answer | Action::LogIn => format!("orange task attach {id}"),
            Action::Retry | Action::Resume => format!("orange task nudge {id}"),
            Action::PrFeedback => format!("orange task review {id} --from-pr --send"),
        }
    }

    /// The key of the actions menu (`prefix O m`) that does it, after the menu's own key.
    pub fn menu_key(self) -> Option<&'static str> {
        match self {
            Action::Respawn => Some("r"),
            _ => None,
        }
    }
}
