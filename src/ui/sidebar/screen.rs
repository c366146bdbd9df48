//! The sidebar's terminal: keys in (read on a thread, one by one), frames out (drawn from
//! the top left, redrawn only when they change, without flicker).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{IsTerminal, Read, Write};
use std::sync::mpsc;
use std::time::Duration;

use unicode_width::UnicodeWidthStr;

use crate::adapters::terminal::Term;

/// How long one wait for a key lasts: the loop's tick.
pub const TICK: Duration = Duration::from_millis(250);
const CTRL_C: u8 = 0x03;
const CTRL_D: u8 = 0x04;
const ESC: u8 = 0x1b;

/// What one read from the terminal holds, key by key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Input {
    Key(u8),
    /// Escape alone (tmux sends it alone, after its `escape-time`).
    Esc,
    /// The pane got (`true`) or lost the focus: the terminal's report, or the plugin's
    /// tmux hook's (see `orange.tmux`).
    Focus(bool),
    /// Any other escape sequence (an arrow, a function key, Alt+key).
    Seq,
}

/// The keys of one read: bytes, an Escape alone, escape sequences (CSI, SS3, Alt+key)
/// whole. A read ends where tmux's write of one key ended, so an Escape last in it is
/// the key.
fn parse(buf: &[u8]) -> Vec<Input> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < buf.len() {
        if buf[i] != ESC {
            out.push(Input::Key(buf[i]));
            i += 1;
            continue;
        }
        match buf.get(i + 1) {
            None | Some(&ESC) => {
                out.push(Input::Esc);
                i += 1;
            }
            Some(b'[') => {
                // Parameters, then one final byte in 0x40..=0x7e.
                let mut j = i + 2;
                while j < buf.len() && !(0x40..=0x7e).contains(&buf[j]) {
                    j += 1;
                }
                out.push(match &buf[i + 2..(j + 1).min(buf.len())] {
                    b"I" => Input::Focus(true),
                    b"O" => Input::Focus(false),
                    _ => Input::Seq,
                });
                i = j + 1;
            }
            Some(b'O') => {
                out.push(Input::Seq);
                i += 3;
            }
            Some(_) => {
                out.push(Input::Seq);
                i += 2;
            }
        }
    }
    out
}

/// What a key (or the tick passing without one) asks of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    Tick,
    /// `q`, `Q` or Ctrl+D: close the sidebar.
    Quit,
    /// Ctrl+C: restore the terminal and exit as a program stopped by it.
    Interrupt,
    /// Any other key: refresh at once.
    Refresh,
    /// `t`: type a message to the agent (tmux's command-prompt asks for it).
    Send,
    /// `v`: review the task's changes (`task review` in a popup).
    Review,
    /// Tab or Enter: to the agent's pane.
    Agent,
    /// Escape: back to the pane the person came from.
    Back,
    /// The sidebar got (`true`) or lost the focus.
    Focus(bool),
}

impl Wake {
    fn of(input: Input) -> Wake {
        match input {
            Input::Key(b'q' | b'Q' | CTRL_D) => Wake::Quit,
            Input::Key(CTRL_C) => Wake::Interrupt,
            Input::Key(b'\t' | b'\r' | b'\n') => Wake::Agent,
            Input::Key(b't') => Wake::Send,
            Input::Key(b'v') => Wake::Review,
            Input::Esc => Wake::Back,
            Input::Focus(on) => Wake::Focus(on),
            Input::Key(_) | Input::Seq => Wake::Refresh,
        }
    }
}

/// The keys typed on standard input (the terminal is in `-icanon`), read on a thread.
pub struct Keys {
    /// Held so that a wait lasts a tick even when no thread reads (stdin is no terminal).
    _tx: mpsc::Sender<Input>,
    rx: mpsc::Receiver<Input>,
    /// What a drain kept: the keys that do more than refresh, in order.
    kept: RefCell<VecDeque<Input>>,
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
                    for input in parse(&buf[..n]) {
                        if tx.send(input).is_err() {
                            return;
                        }
                    }
                }
            });
        }
        Keys {
            _tx: tx,
            rx,
            kept: RefCell::new(VecDeque::new()),
        }
    }

    /// Wait one tick for a key.
    pub fn wait(&self) -> Wake {
        if let Some(input) = self.kept.borrow_mut().pop_front() {
            return Wake::of(input);
        }
        match self.rx.recv_timeout(TICK) {
            Ok(input) => Wake::of(input),
            Err(_) => Wake::Tick,
        }
    }

    /// Forget the keys typed ahead that only refresh (one refresh answers them all); the
    /// others wait their turn.
    pub fn drain(&self) {
        while let Ok(input) = self.rx.try_recv() {
            if Wake::of(input) != Wake::Refresh {
                self.kept.borrow_mut().push_back(input);
            }
        }
    }
}

/// Ask the terminal (tmux) to report the focus: `ESC [ I` in, `ESC [ O` out (turned off
/// again with the rest when the terminal is restored).
pub fn report_focus() {
    let mut so = std::io::stdout().lock();
    let _ = so.write_all(b"\x1b[?1004h");
    let _ = so.flush();
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
    fn keys_escape_alone_and_focus_reports_are_told_apart() {
        use Input::*;
        assert_eq!(parse(b"q"), [Key(b'q')]);
        assert_eq!(parse(b"\x1b"), [Esc]);
        assert_eq!(parse(b"\x1b[I\x1b[O"), [Focus(true), Focus(false)]);
        assert_eq!(parse(b"\x1b[A\x1bOB\x1bx\t"), [Seq, Seq, Seq, Key(b'\t')]);
        assert_eq!(parse(b"\x1b\x1b[I"), [Esc, Focus(true)]);
        assert_eq!(parse(b"\x1b[1;5"), [Seq]);
        assert_eq!(Wake::of(Key(b'\r')), Wake::Agent);
        assert_eq!(Wake::of(Key(b'\n')), Wake::Agent);
        assert_eq!(Wake::of(Esc), Wake::Back);
        assert_eq!(Wake::of(Key(b'x')), Wake::Refresh);
    }

    #[test]
    fn a_full_width_line_is_not_erased_and_a_long_frame_is_cut_to_the_screen() {
        // At the last column an erase would eat the last character.
        let f = frame_bytes("abcd\nxy\nzz\n", "abcd\nxy\nzz\n", 4, 2, false);
        assert_eq!(f, "\x1b[Habcd\r\nxy\x1b[K");
        assert_eq!(frame_bytes("", "", 4, 2, false), "\x1b[H\x1b[J");
    }
}
