//! The sidebar's terminal: keys in (read on a thread, one by one), frames out (drawn from
//! the top left, redrawn only when they change, without flicker).

use std::io::{IsTerminal, Read, Write};
use std::sync::mpsc;
use std::time::Duration;

use unicode_width::UnicodeWidthStr;

use crate::adapters::terminal::Term;

/// How long one wait for a key lasts: the loop's tick.
pub const TICK: Duration = Duration::from_millis(250);
const CTRL_C: u8 = 0x03;
const CTRL_D: u8 = 0x04;

enum Input {
    Key(u8),
}

/// What a key (or the tick passing without one) asks of the loop.
pub enum Wake {
    Tick,
    /// `q`, `Q` or Ctrl+D.
    Quit,
    /// Ctrl+C: restore the terminal and exit as a program stopped by it.
    Interrupt,
    /// Any other key: refresh at once.
    Refresh,
    /// `t`: type a message to the agent (tmux's command-prompt asks for it).
    Send,
}

/// The keys typed on standard input (the terminal is in `-icanon`), read on a thread.
pub struct Keys {
    /// Held so that a wait lasts a tick even when no thread reads (stdin is no terminal).
    _tx: mpsc::Sender<Input>,
    rx: mpsc::Receiver<Input>,
}

impl Keys {
    pub fn start() -> Keys {
        let (tx, rx) = mpsc::channel();
        if std::io::stdin().is_terminal() {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut stdin = std::io::stdin().lock();
                let mut buf = [0u8; 64];
                while let Ok(n) = stdin.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    for b in &buf[..n] {
                        if tx.send(Input::Key(*b)).is_err() {
                            return;
                        }
                    }
                }
            });
        }
        Keys { _tx: tx, rx }
    }

    /// Wait one tick for a key.
    pub fn wait(&self) -> Wake {
        match self.rx.recv_timeout(TICK) {
            Ok(Input::Key(b'q' | b'Q' | CTRL_D)) => Wake::Quit,
            Ok(Input::Key(CTRL_C)) => Wake::Interrupt,
            Ok(Input::Key(b't')) => Wake::Send,
            Ok(Input::Key(_)) => Wake::Refresh,
            Err(_) => Wake::Tick,
        }
    }

    /// Forget the keys typed ahead (one refresh answers them all).
    pub fn drain(&self) {
        while self.rx.try_recv().is_ok() {}
    }
}

/// The frame on the terminal, redrawn only when it changed.
#[derive(Default)]
pub struct Screen {
    shown: String,
    size: (usize, usize),
}

impl Screen {
    /// Show `shown` (`plain`: the same without colours, to measure it) at `size`.
    pub fn show(
        &mut self,
        plain: &str,
        shown: String,
        size: (usize, usize),
    ) -> std::io::Result<()> {
        if shown == self.shown && size == self.size {
            return Ok(());
        }
        draw(plain, &shown, size.0, size.1, size != self.size)?;
        self.shown = shown;
        self.size = size;
        Ok(())
    }

    /// What a shell expects of a program stopped by Ctrl+C: the terminal restored, status
    /// 130.
    pub fn interrupted(term: Term) -> ! {
        drop(term);
        std::process::exit(130);
    }
}

/// Draw a frame (see [`frame_bytes`]) on standard output.
fn draw(plain: &str, shown: &str, cols: usize, rows: usize, clear: bool) -> std::io::Result<()> {
    let mut so = std::io::stdout().lock();
    so.write_all(frame_bytes(plain, shown, cols, rows, clear).as_bytes())?;
    so.flush()
}

/// What draws a frame from the top left: each line cleared after its text (not before: no
/// flicker), the rest of the screen cleared when the frame is shorter than the screen; the
/// whole screen cleared first only with `clear` (the size changed). `plain` is `shown`
/// without colours, to measure its lines.
fn frame_bytes(plain: &str, shown: &str, cols: usize, rows: usize, clear: bool) -> String {
    let mut buf = String::from(if clear { "\x1b[H\x1b[2J" } else { "\x1b[H" });
    let widths: Vec<usize> = plain.lines().map(|l| l.width()).collect();
    let lines: Vec<&str> = shown.lines().take(rows).collect();
    for (i, l) in lines.iter().enumerate() {
        if i > 0 {
            buf.push_str("\r\n");
        }
        buf.push_str(l);
        // At the last column the terminal waits to wrap: an erase there would eat the
        // last character, and nothing is left to erase anyway.
        if widths.get(i).copied().unwrap_or(0) < cols {
            buf.push_str("\x1b[K");
        }
    }
    if lines.is_empty() {
        buf.push_str("\x1b[J");
    } else if lines.len() < rows {
        buf.push_str("\r\n\x1b[J");
    }
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_clears_after_each_line_and_below_never_the_whole_screen_unless_resized() {
        let f = frame_bytes("ab\nc\n", "\x1b[1mab\x1b[0m\nc\n", 4, 5, false);
        assert_eq!(f, "\x1b[H\x1b[1mab\x1b[0m\x1b[K\r\nc\x1b[K\r\n\x1b[J");
        let f = frame_bytes("ab\n", "ab\n", 4, 5, true);
        assert!(f.starts_with("\x1b[H\x1b[2Jab"), "{f:?}");
    }

    #[test]
    fn a_full_width_line_is_not_erased_and_a_long_frame_is_cut_to_the_screen() {
        // At the last column an erase would eat the last character.
        let f = frame_bytes("abcd\nxy\nzz\n", "abcd\nxy\nzz\n", 4, 2, false);
        assert_eq!(f, "\x1b[Habcd\r\nxy\x1b[K");
        assert_eq!(frame_bytes("", "", 4, 2, false), "\x1b[H\x1b[J");
    }
}
