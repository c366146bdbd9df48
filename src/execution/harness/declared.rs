//! A harness declared in config.toml (`[harness.NAME] command = "…"`): its command line is
//! its template, run by `sh -c`, with the prompt and the task's branch, workspace, id,
//! port and project each quoted once where `{prompt}`, `{branch}`, … stand (the prompt
//! after the command when the template does not name it). orange knows nothing else of it (its screen patterns, if any, come from
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

/// What a declared harness's template may name, each in braces: `{prompt}`, `{branch}`,
/// `{workspace}`, `{task_id}` (a lane's id for a lane), `{port}` (empty outside a pooled
/// slot) and `{project}`. Each value is shell-quoted once, so a hostile branch name or
/// prompt stays one argument.
pub const PLACEHOLDERS: [&str; 6] = [
    "prompt",
    "branch",
    "workspace",
    "task_id",
    "port",
    "project",
];

/// The values of a template's placeholders (the prompt is given apart: when the template
/// does not name it, it goes after the command).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Places {
    pub branch: String,
    pub workspace: String,
    pub task_id: String,
    pub port: Option<u16>,
    pub project: String,
    /// Not a placeholder: the directory orange owns for the agent (see
    /// `kind::Options::agent_dir`), for a built-in program's own files.
    pub agent_dir: Option<std::path::PathBuf>,
}

impl Places {
    fn value(&self, name: &str, prompt: &str) -> Option<String> {
        Some(match name {
            "prompt" => prompt.to_string(),
            "branch" => self.branch.clone(),
            "workspace" => self.workspace.clone(),
            "task_id" => self.task_id.clone(),
            "port" => self.port.map(|p| p.to_string()).unwrap_or_default(),
            "project" => self.project.clone(),
            _ => return None,
        })
    }
}

/// One piece of a template: text as it is, or a placeholder's name.
#[derive(Debug, PartialEq)]
enum Piece<'a> {
    Text(std::borrow::Cow<'a, str>),
    Place(&'a str),
}

/// Split `template` into text and `{name}` placeholders. `{{` and `}}` are a literal
/// brace; the shell's own `${var}` and braces around anything but a plain name (`{a,b}`,
/// `{ cmd; }`) are left as they are. An unknown `{name}` is an error naming it.
fn pieces(template: &str) -> Result<Vec<Piece<'_>>, String> {
    use std::borrow::Cow;
    let mut out = vec![];
    let mut text_from = 0;
    let mut i = 0;
    let b = template.as_bytes();
    while i < b.len() {
        let doubled = i + 1 < b.len() && b[i + 1] == b[i];
        if (b[i] == b'{' || b[i] == b'}') && doubled {
            out.push(Piece::Text(Cow::Borrowed(&template[text_from..=i])));
            i += 2;
            text_from = i;
            continue;
        }
        if b[i] == b'{' && (i == 0 || b[i - 1] != b'$') {
            let rest = &template[i + 1..];
            let len = rest
                .bytes()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_')
                .count();
            if len > 0 && rest.as_bytes().get(len) == Some(&b'}') {
                let name = &rest[..len];
                if !PLACEHOLDERS.contains(&name) {
                    return Err(format!(
                        "unknown placeholder {{{name}}}: a template may name {}; write {{{{ and }}}} for a literal brace",
                        PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(", ")
                    ));
                }
                out.push(Piece::Text(Cow::Borrowed(&template[text_from..i])));
                out.push(Piece::Place(name));
                i += len + 2;
                text_from = i;
                continue;
            }
        }
        i += 1;
    }
    out.push(Piece::Text(Cow::Borrowed(&template[text_from..])));
    Ok(out)
}

/// Is `template` one orange can fill? The error names the unknown placeholder.
pub fn check(template: &str) -> Result<(), String> {
    pieces(template).map(|_| ())
}

