//! Which open task (or lane) needs you: the buckets of the status widgets, the picker's
//! "next waiting" and the sidebar's notice all come from [`classify::classify`], the one
//! place that decides it. Nothing else in orange re-derives these definitions. Done and cancelled
//! tasks are not counted.
//!
//! | bucket | icon | a task is in it when |
//! |---|---|---|
//! | `working` | `⚙` | status `planning`, `working` or `agent-review`, its session's agent pane is live, and the agent is not known to wait (below); an agent `retrying` an API error by itself is working |
//! | `waiting` (for you) | `⚑` | status `stuck` or `failed`; or status `clarification` with a live agent; or a live agent whose last known agent state (`agent.json`) is `waiting`, `blocked` (a dialog or an approval prompt) or `error`, or that the monitor escalated |
//! | `dead` | `✗` | status `planning`, `clarification`, `working` or `agent-review` and the agent pane is dead (the agent exited; exit status or signal kept) or the session is gone; or a live pane whose agent the monitor saw exit |
//! | `review` (ready for review) | `✓` | status `reviewing`, whatever its session (an agent that reported `complete` may exit) |
//! | `queued` | `⏸` | status `pending`: no agent yet (`--no-spawn`, or waiting for a workspace) |
//!
//! An agent started without a prompt (`task create` with no summary) that waits for its
//! first one is `waiting` with the reason `waiting for a first prompt`, and does not need
//! you ([`classify::needs_you`]): no notification, not in the picker's "next waiting".
//!
//! `agent.json` is only believed when it was written after the task's last change
//! (`updated_at`): a respawn or a status change makes an older observation stale. The pane
//! is the ground truth for life and death: `agent.json` never makes a dead pane live.
//!
//! - [`classify`]: the buckets, the classification, what needs you;
//! - [`session`]: where a task's session stands (live, dead, none), and its agent's state
//!   corrected by it;
//! - [`summary`]: every open task and lane as an item in its bucket, counted;
//! - [`next`]: the one next step of a task that needs you, and its words ([`step`]: the
//!   steps).

pub mod classify;
pub mod next;
pub mod session;
pub mod step;
pub mod summary;

// Old paths (`attention::Item`, `attention::SessionView`…), kept until the branches that
// use them are merged. Remove them then.
pub use classify::*;
pub use session::{agent_pane, agent_state, SessionState, SessionView};
pub use summary::{Agents, HostView, Summary};
