//! Long work shown on stderr while it runs (what `adapters::progress` reports: a
//! workspace being created and its setup command, a wait for a free workspace or a lock,
//! a worktree being removed, a task being restored). stdout keeps the command's result
//! alone, and `--json` shows nothing of this (no sink is installed).
//!
//! - stderr a terminal: live, one line per step under way — a spinner, how long it has
//!   run, what it does, the last line its command printed — redrawn in place (indicatif),
//!   and a line left behind for each step that ended (`✓ created workspace app--2 (1.0s)`);
//! - otherwise (a pipe, a file, CI): plain lines, one when a step begins or changes, one
//!   when it ends with how long it took (`orange: created workspace app--2 (1.0s)`).

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::adapters::progress::{self, elapsed_text, Sink};

/// Show progress for this command (not with `--json`): live when stderr is a terminal.
/// (`orange serve` runs many commands in one process: each says whether it shows.)
pub fn install(json: bool) {
    if json || progress::installed() {
        progress::set_enabled(!json && progress::installed());
        return;
    }
    let live = std::io::stderr().is_terminal()
        && std::env::var("TERM").map_or(true, |t| !t.is_empty() && t != "dumb");
    if live {
        progress::install(Box::new(Live::new()));
    } else {
        progress::install(Box::new(Plain::default()));
    }
}

/// Text for one line of the terminal: a setup command's output (any bytes), what a step
/// does (a branch name, the user's setup command) — escapes shown, never interpreted.
fn terminal_text(line: &str) -> String {
    crate::text::safe_line(line.trim()).into_owned()
}

#[derive(Default)]
struct Plain {
    what: Mutex<HashMap<u64, String>>,
}

impl Sink for Plain {
    fn begin(&self, id: u64, what: &str) {
        let what = terminal_text(what);
        eprintln!("orange: {what}…");
        self.what.lock().unwrap().insert(id, what);
    }

    fn describe(&self, id: u64, what: &str) {
        self.begin(id, what);
    }

    fn line(&self, _id: u64, _line: &str) {}

    fn end(&self, id: u64, done: Option<&str>, elapsed: Duration) {
        let what = self.what.lock().unwrap().remove(&id).unwrap_or_default();
        match done {
            Some(d) => eprintln!("orange: {} ({})", terminal_text(d), elapsed_text(elapsed)),
            None => eprintln!("orange: {what}: failed ({})", elapsed_text(elapsed)),
        }
    }
}

struct Bar {
    bar: ProgressBar,
    what: String,
    last: String,
}

impl Bar {
    fn show(&self) {
        let text = if self.last.is_empty() {
            self.what.clone()
        } else {
            format!("{} · {}", self.what, self.last)
        };
        self.bar.set_message(text);
    }
}

struct Live {
    multi: MultiProgress,
    bars: Mutex<HashMap<u64, Bar>>,
}

impl Live {
    fn new() -> Live {
        Live {
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
            bars: Mutex::new(HashMap::new()),
        }
    }
}

impl Sink for Live {
    fn begin(&self, id: u64, what: &str) {
        let bar = self.multi.add(ProgressBar::new_spinner());
        bar.set_style(
            ProgressStyle::with_template("{spinner:.cyan} [{elapsed}] {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(100));
        let b = Bar {
            bar,
            what: terminal_text(what),
            last: String::new(),
        };
        b.show();
        self.bars.lock().unwrap().insert(id, b);
    }

    fn describe(&self, id: u64, what: &str) {
        if let Some(b) = self.bars.lock().unwrap().get_mut(&id) {
            b.what = terminal_text(what);
            b.last.clear();
            b.show();
        }
    }

    fn line(&self, id: u64, line: &str) {
        if let Some(b) = self.bars.lock().unwrap().get_mut(&id) {
            b.last = terminal_text(line);
            b.show();
        }
    }

    fn end(&self, id: u64, done: Option<&str>, elapsed: Duration) {
        let Some(b) = self.bars.lock().unwrap().remove(&id) else {
            return;
        };
        b.bar.finish_and_clear();
        self.multi.remove(&b.bar);
        let line = match done {
            Some(d) => format!("✓ {} ({})", terminal_text(d), elapsed_text(elapsed)),
            None => format!("✗ {}: failed ({})", b.what, elapsed_text(elapsed)),
        };
        let _ = self.multi.println(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_reaches_the_terminal_without_control_characters() {
        let shown = terminal_text("\u{1b}[2J\u{1b}]0;PWNED\u{7}added 3 packages");
        assert!(!shown.chars().any(|c| c.is_control()), "{shown:?}");
        assert!(shown.ends_with("added 3 packages"), "{shown:?}");
    }
}
