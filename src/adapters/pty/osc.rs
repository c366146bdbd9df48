//! The OSC 7501 sequences in a program's output, found as the output streams by: the
//! capability probe (`ESC ] 7501 ; ? BEL`) and the status reports (`ESC ] 7501 ; state=…
//! BEL`, or ended by ST `ESC \`), each whole even when a read split it. Everything else
//! passes by untouched: the scanner only looks, and the relay forwards every byte as read.
//!
//! Cheap on the hot path: between sequences it jumps from one ESC to the next (`memchr`)
//! and looks at the byte after it; only inside an OSC 7501 does it go byte by byte.

/// What follows `ESC ]` in a sequence of ours.
const PREFIX: &[u8] = b"7501;";
/// The longest payload kept (claude's longest: a 2,048-character message in base64 and a
/// title); a longer one is dropped whole.
pub const MAX_PAYLOAD: usize = 8192;

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;
/// CAN and SUB cancel a sequence (ECMA-48).
const CAN: u8 = 0x18;
const SUB: u8 = 0x1a;

/// One sequence found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// The capability query: the terminal is asked whether it reads the reports (its
    /// payload starts with `?`).
    Probe,
    /// A report's payload (`state=working:app=claude-code…`), without its terminator.
    Report(Vec<u8>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Plain output, or a sequence that is not ours.
    Ground,
    /// Just after an ESC.
    Esc,
    /// After `ESC ]` and this many bytes of [`PREFIX`].
    Prefix(usize),
    /// Inside the payload.
    Payload,
    /// An ESC inside the payload: `\` ends it (ST), anything else cancels it.
    PayloadEsc,
}

/// The scanner's state between reads.
#[derive(Debug)]
pub struct Scanner {
    step: Step,
    payload: Vec<u8>,
    too_long: bool,
}

impl Default for Scanner {
    fn default() -> Self {
        Scanner {
            step: Step::Ground,
            payload: Vec::new(),
            too_long: false,
        }
    }
}

impl Scanner {
    /// Look at the next bytes of output; `found` gets each sequence that ends in them.
    pub fn feed(&mut self, bytes: &[u8], found: &mut impl FnMut(Found)) {
        let mut i = 0;
        while i < bytes.len() {
            if self.step == Step::Ground {
                match memchr::memchr(ESC, &bytes[i..]) {
                    Some(at) => {
                        i += at + 1;
                        self.step = Step::Esc;
                    }
                    None => return,
                }
                continue;
            }
            let b = bytes[i];
            i += 1;
            self.step = match self.step {
                Step::Ground => Step::Ground,
                Step::Esc => match b {
                    b']' => Step::Prefix(0),
                    ESC => Step::Esc,
                    _ => Step::Ground,
                },
                Step::Prefix(n) => match b {
                    _ if b == PREFIX[n] && n + 1 == PREFIX.len() => {
                        self.payload.clear();
                        self.too_long = false;
                        Step::Payload
                    }
                    _ if b == PREFIX[n] => Step::Prefix(n + 1),
                    ESC => Step::Esc,
                    _ => Step::Ground,
                },
                Step::Payload => match b {
                    BEL => self.end(found),
                    ESC => Step::PayloadEsc,
                    CAN | SUB => Step::Ground,
                    _ => {
                        if self.payload.len() < MAX_PAYLOAD {
                            self.payload.push(b);
                        } else {
                            self.too_long = true;
                        }
                        Step::Payload
                    }
                },
                Step::PayloadEsc => match b {
                    b'\\' => self.end(found),
                    // Another sequence began: ours is cancelled, that one is read.
                    b']' => Step::Prefix(0),
                    ESC => Step::Esc,
                    _ => Step::Ground,
                },
            };
        }
    }

    fn end(&mut self, found: &mut impl FnMut(Found)) -> Step {
        if !self.too_long {
            if self.payload.first() == Some(&b'?') {
                found(Found::Probe);
            } else {
                found(Found::Report(std::mem::take(&mut self.payload)));
            }
        }
        self.payload.clear();
        Step::Ground
    }
}

