//! One observer, many readers (DESIGN.md): what tmux shows of every live task and lane,
//! taken in ONE tmux call and kept in one snapshot file per tmux server.
//!
//! The monitor writes it after each pass (its pass looks, then its policies act, then it
//! summarizes). The status widget, the sidebars, the picker and `task list` read it
//! ([`snapshot::current`]); they do not poll tmux. A command that changes something pokes
//! (`store::poke`): the monitor wakes at once, and every snapshot taken before the poke is
//! stale. Without a running monitor a reader that finds the snapshot stale takes one
//! itself, with the same code ([`snapshot::take`]), and writes it for the next reader.
//!
//! # One name per thing
//! - **look** ([`snapshot::look`]): the ONE tmux call (`Tmux::observe` in the adapter) —
//!   panes, sessions with their marks and options, the server — with the count of pokes and
//!   the time taken before it.
//! - **summary** (`attention::summary::Summary`, put in by [`snapshot::summarize`]): from
//!   what a look saw and the files, every open task and lane as an item in its bucket
//!   (`attention::classify`), counted, remote hosts merged in. Files only, no process.
//! - **snapshot** ([`snapshot::Snapshot`]): a look and its summary, kept in a file;
//!   [`snapshot::take`] makes one (look, then summarize), [`snapshot::current`] gives the
//!   fresh file or takes one.
//!
//! The monitor's look at one agent is its *verdict* (`monitor::judge`), not an observation
//! in this sense.
//!
//! The summary's vocabulary (items, buckets, sessions) is `orchestration::attention`, not a
//! part of this folder: remote hosts (`orchestration::host`) keep the summaries they fetch
//! in it, and this folder merges the hosts' views in (observe → host → attention, no
//! cycle).

pub mod snapshot;
