//! Typing into a task's agent: THE one path by which orange talks to an agent — `task
//! send`, `task nudge`, the monitor's idle nudge and the messages it delivers, and every
//! later feature that does (review rounds, answers from a phone).
//!
//! - [`TaskService::send`]: a person's text (or the nudge), decided by the agent's state as
//!   the monitor and the agent's hooks recorded it: waiting (or a turn that ended on an
//!   error, or a state not known yet) → typed now; working or retrying → held in task.json
//!   (`held`) until its turn ends; blocked on a dialog or an approval → refused (`--force`
//!   types it anyway); dead → refused, naming the next step (`task respawn`).
//! - [`TaskService::send_reply`]: an answer from the phone, the same way (never forced),
//!   its ntfy message id kept with it and in its history events.
//! - [`TaskService::deliver_held`]: the monitor, seeing the agent waiting, types in what is
//!   held, as one message.
//! - [`TaskService::type_into`]: the keystrokes: the text made safe for an agent
//!   ([`text::for_agent`]: control characters removed), a last look at the screen (never
//!   into a dialog unless forced), then the harness's keys, the text as ONE message (pasted
//!   when it has several lines) and its submit key, once.
//!
//! Deliveries to one agent are serialized (a lock per task under `run/send/`), and what is
//! held leaves task.json only after it was typed: a crash between the two types it twice
//! rather than never.

use serde::Serialize;
use serde_json::json;

use crate::adapters::store::{self, LockGuard};
use crate::error::{OrangeError, Result};
use crate::execution::config::Action;
use crate::execution::harness::state::{Blocker, State};
use crate::execution::harness::Harness;
use crate::orchestration::attention::session::SessionState;
use crate::orchestration::screen::{self, Screen};
use crate::orchestration::task::model::{Held, SendKind, Status, Task};
use crate::orchestration::task::service::TaskService;
use crate::text;

/// What an idle nudge types when neither the policy nor the harness names a message.
pub const DEFAULT_NUDGE: &str = "Please continue with the task.";

/// How long `task send` waits for another delivery to the same agent to end.
const SEND_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// What became of a text sent to an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Typed in and submitted now.
    Sent,
    /// Kept in the task until its agent's turn ends.
    Held,
}

/// `task send` / `task nudge`: what was done, for the command's output.
#[derive(Debug, Clone, Serialize)]
pub struct Sent {
    pub id: String,
    pub outcome: Outcome,
    /// The agent's state that decided it (`null`: not known yet).
    pub agent_state: Option<State>,
    /// The text, as typed (or as it will be).
    pub text: String,
    pub kind: SendKind,
    pub forced: bool,
    /// Messages typed in with it: those that were held before it.
    pub with_held: usize,
    /// Messages held for the agent now.
    pub held: usize,
}

/// What typing found.
#[derive(Debug, Clone, PartialEq)]
pub enum Typed {
    /// Typed and submitted.
    Done,
    /// Not typed: a dialog or an approval prompt is on the agent's screen (its line).
    Dialog(Blocker, String),
}

/// The message a nudge types: the policy's `on_idle` message, else the harness's
/// `nudge_message`, else [`DEFAULT_NUDGE`].
pub fn nudge_text<'a>(on_idle: Option<&'a Action>, harness: &'a Harness) -> &'a str {
    on_idle
        .and_then(Action::message)
        .or(harness.nudge_message.as_deref())
        .unwrap_or(DEFAULT_NUDGE)
}

/// The error for an agent that cannot take text now.
fn not_ready(task: &Task, state: &str, detail: Option<&str>, advice: String) -> OrangeError {
    OrangeError::AgentNotReady {
        id: task.id.clone(),
        state: state.to_string(),
        detail: detail
            .filter(|d| !d.trim().is_empty())
            .map(|d| format!(" ({})", text::safe_line(d)))
            .unwrap_or_default(),
        advice,
    }
}

fn blocked(task: &Task, b: Blocker, line: &str) -> OrangeError {
    not_ready(
        task,
        &format!("blocked: {}", b.label()),
        Some(line),
        format!(
            "answer it in its pane (`orange task attach {}`), or pass --force to type it anyway",
            task.id
        ),
    )
}