/// The argv of a declared harness: `template` (`respawn` instead on respawn, when
/// given), each placeholder replaced by its value shell-quoted once (the prompt is never
/// given to a shell unquoted), the prompt after the command when the template does not
/// name it. The templates were checked when the harness was read ([`check`]); a
/// placeholder unknown here is left out.
pub fn argv(
    template: &str,
    respawn: Option<&str>,
    prompt: Option<&str>,
    start: Start,
    places: &Places,
) -> Vec<String> {
    let template = match start {
        Start::Respawn => respawn.unwrap_or(template),
        Start::First => template,
    };
    let pieces = pieces(template).unwrap_or_else(|_| vec![Piece::Text(template.into())]);
    let mut line = String::new();
    let mut named_prompt = false;
    for piece in &pieces {
        match piece {
            Piece::Text(t) => line.push_str(t),
            // No prompt: `{prompt}` is gone, not an empty argument.
            Piece::Place("prompt") if prompt.is_none() => named_prompt = true,
            Piece::Place(name) => {
                named_prompt |= *name == "prompt";
                let value = places.value(name, prompt.unwrap_or_default());
                line.push_str(&shell::quote(&value.unwrap_or_default()));
            }
        }
    }
    if let (Some(p), false) = (prompt, named_prompt) {
        line = format!("{line} {}", shell::quote(p));
    }
    // /bin/sh by its path: a session runs it as it is (see the tmux adapter), one shell
    // fewer than `sh` looked up by another shell.
    vec!["/bin/sh".into(), "-c".into(), line]
}

/// `options` (a built-in's event channel), each shell-quoted, right after `program` when
/// the `sh -c` line starts with it as a word (`codex -a untrusted …`); any other line
/// (another program, a wrapper, an assignment first) is left as it is.
pub fn with_options(mut argv: Vec<String>, program: &str, options: &[String]) -> Vec<String> {
    let Some(line) = argv.get_mut(2) else {
        return argv;
    };
    let starts = line
        .strip_prefix(program)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']));
    if starts && !options.is_empty() {
        let quoted: Vec<String> = options.iter().map(|o| shell::quote(o)).collect();
        *line = format!("{program} {}{}", quoted.join(" "), &line[program.len()..]);
    }
    argv
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

#[cfg(test)]
mod tests {
    use super::*;

    fn places() -> Places {
        Places {
            branch: "feat/$(touch pwned); it's".into(),
            workspace: "/w/app--2".into(),
            task_id: "3fa2".into(),
            port: Some(3102),
            project: "app".into(),
            agent_dir: None,
        }
    }

    #[test]
    fn every_placeholder_is_filled_and_quoted_once() {
        let line = &argv(
            "run {branch} {workspace} {task_id} {port} {project} -- {prompt}",
            None,
            Some("do x"),
            Start::First,
            &places(),
        )[2];
        assert_eq!(
            line,
            r"run 'feat/$(touch pwned); it'\''s' /w/app--2 3fa2 3102 app -- 'do x'"
        );
        // Outside a pooled slot, `{port}` is an empty argument, still one.
        let no_port = Places {
            port: None,
            ..places()
        };
        assert_eq!(
            argv("a {port} b", None, None, Start::First, &no_port)[2],
            "a '' b"
        );
    }

    #[test]
    fn shell_braces_stay_and_doubled_braces_are_literal() {
        let p = places();
        let line = |t: &str| argv(t, None, None, Start::First, &p)[2].clone();
        assert_eq!(
            line("echo ${HOME} {a,b} { x; }"),
            "echo ${HOME} {a,b} { x; }"
        );
        assert_eq!(line("awk '{{print}}' {project}"), "awk '{print}' app");
        assert_eq!(line("x {{branch}}"), "x {branch}");
    }

    /// A built-in's channel (codex's hooks) goes right after its program's name, quoted;
    /// a line that starts with anything else is left as it is.
    #[test]
    fn channel_options_follow_the_program_word_only() {
        let p = places();
        let opts = vec!["--x".to_string(), "a={b c}".to_string()];
        let run = |t: &str| {
            with_options(argv(t, None, Some("hi"), Start::First, &p), "codex", &opts)[2].clone()
        };
        assert_eq!(
            run("codex -a untrusted --"),
            "codex --x 'a={b c}' -a untrusted -- hi"
        );
        assert_eq!(run("codexx -a"), "codexx -a hi");
        assert_eq!(run("env X=1 codex"), "env X=1 codex hi");
    }

    #[test]
    fn an_unknown_placeholder_is_named() {
        let err = check("agent --on {brnch} {prompt}").unwrap_err();
        assert!(err.contains("{brnch}"), "{err}");
        assert!(err.contains("{branch}") && err.contains("{{"), "{err}");
        assert!(check("awk '{print}'").is_err());
        assert!(check("awk '{{print}}' {prompt} ${X}").is_ok());
    }
}
