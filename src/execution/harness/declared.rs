//! A harness declared in config.toml (`[harness.NAME] command = "…"`): its command line is
//! its template, run by `sh -c`, with the prompt quoted once where `{prompt}` stands (or
//! after it). orange knows nothing else of it (its screen patterns, if any, come from
//! config.toml too).

use crate::adapters::shell;
use crate::execution::harness::kind::{AgentKind, Start};

/// The kind of every declared harness: it knows nothing (every default of
/// [`AgentKind`]).
pub struct Declared;

impl AgentKind for Declared {
    fn name(&self) -> &'static str {
        "declared"
    }
}

/// The argv of a declared harness: `template` (`respawn` instead on respawn, when
/// given), with the prompt — never given to a shell unquoted — in place of `{prompt}`, or
/// after it.
pub fn argv(
    template: &str,
    respawn: Option<&str>,
    prompt: Option<&str>,
    start: Start,
) -> Vec<String> {
    let template = match start {
        Start::Respawn => respawn.unwrap_or(template),
        Start::First => template,
    };
    let quoted = prompt.map(shell::quote).unwrap_or_default();
    let line = if template.contains("{prompt}") {
        template.replace("{prompt}", &quoted)
    } else if prompt.is_some() {
        format!("{template} {quoted}")
    } else {
        template.to_string()
    };
    vec!["sh".into(), "-c".into(), line]
}

/// The program a command starts, when its first word plainly names one (not an
/// assignment, a shell keyword or syntax): checked on PATH before a task is recorded.
pub fn command_program(command: &str) -> Option<&str> {
    let first = command.split_whitespace().next()?;
    let plain = first
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./+".contains(c));
    let keyword = matches!(
        first,
        "if" | "for" | "while" | "case" | "exec" | "env" | "command" | "time" | "nohup"
    );
    (plain && !keyword).then_some(first)
}
