//! `$ORANGE_HOME/config.toml`: user harnesses and defaults (policies come with the monitor).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::error::{OrangeError, Result};
use crate::store::Home;

#[derive(Debug, Default, Clone, Deserialize)]
pub struct Config {
    /// Harness used when `--harness` is not given.
    #[serde(default)]
    pub default_harness: Option<String>,
    #[serde(default)]
    pub harness: BTreeMap<String, HarnessConfig>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct HarnessConfig {
    /// Shell command line; `{prompt}` is replaced by the shell-quoted prompt
    /// (appended when absent).
    pub command: String,
    /// Command used by `orange task respawn` (default: `command`).
    #[serde(default)]
    pub respawn_command: Option<String>,
}

impl Config {
    /// Read `config.toml`; a missing file is the default configuration.
    pub fn load(home: &Home) -> Result<Config> {
        let path = home.config_file();
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(e) => return Err(OrangeError::io(format!("reading {}", path.display()), e)),
        };
        Self::parse(&text).map_err(|detail| OrangeError::StateCorrupt { path, detail })
    }

    pub fn parse(text: &str) -> Result<Config, String> {
        let cfg: Config = toml::from_str(text).map_err(|e| e.to_string())?;
        for (name, h) in &cfg.harness {
            if h.command.trim().is_empty() {
                return Err(format!("harness.{name}.command is empty"));
            }
        }
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_user_harnesses() {
        let c = Config::parse(
            "default_harness = \"mine\"\n[harness.mine]\ncommand = \"mine --yes {prompt}\"\n",
        )
        .unwrap();
        assert_eq!(c.default_harness.as_deref(), Some("mine"));
        assert_eq!(c.harness["mine"].command, "mine --yes {prompt}");
        assert!(Config::parse("[harness.x]\ncommand = \"  \"\n").is_err());
        assert!(Config::parse("[harness.x\n").is_err());
        assert!(Config::parse("").unwrap().harness.is_empty());
    }
}
