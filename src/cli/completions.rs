//! `orange completions bash|zsh|fish`: the shell completion script, generated from the
//! command-line definition itself (clap_complete), so it never lags behind it.

use clap::CommandFactory;

use super::args::{Cli, CompletionsArgs, Shell};
use super::context::Ctx;
use crate::error::Result;
use crate::ui::output::Out;

pub fn run(_ctx: &Ctx, a: CompletionsArgs) -> Result<Out> {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    let shell = match a.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(shell, &mut cmd, "orange", &mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    Ok(Out::new(
        serde_json::json!({"shell": format!("{:?}", a.shell).to_lowercase(), "script": text}),
        text,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every subcommand and every argument a person can see says what it is in `--help`:
    /// `--help` is where a newcomer learns the commands.
    #[test]
    fn every_help_entry_is_described() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for a in cmd.get_arguments() {
                let id = a.get_id().as_str();
                if a.is_hide_set() || matches!(id, "help" | "version") {
                    continue;
                }
                if a.get_help().is_none() && a.get_long_help().is_none() {
                    missing.push(format!("{path} <{id}>"));
                }
            }
            for sub in cmd.get_subcommands() {
                if sub.is_hide_set() || sub.get_name() == "help" {
                    continue;
                }
                let p = format!("{path} {}", sub.get_name());
                if sub.get_about().is_none() && sub.get_long_about().is_none() {
                    missing.push(p.clone());
                }
                walk(sub, &p, missing);
            }
        }
        let mut missing = vec![];
        walk(&Cli::command(), "orange", &mut missing);
        assert!(
            missing.is_empty(),
            "undescribed in --help:\n{}",
            missing.join("\n")
        );
    }
}
