//! Everything orange knows of opencode (`opencode`): its command line (`run` with a
//! prompt, `--auto`, `--continue` on respawn) and where it keeps its state (its XDG
//! directories). Its sessions live in a database orange does not read.

use std::path::{Path, PathBuf};

use crate::execution::harness::kind::{AgentKind, Options, Start};

pub struct Opencode;

impl AgentKind for Opencode {
    fn name(&self) -> &'static str {
        "opencode"
    }

    fn package(&self) -> &'static str {
        "opencode-ai"
    }

    fn options(&self, o: &Options) -> Vec<String> {
        let mut v: Vec<String> = vec![];
        if o.prompt {
            v.push("run".into());
        }
        v.push("--auto".into());
        if o.start == Start::Respawn {
            v.push("--continue".into());
        }
        v
    }

    fn state(&self, home: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
        (
            vec![
                home.join(".local/share/opencode"),
                home.join(".config/opencode"),
                home.join(".cache/opencode"),
                home.join(".local/state/opencode"),
            ],
            vec![],
        )
    }
}
