//! What a pane shows ([`Tmux::capture_pane`], [`Tmux::capture_panes`]) and what is typed
//! into it ([`Tmux::send_text_then`]): always the resolved pane, never a fallback to another;
//! and the paste buffers that carry text ([`Tmux::take_buffer`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tmux_interface as ti;

use super::handle::Tmux;
use super::parse::RS;
use super::target::pane_target;
use crate::adapters::mux::submit_pause;
use crate::error::{OrangeError, Result};

/// Pause after keys sent before a text (such as `C-u`), so the program does not read them
/// together with the text (an `Escape` followed at once by text reads as Alt+key).
const ESCAPE_SETTLE: Duration = Duration::from_millis(100);

static BUFFER_SEQ: AtomicU64 = AtomicU64::new(0);

/// A capture's text: trailing spaces of each line and trailing blank lines removed.
fn trimmed(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    lines.join("\n").trim_end_matches('\n').to_string()
}

// Reading and typing into panes.
impl Tmux {
    /// The pane's text (`capture-pane -p -J`) with `scrollback_lines` of history above the
    /// visible screen. Trailing spaces of each line and trailing blank lines are removed.
    pub fn capture_pane(&self, target: &str, scrollback_lines: usize) -> Result<String> {
        let mut b = ti::CapturePane::new()
            .stdout()
            .join()
            .target_pane(pane_target(target));
        if scrollback_lines > 0 {
            b = b.start_line(format!("-{scrollback_lines}"));
        }
        let out = self.run(vec![b.build()])?;
        Ok(trimmed(&out))
    }

    /// The visible text of several panes (`capture-pane -p -J` each) in ONE tmux process,
    /// in the order given; `None` for a pane that is gone (then each is read alone).
    pub fn capture_panes(&self, panes: &[&str]) -> Result<Vec<Option<String>>> {
        if panes.is_empty() {
            return Ok(Vec::new());
        }
        let mark = format!("{RS}orange-capture-end{RS}");
        let mut cmds = Vec::new();
        for p in panes {
            cmds.push(
                ti::CapturePane::new()
                    .stdout()
                    .join()
                    .target_pane(pane_target(p))
                    .build(),
            );
            cmds.push(
                ti::DisplayMessage::new()
                    .print()
                    .message(mark.as_str())
                    .build(),
            );
        }
        let ran = self.exec(cmds)?;
        if !ran.success {
            // One pane went away between the snapshot and now: tmux stopped at it.
            return Ok(panes.iter().map(|p| self.capture_pane(p, 0).ok()).collect());
        }
        let out = ran.ok()?;
        let mut texts: Vec<Option<String>> = out
            .split(&format!("{mark}\n"))
            .map(|t| Some(trimmed(t)))
            .collect();
        texts.truncate(panes.len());
        texts.resize(panes.len(), None);
        Ok(texts)
    }

    /// Type `text` into a pane and submit it with `submit` (a tmux key name, such as
    /// `Enter`), as reliably as tmux allows (an error for a missing or dead pane, never a
    /// fallback to another one): leave copy mode if the pane is in it, `keys_before` first
    /// (a harness's own way to clear a half-typed prompt, e.g. `C-u`; never `Escape` for
    /// Claude Code, where it means "No, exit" on a dialog and rejects a pending tool call),
    /// the text literally (`send-keys -l`; text with a newline or a tab is pasted as one
    /// bracketed paste so it arrives whole: typed, a newline would submit it in pieces and
    /// a tab would be the program's completion key), a pause growing with the text's length
    /// ([`submit_pause`]), then `submit` as a separate key.
    pub fn send_text_then(
        &self,
        target: &str,
        text: &str,
        keys_before: &[&str],
        submit: &str,
    ) -> Result<()> {
        // Resolve once: every later step goes to this pane id, never to a name again.
        let row = self.require_pane_fields(target, &["pane_id", "pane_in_mode", "pane_dead"])?;
        let pane = row[0].clone();
        if row[2] == "1" {
            // tmux would accept the keys and drop them.
            return Err(OrangeError::BackendCommandFailed(format!(
                "tmux pane {pane} ({target}) is dead: its program has exited"
            )));
        }
        if row[1] == "1" {
            let mut cancel = ti::SendKeys::new().target_pane(pane.as_str()).build();
            cancel.push_flag("-X");
            cancel.push_param("cancel");
            self.run(vec![cancel])?;
        }
        if !keys_before.is_empty() {
            let mut keys = ti::SendKeys::new().target_pane(pane.as_str()).build();
            for k in keys_before {
                keys.push_param(*k);
            }
            self.run(vec![keys])?;
            std::thread::sleep(ESCAPE_SETTLE);
        }
        let text = text.replace("\r\n", "\n");
        if text.contains(['\n', '\r', '\t']) {
            self.paste(&pane, &text)?;
        } else if !text.is_empty() {
            let mut keys = ti::SendKeys::new()
                .disable_lookup()
                .target_pane(pane.as_str())
                .build();
            keys.push_param("--");
            keys.push_param(text.as_str());
            self.run(vec![keys])?;
        }
        if !text.is_empty() {
            std::thread::sleep(submit_pause(text.len()));
        }
        self.run(vec![ti::SendKeys::new()
            .target_pane(pane.as_str())
            .key(submit)
            .build()])?;
        Ok(())
    }

    /// The text of paste buffer `name`, which is deleted (`None`: there is no such buffer).
    pub fn take_buffer(&self, name: &str) -> Result<Option<String>> {
        let show = ti::ShowBuffer::new().buffer_name(name).build();
        let ran = self.exec(vec![show])?;
        if !ran.success {
            return Ok(None);
        }
        let text = ran.ok()?;
        self.run(vec![ti::DeleteBuffer::new().buffer_name(name).build()])?;
        Ok(Some(text))
    }

    /// Paste `text` into `pane` through a private buffer: bracketed (`-p`) when the program
    /// asked for bracketed paste, newlines kept as they are (`-r`), buffer deleted (`-d`).
    fn paste(&self, pane: &str, text: &str) -> Result<()> {
        let buffer = format!(
            "orange-send-{}-{}",
            std::process::id(),
            BUFFER_SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let mut set = ti::SetBuffer::new().buffer_name(buffer.as_str()).build();
        set.push_param("--");
        set.push_param(text);
        let paste = ti::PasteBuffer::new()
            .delete()
            .bracket_codes()
            .no_replacement()
            .buffer_name(buffer.as_str())
            .target_pane(pane)
            .build();
        let ran = self.exec(vec![set, paste])?;
        if !ran.success {
            // The paste failed after the buffer was set: do not leave the text behind. Its
            // own failure (buffer never created) changes nothing, so its status is moot.
            let _ = self.exec(vec![ti::DeleteBuffer::new()
                .buffer_name(buffer.as_str())
                .build()]);
            return Err(ran.error());
        }
        Ok(())
    }
}