/// The reply that tells the program its reports are read (what the pinned claude waits
/// for: an OSC 7501 whose payload starts with `?`).
pub const PROBE_REPLY: &[u8] = b"\x1b]7501;?\x07";

/// Whether a report's payload is about the program itself, not one of its children (a
/// field `id=…`: claude's sub-agents).
pub fn is_root(payload: &[u8]) -> bool {
    !payload.split(|b| *b == b':').any(|f| f.starts_with(b"id="))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(chunks: &[&[u8]]) -> Vec<Found> {
        let mut s = Scanner::default();
        let mut out = vec![];
        for c in chunks {
            s.feed(c, &mut |f| out.push(f));
        }
        out
    }

    fn report(p: &str) -> Found {
        Found::Report(p.as_bytes().to_vec())
    }

    /// claude 2.1.330's own bytes: the probe in one write with XTVERSION, the kitty
    /// keyboard query and DA1; its reports ended by BEL.
    #[test]
    fn the_probe_and_reports_are_found_among_other_sequences() {
        let out = scan(&[
            b"\x1b[2C\x1b[>0q\x1b[?u\x1b]7501;?\x07\x1b[c\x1b]0;title\x07",
            b"text \x1b]7501;state=idle:app=claude-code\x07 more",
            b"\x1b]7501;state=working:app=claude-code:progress=40\x1b\\",
        ]);
        assert_eq!(
            out,
            vec![
                Found::Probe,
                report("state=idle:app=claude-code"),
                report("state=working:app=claude-code:progress=40"),
            ]
        );
    }

    /// A sequence split at every byte reads as the whole one.
    #[test]
    fn a_report_split_anywhere_still_parses() {
        let whole: &[u8] = b"ab\x1b[0m\x1b]7501;state=blocked:app=claude-code:kind=permission\x1b\\z\x1b]7501;?\x07";
        for cut in 0..whole.len() {
            let (a, b) = whole.split_at(cut);
            assert_eq!(
                scan(&[a, b]),
                vec![
                    report("state=blocked:app=claude-code:kind=permission"),
                    Found::Probe
                ],
                "cut at {cut}"
            );
        }
        let bytes: Vec<&[u8]> = whole.chunks(1).collect();
        assert_eq!(scan(&bytes).len(), 2);
    }

    /// Other OSCs, cancelled and overlong sequences, an ESC inside the payload: nothing
    /// found, and the scanner reads what comes after them.
    #[test]
    fn hostile_and_foreign_sequences_are_not_taken_for_reports() {
        let long = format!(
            "\x1b]7501;state=idle:msg={}\x07",
            "A".repeat(MAX_PAYLOAD + 1)
        );
        let out = scan(&[
            b"\x1b]750;state=idle\x07\x1b]75011;x\x07\x1b]7501state=idle\x07",
            b"\x1b]7501;state=working\x18\x1b]7501;state=error\x1a",
            long.as_bytes(),
            b"\x1b]7501;state=idle\x1b[31m",
            b"\x1b\x1b]7501;state=done:app=x\x07",
        ]);
        assert_eq!(out, vec![report("state=done:app=x")]);
        // An OSC 7501 cut off by the start of another is that other one.
        assert_eq!(
            scan(&[b"\x1b]7501;state=idle\x1b]7501;state=working\x07"]),
            vec![report("state=working")]
        );
        // Control characters inside a payload are kept as bytes: the reader decides.
        assert_eq!(
            scan(&[b"\x1b]7501;state=idle:msg=\x01\x02\r\n\x07"]),
            vec![report("state=idle:msg=\x01\x02\r\n")]
        );
    }

    #[test]
    fn child_reports_are_told_from_the_program_s_own() {
        assert!(is_root(b"state=idle:app=claude-code"));
        assert!(!is_root(b"state=working:app=claude-code:id=agent-1"));
        assert!(!is_root(b"state=clear:id=agent-1"));
        assert!(is_root(b"state=working:title=aWQ9eA=="));
    }
}