impl TaskService<'_> {
    /// Send `text` to the agent of task `id` (see the module's header): typed now, held
    /// until its turn ends, or refused. `force`: typed now whatever its state says (a dead
    /// agent excepted).
    pub fn send(
        &mut self,
        id: &str,
        project: Option<&str>,
        text: &str,
        kind: SendKind,
        force: bool,
    ) -> Result<Sent> {
        self.send_as(id, project, text, kind, force, None)
    }

    /// An answer from the phone (ntfy message `reply`): [`Self::send`]'s path, never
    /// forced (never into a blocked agent), its id in the history events it leaves.
    pub fn send_reply(&mut self, task: &Task, text: &str, reply: &str) -> Result<Sent> {
        let (id, project) = (task.id.clone(), task.project.clone());
        self.send_as(
            &id,
            Some(&project),
            text,
            SendKind::Message,
            false,
            Some(reply),
        )
    }

    fn send_as(
        &mut self,
        id: &str,
        project: Option<&str>,
        text: &str,
        kind: SendKind,
        force: bool,
        reply: Option<&str>,
    ) -> Result<Sent> {
        let text = text::for_agent(text);
        if text.is_empty() {
            return Err(OrangeError::invalid(
                "nothing to send: the text is empty (or only control characters)",
            ));
        }
        let task = self.get(id, project)?;
        check_has_agent(&task)?;
        let _send = self.send_lock(&task, SEND_LOCK_WAIT)?;
        let task = self.store.load(&task.project, &task.id)?;
        let view = self.view(task.clone(), &self.panes());
        let state = view.agent.state;
        if view.session.state != SessionState::Live || state == Some(State::Dead) {
            return Err(not_ready(
                &task,
                "dead",
                view.agent.detail.as_deref(),
                format!(
                    "start it again with `orange task respawn {}`, then send again",
                    task.id
                ),
            ));
        }
        if state == Some(State::Blocked) && !force {
            let b = view.agent.blocker.unwrap_or(Blocker::Prompt);
            return Err(blocked(
                &task,
                b,
                view.agent.detail.as_deref().unwrap_or(""),
            ));
        }
        let mut sent = Sent {
            id: task.id.clone(),
            outcome: Outcome::Sent,
            agent_state: state,
            text: text.clone(),
            kind,
            forced: force,
            with_held: task.held.len(),
            held: 0,
        };
        let message = Held {
            text,
            at: store::now_precise(),
            kind,
            reply: reply.map(str::to_string),
        };
        if matches!(state, Some(State::Working | State::Retrying)) && !force {
            sent.outcome = Outcome::Held;
            sent.with_held = 0;
            sent.held = self.hold(&task, message)?;
            return Ok(sent);
        }
        let via = match kind {
            _ if reply.is_some() => "phone",
            SendKind::Nudge => "task nudge",
            SendKind::Review => "task review",
            SendKind::Message => "task send",
            SendKind::Resume => "task respawn",
        };
        match self.deliver(&task, Some(message), force, via)? {
            Typed::Done => Ok(sent),
            Typed::Dialog(b, line) => Err(blocked(&task, b, &line)),
        }
    }

    /// `task nudge`: the nudge the policy would type, sent now through [`Self::send`].
    pub fn nudge(&mut self, id: &str, project: Option<&str>, force: bool) -> Result<Sent> {
        let task = self.get(id, project)?;
        let config = self.config()?;
        let harness = Harness::named(&task.harness, config)?;
        let policy = config.policy_for(&task.id, &task.harness);
        let msg = nudge_text(policy.on_idle.as_ref(), &harness).to_string();
        self.send(&task.id, Some(&task.project), &msg, SendKind::Nudge, force)
    }

    /// The monitor saw the agent of `task` waiting: what is held for it is typed in, as one
    /// message. The count typed; `None` when nothing was (nothing held, another delivery
    /// under way, or a dialog on its screen: it stays held).
    pub fn deliver_held(&mut self, task: &Task) -> Result<Option<usize>> {
        if task.held.is_empty() {
            return Ok(None);
        }
        let Ok(_send) = self.send_lock(task, std::time::Duration::ZERO) else {
            return Ok(None);
        };
        let task = self.store.load(&task.project, &task.id)?;
        if task.held.is_empty() || !task.status.is_active() {
            return Ok(None);
        }
        let n = task.held.len();
        match self.deliver(&task, None, false, "monitor")? {
            Typed::Done => Ok(Some(n)),
            Typed::Dialog(..) => Ok(None),
        }
    }

    /// Type `text` into the agent of `task` (the keystrokes only: no history). Waits at
    /// most `wait` for another delivery to it to end (`lock_timeout` after that).
    pub fn type_into(
        &mut self,
        task: &Task,
        text: &str,
        force: bool,
        wait: std::time::Duration,
    ) -> Result<Typed> {
        let _send = self.send_lock(task, wait)?;
        self.type_locked(task, text, force)
    }

    /// Answer the dialog `expected` on the agent's screen with `keys` then `confirm` (what
    /// config.toml chose, e.g. claude's `resume = "full"`): under the task's send lock,
    /// into its own pane only, and only when a last look finds that very dialog there —
    /// never into an agent that shows anything else. Whether it was answered.
    pub fn answer_dialog(
        &mut self,
        task: &Task,
        expected: Blocker,
        keys: &[&str],
        confirm: &str,
    ) -> Result<bool> {
        let Ok(_send) = self.send_lock(task, std::time::Duration::ZERO) else {
            return Ok(false);
        };
        let Some(pane) = task.tmux_pane_id.clone() else {
            return Ok(false);
        };
        let rules = screen::Rules::of(&task.harness, self.config()?);
        let shown = self.tmux.capture_pane(&pane, 0)?;
        if !matches!(rules.classify(&shown), Some(Screen::Blocked(b, _)) if b == expected) {
            return Ok(false);
        }
        self.tmux.send_text_then(&pane, "", keys, confirm)?;
        Ok(true)
    }

    /// The lock that serializes what is typed into one agent.
    fn send_lock(&self, task: &Task, wait: std::time::Duration) -> Result<LockGuard> {
        let path = self
            .home
            .run_dir()
            .join("send")
            .join(format!("{}--{}.lock", task.project, task.id));
        LockGuard::acquire_within(&path, wait)
    }

    /// [`Self::type_into`] with the task's send lock held.
    fn type_locked(&mut self, task: &Task, text: &str, force: bool) -> Result<Typed> {
        let config = self.config()?;
        let harness = Harness::named(&task.harness, config)?;
        let rules = screen::Rules::of(&task.harness, config);
        // The agent's own pane (a sidebar may be the active one), else its session.
        let target = match &task.tmux_pane_id {
            Some(p) => p.clone(),
            None => self.session_target(task)?,
        };
        // A last look just before typing: a dialog drawn since its state was recorded (an
        // approval a moment after it went quiet) never gets the keystrokes.
        if !force {
            if let Ok(shown) = self.tmux.capture_pane(&target, 0) {
                if let Some(Screen::Blocked(b, line)) = rules.classify(&shown) {
                    return Ok(Typed::Dialog(b, line));
                }
            }
        }
        let text = text::for_agent(text);
        let keys: Vec<&str> = harness.nudge_keys.iter().map(String::as_str).collect();
        self.tmux
            .send_text_then(&target, &text, &keys, &harness.nudge_submit)?;
        Ok(Typed::Done)
    }

    /// Keep `message` for the agent of `task` until its turn ends; the count held now.
    fn hold(&mut self, task: &Task, message: Held) -> Result<usize> {
        let _lock = self.store.lock(&task.project)?;
        let mut t = self.store.load(&task.project, &task.id)?;
        let mut data = json!({"text": message.text, "kind": message.kind});
        if let Some(r) = &message.reply {
            data["reply"] = r.clone().into();
        }
        self.store.append_history(&t, "message.held", data)?;
        t.held.push(message);
        // Not `updated_at`: what is known of its agent stays true.
        self.store.save(&t)?;
        Ok(t.held.len())
    }

    /// Type what is held for `task`'s agent and `extra` after it, as one message; then take
    /// what was typed out of task.json and write each message's history event.
    fn deliver(
        &mut self,
        task: &Task,
        extra: Option<Held>,
        force: bool,
        via: &str,
    ) -> Result<Typed> {
        let held = task.held.clone();
        let all: Vec<Held> = held.iter().cloned().chain(extra).collect();
        let text = all
            .iter()
            .map(|h| h.text.as_str())
            .collect::<Vec<_>>()
            .join("\n\n");
        if let Typed::Dialog(b, line) = self.type_locked(task, &text, force)? {
            return Ok(Typed::Dialog(b, line));
        }
        let _lock = self.store.lock(&task.project)?;
        let mut now = self.store.load(&task.project, &task.id)?;
        if !held.is_empty() {
            now.held.retain(|h| !held.contains(h));
            self.store.save(&now)?;
        }
        for h in &all {
            let (event, mut data) = match h.kind {
                SendKind::Message => ("message.sent", json!({"text": h.text})),
                SendKind::Review => ("message.sent", json!({"text": h.text, "kind": "review"})),
                SendKind::Resume => ("message.sent", json!({"text": h.text, "kind": "resume"})),
                SendKind::Nudge => (
                    "agent.nudged",
                    json!({"message": h.text, "reason": "by hand"}),
                ),
            };
            data["via"] = via.into();
            if let Some(r) = &h.reply {
                data["reply"] = r.clone().into();
            }
            if held.contains(h) {
                data["held_since"] = h.at.clone().into();
            }
            if force {
                data["forced"] = true.into();
            }
            self.store.append_history(&now, event, data)?;
        }
        Ok(Typed::Done)
    }
}

