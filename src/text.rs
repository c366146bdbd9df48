//! Text from agents is data (DESIGN.md "Text from agents is data"): everything an agent, a
//! workspace, a transcript or a remote host wrote — TASK.md, summaries, outcomes, history
//! reasons, pane lines, branch names read back, error messages that quote them — is made
//! safe here, in one place, before it reaches a terminal or tmux. Every printer uses it:
//! the command-line output (`main.rs` passes every text through [`safe`]), errors,
//! the sidebar, the status-line values, menus and `display-message` texts
//! ([`for_tmux`]), and notifications (OSC payloads included). `--json` keeps the exact
//! text: JSON escapes control characters itself.
//!
//! Nothing is dropped: a control character is *shown*, never interpreted. C0 controls
//! become their Unicode "control pictures" (ESC → `␛`, BEL → `␇`, CR → `␍`), DEL → `␡`,
//! and a C1 control (U+0080–U+009F, the 8-bit forms of `ESC @` … `ESC _`) → `␛` and its
//! 7-bit letter. With its ESC shown, an escape sequence is inert text (`␛]0;PWNED␇`,
//! `␛[2J`): a person sees that something was there, and a sequence left unterminated
//! cannot swallow the text after it (which a parser that drops sequences would let it do).
//! Bidirectional overrides and the Unicode line and paragraph separators, which reorder or
//! break what a terminal shows, become `�`.
//!
//! Text typed INTO an agent (`task send`, nudges, every later message) goes through
//! [`for_agent`] instead: there the controls are removed, not shown (the agent reads the
//! words; a picture of ESC in its prompt would only confuse it).

use std::borrow::Cow;

/// Multi-line text (TASK.md, a pane's last lines): newlines and tabs kept, every other
/// control character and escape shown visibly.
pub fn safe(s: &str) -> Cow<'_, str> {
    clean(s, Lines::Keep)
}

/// One line (a table cell, an error, a status-line value, a notification): as [`safe`],
/// and a newline shown as `␤`, a tab as a space.
pub fn safe_line(s: &str) -> Cow<'_, str> {
    clean(s, Lines::Join)
}

/// One line for tmux, which also reads `#` as the start of a format or a style: as
/// [`safe_line`], with `#` doubled (`##` is a literal `#`).
pub fn for_tmux(s: &str) -> String {
    safe_line(s).replace('#', "##")
}

/// A file's bytes as text: invalid UTF-8 shown as `�`, never the whole text dropped.
pub fn lossy(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// Text to be typed into an agent (`task send`, a nudge): what a terminal would interpret
/// is removed, not shown — the agent gets the words, never a keystroke hidden in them.
/// `\r\n` and a lone `\r` become `\n`, as do the Unicode line and paragraph separators;
/// every other control character (ESC of an escape sequence, BEL, DEL, C1) and the
/// bidirectional overrides are dropped; newlines and tabs are kept; blank lines and spaces
/// around the whole text are trimmed.
pub fn for_agent(s: &str) -> String {
    let s = s.replace("\r\n", "\n");
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            '\r' | '\u{2028}' | '\u{2029}' => out.push('\n'),
            c if shown(c).is_some() => {}
            c => out.push(c),
        }
    }
    out.trim().to_string()
}

/// Whether `s` holds a control character other than newline and tab (the test for text
/// orange would type into an agent or store as a summary).
pub fn has_controls(s: &str) -> bool {
    s.chars().any(|c| c.is_control() && c != '\n' && c != '\t')
}

#[derive(Clone, Copy, PartialEq)]
enum Lines {
    Keep,
    Join,
}

fn clean(s: &str, lines: Lines) -> Cow<'_, str> {
    let needs = |c: char| match c {
        '\n' | '\t' => lines == Lines::Join,
        c => shown(c).is_some(),
    };
    if !s.chars().any(needs) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match (c, lines) {
            ('\n' | '\t', Lines::Keep) => out.push(c),
            ('\n', Lines::Join) => out.push('␤'),
            ('\t', Lines::Join) => out.push(' '),
            _ => match shown(c) {
                Some(v) => out.push_str(&v),
                None => out.push(c),
            },
        }
    }
    Cow::Owned(out)
}

