//! The zellij adapter against a real zellij (`scripts/install-test-deps.sh` installs the
//! pinned version); without one the tests fail in CI and say SKIP elsewhere (never pass
//! silently).

// Tests run the programs they check (clippy.toml keeps `Command::new` in src/adapters/).
#![allow(clippy::disallowed_methods)]

use crate::common;

use orange::adapters::tmux::NewSession;
use orange::adapters::zellij::Zellij;

/// The real zellij, or None (the test returns) when it is missing outside CI; missing in
/// CI, the test fails (`common::require`).
fn real_zellij() -> Option<Zellij> {
    let z = Zellij::default();
    common::require(
        "zellij",
        z.is_available(),
        "the adapter drives a real zellij",
    )
    .then_some(z)
}

fn wait_for(what: &str, f: impl FnMut() -> bool) {
    common::wait_for(what, 20, f)
}

fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    )
}

struct Kill<'a>(&'a Zellij, String);
impl Drop for Kill<'_> {
    fn drop(&mut self) {
        let _ = self.0.kill(&self.1);
    }
}

#[test]
fn preflight_reports_backend_not_found_without_zellij() {
    let z = Zellij::with_binary("/nonexistent/zellij");
    let e = z.preflight().unwrap_err();
    assert_eq!(e.code(), "backend_not_found");
    assert!(e.to_string().contains("zellij"));
}

#[test]
fn create_exists_send_text_exit_status_and_kill() {
    let Some(z) = real_zellij() else { return };
    let dir = tempfile::tempdir().unwrap();
    let name = unique("orange-zj");
    let _guard = Kill(&z, name.clone());
    let exit_file = dir.path().join("exit");
    let out = dir.path().join("typed.txt");
    let hostile = "it's \"q\" $(touch pwned) `id`;";
    // The program: record its argv, then copy one typed line to a file and exit 3.
    let script = format!(
        "printf '%s\\n' \"$@\" > argv.txt; IFS= read -r line; printf '%s' \"$line\" > {}; exit 3",
        out.display()
    );
    z.create(
        &NewSession {
            name: name.clone(),
            cwd: dir.path().to_path_buf(),
            env: vec![("ORANGE_LANE_ID".into(), "l1".into())],
            command: vec![
                "sh".into(),
                "-c".into(),
                script,
                "sh".into(),
                hostile.into(),
                "two words".into(),
            ],
            width: None,
            height: None,
            marks: vec![],
        },
        &exit_file,
    )
    .unwrap();
    assert!(z.exists(&name).unwrap());
    assert!(!z.exists(&format!("{name}-x")).unwrap());
    // The shell creates argv.txt before printf writes to it: wait for its lines.
    let argv = || std::fs::read_to_string(dir.path().join("argv.txt")).unwrap_or_default();
    wait_for("argv.txt", || {
        argv().ends_with("\n") && argv().lines().count() >= 2
    });
    assert_eq!(argv(), format!("{hostile}\ntwo words\n"));
    assert!(!dir.path().join("pwned").exists());
    z.send_text(&name, "typed; with 'quotes'").unwrap();
    wait_for("the exit status file", || {
        exit_file.exists() && !std::fs::read_to_string(&exit_file).unwrap().is_empty()
    });
    assert_eq!(std::fs::read_to_string(&exit_file).unwrap().trim(), "3");
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "typed; with 'quotes'"
    );
    assert!(z.kill(&name).unwrap());
    assert!(!z.exists(&name).unwrap());
    assert!(!z.kill(&name).unwrap(), "killing twice is harmless");
}
