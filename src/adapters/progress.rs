//! Progress of long work: a workspace's setup command, a wait for a free workspace or for
//! a lock another orange holds, a worktree being removed, a task being restored. The work
//! reports steps as it goes ([`step`]); the command line installs a [`Sink`] that shows
//! them (`ui::progress`: live on a terminal, plain lines otherwise); with none installed
//! (`--json`, the monitor, hooks, sidebars) reporting costs nothing and shows nothing.
//! Reporting never fails the work.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// What shows steps. Lines are a step's command's output as it came (not terminal-safe).
pub trait Sink: Send + Sync {
    /// A step began (`id` is unique in the process), or says what it does now.
    fn begin(&self, id: u64, what: &str);
    fn describe(&self, id: u64, what: &str);
    fn line(&self, id: u64, line: &str);
    /// It ended: `done` says what was done; `None`: it failed (the error says why).
    fn end(&self, id: u64, done: Option<&str>, elapsed: Duration);
}

static SINK: OnceLock<Box<dyn Sink>> = OnceLock::new();
static ENABLED: AtomicBool = AtomicBool::new(false);
static NEXT: AtomicU64 = AtomicU64::new(1);

/// Show progress through `sink` from now on (the first sink of the process stays; this
/// enables it).
pub fn install(sink: Box<dyn Sink>) {
    let _ = SINK.set(sink);
    ENABLED.store(true, Ordering::Relaxed);
}

/// Show progress (again) or not, for the command that runs now: one process of `orange
/// serve` runs many, some with `--json`.
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Is a sink installed (enabled or not)?
pub fn installed() -> bool {
    SINK.get().is_some()
}

/// Is anything showing progress now?
pub fn shown() -> bool {
    sink().is_some()
}

fn sink() -> Option<&'static dyn Sink> {
    if ENABLED.load(Ordering::Relaxed) {
        SINK.get().map(|s| s.as_ref())
    } else {
        None
    }
}

/// One step of long work, shown while it lives: [`Step::done`] ends it well; dropped
/// without, it failed.
#[derive(Debug)]
pub struct Step {
    id: u64,
    start: Instant,
    ended: bool,
}

/// Begin a step: `what` it does, e.g. `creating workspace app--2`.
pub fn step(what: impl AsRef<str>) -> Step {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    if let Some(s) = sink() {
        s.begin(id, what.as_ref());
    }
    Step {
        id,
        start: Instant::now(),
        ended: false,
    }
}

impl Step {
    /// What the step does now (`app--2: setup \`npm ci\``).
    pub fn describe(&self, what: impl AsRef<str>) {
        if let Some(s) = sink() {
            s.describe(self.id, what.as_ref());
        }
    }

    /// A line its command printed.
    pub fn line(&self, line: &str) {
        if let Some(s) = sink() {
            s.line(self.id, line);
        }
    }

    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// It ended well: `done` says what was done (`created app--2`).
    pub fn done(mut self, done: impl AsRef<str>) {
        self.ended = true;
        if let Some(s) = sink() {
            s.end(self.id, Some(done.as_ref()), self.start.elapsed());
        }
    }
}

impl Drop for Step {
    fn drop(&mut self) {
        if !self.ended {
            if let Some(s) = sink() {
                s.end(self.id, None, self.start.elapsed());
            }
        }
    }
}

/// `0.4s`, `12.3s`, `2m 05s`, `1h 02m`: how long a step took or has run.
pub fn elapsed_text(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{:.1}s", d.as_secs_f64()),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// Split a command's output into lines as a terminal would show them: at `\n`, and at
/// `\r` (a program redrawing its own progress line); empty ones dropped. `rest` keeps an
/// unfinished line between reads.
pub fn split_lines(rest: &mut Vec<u8>, chunk: &[u8], mut each: impl FnMut(&str)) {
    rest.extend_from_slice(chunk);
    let mut start = 0;
    for i in 0..rest.len() {
        if rest[i] == b'\n' || rest[i] == b'\r' {
            let l = String::from_utf8_lossy(&rest[start..i]);
            if !l.trim().is_empty() {
                each(l.trim_end());
            }
            start = i + 1;
        }
    }
    rest.drain(..start);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_at_newlines_and_carriage_returns() {
        let mut rest = vec![];
        let mut got = vec![];
        split_lines(&mut rest, b"one\ntw", |l| got.push(l.to_string()));
        split_lines(&mut rest, b"o\r50%\r100%\n\n  \nlast", |l| {
            got.push(l.to_string())
        });
        assert_eq!(got, ["one", "two", "50%", "100%"]);
        assert_eq!(rest, b"last");
    }

    #[test]
    fn elapsed_reads_like_a_person_would_say_it() {
        assert_eq!(elapsed_text(Duration::from_millis(1234)), "1.2s");
        assert_eq!(elapsed_text(Duration::from_secs(125)), "2m 05s");
        assert_eq!(elapsed_text(Duration::from_secs(3720)), "1h 02m");
    }
}