/// How a character that a terminal would interpret is shown; `None`: it is plain text.
/// Newline and tab are decided by the caller.
fn shown(c: char) -> Option<String> {
    let u = c as u32;
    match u {
        // C0: its control picture (U+2400 + code): ␀ … ␟, ESC → ␛.
        0x00..=0x1f => char::from_u32(0x2400 + u).map(String::from),
        0x7f => Some("␡".into()),
        // C1: the 7-bit form it stands for (U+009B, CSI, is ESC [).
        0x80..=0x9f => Some(format!("␛{}", char::from_u32(u - 0x40).unwrap_or('?'))),
        0x202a..=0x202e | 0x2066..=0x2069 | 0x2028 | 0x2029 => Some("\u{fffd}".into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the issue saw in TASK.md: a window title, a screen clear, a clipboard write.
    const HOSTILE: &str =
        "a\x1b]0;PWNED\x07b\x1b[2Jc\x1b]52;c;cHduZWQ=\x07d\u{9b}31me\x7ff\r\u{202e}g";

    fn no_terminal_controls(s: &str) -> bool {
        let bidi = |c: char| matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        let control = |c: char| c.is_control() && c != '\n' && c != '\t';
        !s.chars().any(|c| bidi(c) || control(c))
    }

    #[test]
    fn escapes_and_controls_are_shown_never_interpreted() {
        let s = safe(HOSTILE);
        assert!(no_terminal_controls(&s), "{s:?}");
        assert_eq!(s, "a␛]0;PWNED␇b␛[2Jc␛]52;c;cHduZWQ=␇d␛[31me␡f␍�g");
    }

    #[test]
    fn lines_are_kept_or_joined() {
        assert_eq!(safe("a\nb\tc"), "a\nb\tc");
        assert_eq!(safe_line("a\nb\tc"), "a␤b c");
        assert!(matches!(safe("plain text, 名前"), Cow::Borrowed(_)));
        assert!(matches!(safe_line("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn tmux_text_never_opens_a_format() {
        assert_eq!(
            for_tmux("#{pane_id}#[fg=red]\x1b[1m"),
            "##{pane_id}##[fg=red]␛[1m"
        );
    }

    #[test]
    fn invalid_utf8_is_shown_lossily() {
        assert_eq!(lossy(b"ok \xff end".to_vec()), "ok \u{fffd} end");
        assert_eq!(lossy(b"fine".to_vec()), "fine");
    }

    #[test]
    fn controls_are_told() {
        assert!(has_controls("a\x1bb"));
        assert!(has_controls("a\u{9b}b"));
        assert!(!has_controls("line\nnext\ttab"));
    }

    #[test]
    fn text_for_an_agent_keeps_the_words_and_drops_the_controls() {
        assert_eq!(for_agent(HOSTILE), "a]0;PWNEDb[2Jc]52;c;cHduZWQ=d31mef\ng");
        assert_eq!(
            for_agent("  one\r\ntwo\rthree\u{2028}four\n\n"),
            "one\ntwo\nthree\nfour"
        );
        assert_eq!(
            for_agent("tab\there $(x) `y` \"q\" ; \\"),
            "tab\there $(x) `y` \"q\" ; \\"
        );
        assert_eq!(for_agent("\x1b\x07\x00"), "");
    }

    proptest::proptest! {
        #[test]
        fn nothing_interpretable_survives(s in proptest::prelude::any::<String>()) {
            let a = safe(&s);
            let b = safe_line(&s);
            let c = for_agent(&s);
            proptest::prop_assert!(no_terminal_controls(&a));
            proptest::prop_assert!(no_terminal_controls(&b));
            proptest::prop_assert!(no_terminal_controls(&c));
            proptest::prop_assert!(!b.contains('\n'));
        }
    }
}
