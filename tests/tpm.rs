//! A real TPM install: Debian's `tmux-plugin-manager` clones this plugin from a local git
//! repository (a snapshot of the working tree's plugin files) into a private
//! TMUX_PLUGIN_MANAGER_PATH, then sources it, on a private tmux server whose user
//! (`$HOME/.tmux.conf`) lists it with `set -g @plugin`.

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use std::path::{Path, PathBuf};

use common::{bin, git, wait_for, TmuxServer, GIT_ENV};

/// Where Debian's package puts TPM (or `$ORANGE_TEST_TPM`).
fn tpm_dir() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("ORANGE_TEST_TPM").map(PathBuf::from),
        Some(PathBuf::from("/usr/share/tmux-plugin-manager")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|d| d.join("tpm").is_file() && d.join("bin/install_plugins").is_file())
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// A git repository named `orange` holding the working tree's plugin files as they are now
/// (committed or not), with their executable bits.
fn plugin_repo(root: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"));
    let repo = root.join("src").join("orange");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::copy(src.join("orange.tmux"), repo.join("orange.tmux")).unwrap();
    copy_tree(&src.join("tmux"), &repo.join("tmux"));
    copy_tree(&src.join("scripts"), &repo.join("scripts"));
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "orange plugin snapshot"]);
    repo
}

#[test]
fn tpm_installs_the_plugin_from_a_git_url_and_sources_it() {
    let tpm = tpm_dir();
    if !common::require(
        "TPM (apt-get install tmux-plugin-manager, or set ORANGE_TEST_TPM)",
        tpm.is_some(),
        "the plugin is installed by the real tmux plugin manager",
    ) {
        return;
    }
    let tpm = tpm.unwrap();
    let tmp = tempfile::Builder::new()
        .prefix("orange-tpm-")
        .tempdir()
        .unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let plugins = root.join("plugins");
    let repo = plugin_repo(&root);
    // TPM reads the plugin list from ~/.tmux.conf itself (an awk over the file), so the
    // user's config is where the plugin is named, as in the README.
    let url = format!("file://{}", repo.display());
    std::fs::write(
        home.join(".tmux.conf"),
        format!(
            "set -g @orange-bin '{bin}'\n\
             set -g @plugin '{url}'\n\
             set-environment -g TMUX_PLUGIN_MANAGER_PATH '{plugins}/'\n\
             run '{tpm}/tpm'\n",
            bin = bin().display(),
            plugins = plugins.display(),
            tpm = tpm.display(),
        ),
    )
    .unwrap();
    let mut env: Vec<(&str, &str)> = GIT_ENV.to_vec();
    let home_s = home.to_str().unwrap().to_string();
    env.push(("HOME", &home_s));
    env.push(("GIT_CONFIG_GLOBAL", "/dev/null"));
    let server = TmuxServer::start(&root, &env);
    // TmuxServer starts with its own (hostile) config; load the user's as tmux would.
    server.ok(&["source-file", home.join(".tmux.conf").to_str().unwrap()]);
    assert!(
        server
            .tmux(&["list-keys", "-T", "orange"])
            .stdout
            .is_empty(),
        "orange keys before the install"
    );

    // prefix + I runs bindings/install_plugins; the script behind it is bin/install_plugins.
    let install = format!(
        "{}/bin/install_plugins > {}/install.log 2>&1",
        tpm.display(),
        root.display()
    );
    server.ok(&["run-shell", &install]);
    let log = std::fs::read_to_string(root.join("install.log")).unwrap_or_default();
    eprintln!("install_plugins:\n{log}");
    let installed = plugins.join("orange");
    assert!(
        installed.join("orange.tmux").is_file(),
        "TPM did not clone the plugin into {}:\n{log}",
        installed.display()
    );
    assert!(log.contains("\"orange\" download success"), "{log}");

    // TPM sources every *.tmux of every plugin (as tmux does at start with `run tpm`).
    server.ok(&["run-shell", &format!("{}/tpm", tpm.display())]);
    wait_for("the orange key table", 10, || {
        !server
            .tmux(&["list-keys", "-T", "orange"])
            .stdout
            .is_empty()
    });
    let keys = server.ok(&["list-keys", "-T", "orange"]);
    for key in [" s ", " n ", " l ", " w ", " m ", " ? "] {
        assert!(
            keys.lines()
                .any(|l| l.split_whitespace().nth(3) == Some(key.trim())),
            "no {key:?} in the orange table:\n{keys}"
        );
    }
    let prefix_o = server.ok(&["list-keys", "-T", "prefix", "O"]);
    assert!(prefix_o.contains("switch-client -T orange"), "{prefix_o}");
    // The bindings point into TPM's copy of the plugin, and at the binary the user named.
    assert_eq!(
        server.ok(&["show", "-gv", "@orange_dir"]),
        installed.to_str().unwrap()
    );
    assert_eq!(
        server.ok(&["show", "-gv", "@orange_bin"]),
        bin().to_str().unwrap()
    );
    assert!(
        keys.contains(&format!("{}/tmux/run.sh", installed.display())),
        "{keys}"
    );
    let hooks = server.ok(&["show-hooks", "-g", "pane-died"]);
    assert!(hooks.contains(" hook pane-died --pane"), "{hooks}");
}