/// Only an agent that was started can be sent text.
fn check_has_agent(task: &Task) -> Result<()> {
    if task.status.is_active() {
        return Ok(());
    }
    let hint = match task.status {
        Status::Pending => format!("; `orange task spawn {}` starts it", task.id),
        Status::Failed => format!("; `orange task respawn {}` retries it", task.id),
        _ => String::new(),
    };
    Err(OrangeError::InvalidTransition(format!(
        "task {} is {}: it has no agent to send to{hint}",
        task.id, task.status
    )))
}

/// A respawn's `prompt`, kept back from the command line when the program may first ask
/// how to resume its conversation, which it does only when started without one (Claude
/// Code's resume dialog, `AgentKind::may_ask_before_resuming`): then it waits in `held`
/// (first, as [`SendKind::Resume`]), typed once the agent is idle — after the dialog is
/// answered, by config.toml's `resume` or by the person. What the command line gets. A
/// resume prompt held by an earlier start that never got it is dropped either way (this
/// start has its own).
pub(super) fn hold_resume_prompt(
    task: &mut Task,
    harness: &Harness,
    start: crate::execution::harness::Start,
    workspace: &std::path::Path,
    prompt: Option<String>,
) -> Option<String> {
    use crate::execution::harness::{Conversation, Mode, Start};
    task.held.retain(|h| h.kind != SendKind::Resume);
    let kind = harness.kind();
    let asks = start == Start::Respawn
        && harness.is_builtin()
        && harness.mode == Mode::Interactive
        && matches!(
            kind.conversation(start, task.agent_session_id.as_deref(), workspace),
            Some(Conversation::Resume(id)) if kind.may_ask_before_resuming(workspace, &id)
        );
    let text = prompt.as_deref().map(text::for_agent).unwrap_or_default();
    if !asks || text.is_empty() {
        return prompt;
    }
    task.held.insert(
        0,
        Held {
            text,
            at: store::now_precise(),
            kind: SendKind::Resume,
            reply: None,
        },
    );
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nudge_is_the_policy_s_then_the_harness_s_then_the_default() {
        let config = crate::execution::config::Config::parse(
            "[harness.mine]\ncommand = \"mine\"\nnudge_message = \"Go on, mine.\"\n",
        )
        .unwrap();
        let mine = Harness::named("mine", &config).unwrap();
        let pi = Harness::named("pi", &config).unwrap();
        let said = Action::Full {
            action: "nudge".into(),
            message: Some("Keep going.".into()),
            mode: None,
        };
        assert_eq!(nudge_text(Some(&said), &mine), "Keep going.");
        assert_eq!(nudge_text(None, &mine), "Go on, mine.");
        assert_eq!(
            nudge_text(Some(&Action::Name("nudge".into())), &pi),
            DEFAULT_NUDGE
        );
    }

    #[test]
    fn an_agent_that_cannot_take_text_says_its_state_and_what_to_do() {
        let task = Task {
            id: "abc123".into(),
            ..Task::default()
        };
        let e = blocked(&task, Blocker::Approval, "Do you want to proceed?");
        assert_eq!(e.code(), "agent_not_ready");
        let m = e.to_string();
        assert!(m.contains("blocked"), "{m}");
        assert!(m.contains("Do you want to proceed?"), "{m}");
        assert!(m.contains("--force"), "{m}");
        assert!(check_has_agent(&task)
            .unwrap_err()
            .to_string()
            .contains("task spawn"));
    }
}
