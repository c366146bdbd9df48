//! The README, CONTRIBUTING.md and docs/*.md say what is true: every `orange …` command in
//! their code blocks exists with the flags it is shown with, every `@orange-*` option they
//! name is one the plugin reads, every script and source or test file they name exists,
//! and every link between them leads to a file (and a heading) that exists. The README
//! stays a front door (at most 200 lines, linking every page of docs/), and its picture of
//! the demo uses the labels the sidebar really draws and the icons the status line really
//! shows, in their order. The usage page's project, workspace and task commands are walked
//! on a sandbox as written.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::common::{self, TaskEnv};

const README_MAX_LINES: usize = 200;

/// Flags that exist but that `--help` does not show, because orange passes them itself.
const HIDDEN: &[(&str, &str)] = &[("serve", "--broker")];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn readme() -> String {
    read("README.md")
}

/// The pages of docs/, by their path from the repository's root (`docs/usage.md`), sorted.
fn docs_pages() -> Vec<String> {
    let mut pages: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("a docs/ folder")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    pages.sort();
    pages
}

/// Every document a reader of the repository is pointed to: (path, text).
fn documents() -> Vec<(String, String)> {
    let mut names = vec!["README.md".to_string(), "CONTRIBUTING.md".to_string()];
    names.extend(docs_pages());
    names.into_iter().map(|n| (n.clone(), read(&n))).collect()
}

/// The lines of a document's fenced code blocks (any language).
fn code_lines(text: &str) -> Vec<String> {
    let mut inside = false;
    let mut out = vec![];
    for l in text.lines() {
        if l.trim_start().starts_with("```") {
            inside = !inside;
            continue;
        }
        if inside {
            out.push(l.to_string());
        }
    }
    out
}

/// The inline code spans of a document's prose (outside its code blocks) that are an
/// `orange …` command: `orange task explain ID`.
fn inline_commands(text: &str) -> Vec<String> {
    let mut inside = false;
    let mut out = vec![];
    for l in text.lines() {
        if l.trim_start().starts_with("```") {
            inside = !inside;
            continue;
        }
        if !inside {
            out.extend(
                l.split('`')
                    .skip(1)
                    .step_by(2)
                    .filter(|span| span.starts_with("orange "))
                    .map(str::to_string),
            );
        }
    }
    out
}

/// `orange` invocations on a code line: the words from `orange` to the end of the command
/// (a `;`, `|`, `&&`, `#` or a closing backtick ends it).
fn invocations(line: &str) -> Vec<Vec<String>> {
    let mut out = vec![];
    // A shell or tmux comment is prose.
    let line = match line.find(" #") {
        Some(i) => &line[..i],
        None if line.trim_start().starts_with('#') => "",
        None => line,
    };
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut i = 0;
    while i < words.len() {
        let w = words[i].trim_start_matches(['`', '(', '$']);
        if w == "orange" {
            let mut cmd = vec![];
            for w in &words[i + 1..] {
                if w.starts_with('#') || matches!(*w, ";" | "|" | "&&" | "||") {
                    break;
                }
                let end = w.ends_with(['`', ';', ')']);
                cmd.push(w.trim_end_matches(['`', ';', ')']).to_string());
                if end {
                    break;
                }
            }
            out.push(cmd);
        }
        i += 1;
    }
    out
}

#[test]
fn every_orange_command_in_the_docs_exists_with_its_flags() {
    let env = TaskEnv::new();
    let mut checked = BTreeSet::new();
    let docs = documents();
    let lines = docs.iter().flat_map(|(doc, text)| {
        let mut lines = code_lines(text);
        lines.extend(inline_commands(text));
        lines.into_iter().map(move |l| (doc, l))
    });
    for (doc, line) in lines {
        for cmd in invocations(&line) {
            // The subcommand path: the leading lowercase words (arguments are placeholders,
            // ids, quoted text).
            let path: Vec<&str> = cmd
                .iter()
                .take_while(|w| {
                    w.chars().all(|c| c.is_ascii_lowercase() || c == '-') && !w.starts_with('-')
                })
                .map(String::as_str)
                .take(2)
                .collect();
            if path.is_empty() {
                continue;
            }
            let mut args = path.clone();
            args.push("--help");
            let out = env.cmd_in(&env.repo, &args).output().unwrap();
            let help = String::from_utf8_lossy(&out.stdout).into_owned();
            // A two-word path whose second word is an argument (`orange sidebar toggle`):
            // the first word's help must then accept it.
            let help = if out.status.success() {
                help
            } else {
                let out = env
                    .cmd_in(&env.repo, &[path[0], "--help"])
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "{doc}: `orange {}` does not exist (from: {line})",
                    path.join(" ")
                );
                String::from_utf8_lossy(&out.stdout).into_owned()
            };
            for flag in cmd.iter().filter(|w| w.starts_with("--")) {
                let name = flag.split('=').next().unwrap();
                assert!(
                    help.contains(name)
                        || name == "--json"
                        || name == "--project"
                        || HIDDEN.contains(&(path.join(" ").as_str(), name)),
                    "{doc}: `orange {}` has no {name} (from: {line})",
                    path.join(" ")
                );
            }
            checked.insert(path.join(" "));
        }
    }
    assert!(
        checked.len() >= 35,
        "only {} commands found: {checked:?}",
        checked.len()
    );
}

/// The text of every `.rs` file under `dir`.
fn sources(dir: &Path) -> String {
    let mut out = String::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            out.push_str(&sources(&path));
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push_str(&std::fs::read_to_string(&path).unwrap());
        }
    }
    out
}

/// Every `@orange-*` option the documents name is one the plugin or the binary reads, and
/// every script, source file and test file they name exists.
#[test]
fn every_option_script_and_file_the_docs_name_exists() {
    let root = root();
    let readers = read("orange.tmux") + &sources(&root.join("src"));
    let mut options = BTreeSet::new();
    for (doc, text) in documents() {
        for (i, _) in text.match_indices("@orange-") {
            let name: String = text[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '@')
                .collect();
            let name = name.trim_end_matches('-').to_string();
            assert!(
                readers.contains(name.as_str()),
                "{doc} names {name}, which nothing reads"
            );
            options.insert(name);
        }
        for prefix in ["scripts/", "src/", "tests/", "tmux/"] {
            for (i, _) in text.match_indices(prefix) {
                // `docs/…`, `~/src/…`, `$HOME/src/…`: not a path of this repository.
                if text[..i]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || "/~_-.".contains(c))
                {
                    continue;
                }
                let name: String = text[i..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || "/-_.".contains(*c))
                    .collect();
                let name = name.trim_end_matches('.');
                if [".sh", ".versions", ".rs"]
                    .iter()
                    .any(|x| name.ends_with(x))
                {
                    assert!(
                        root.join(name).exists(),
                        "{doc} names {name}, which does not exist"
                    );
                }
            }
        }
    }
    assert!(options.len() >= 10, "{options:?}");
}

/// A GitHub heading anchor: lowercase, spaces to `-`, punctuation but `-` and `_` dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The README is a front door: at most 200 lines, and it links every page of docs/ and
/// CONTRIBUTING.md. Every relative link in every document leads to a file that exists,
/// and a `#heading` to a heading of that file.
#[test]
fn the_readme_is_short_and_every_link_leads_somewhere() {
    let text = readme();
    let lines = text.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines (at most {README_MAX_LINES}): move the reference to docs/"
    );
    let pages = docs_pages();
    assert!(pages.len() >= 7, "{pages:?}");
    for page in pages.iter().chain(["CONTRIBUTING.md".to_string()].iter()) {
        assert!(
            text.contains(&format!("]({page})")),
            "README.md does not link {page}"
        );
    }
    let mut links = 0;
    for (doc, text) in documents() {
        let dir: PathBuf = root().join(&doc).parent().unwrap().to_path_buf();
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let target = &rest[..rest.find(')').unwrap_or(rest.len())];
            if target.contains("://") || target.is_empty() {
                continue;
            }
            let (file, heading) = match target.split_once('#') {
                Some((f, h)) => (f, Some(h)),
                None => (target, None),
            };
            let path = if file.is_empty() {
                root().join(&doc)
            } else {
                dir.join(file)
            };
            assert!(path.exists(), "{doc}: the link {target} leads to no file");
            if let Some(h) = heading {
                let body = std::fs::read_to_string(&path).unwrap();
                assert!(
                    body.lines()
                        .filter(|l| l.starts_with('#'))
                        .any(|l| anchor(l.trim_start_matches('#')) == h),
                    "{doc}: the link {target} leads to no heading"
                );
            }
            links += 1;
        }
    }
    assert!(links >= 10, "only {links} links");
}

#[test]
fn the_readme_picture_uses_the_real_labels_and_icons() {
    let text = readme();
    let start = text
        .find("What `orange demo` shows")
        .expect("the picture's caption");
    let block = &text[start..];
    let block = &block[block.find("```").unwrap() + 4..];
    let block = &block[..block.find("```").unwrap()];
    let lines: Vec<&str> = block.lines().collect();
    let sidebar: Vec<String> = lines[..lines.len() - 1]
        .iter()
        .map(|l| l.split('│').next().unwrap_or("").trim_end().to_string())
        .collect();
    // The same kind of task, rendered by the real sidebar at the picture's width.
    let env = TaskEnv::new();
    env.add_project(&[]);
    let t = env.ok(&[
        "task",
        "create",
        "dark-mode",
        "Add a dark mode",
        "--harness",
        "fake-wait",
    ]);
    let id = t["id"].as_str().unwrap().to_string();
    env.wait_session(&id, "live");
    env.ok(&["monitor", "--once"]);
    let out = env
        .cmd_in(
            &env.repo,
            &["sidebar", "--once", "--width", "48", "--task", &id],
        )
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let real = String::from_utf8_lossy(&out.stdout).into_owned();
    for label in [
        "Status: ",
        "Agent: ",
        "Harness: ",
        "Tokens: ",
        "PR: ",
        "Commits: ",
        "Port: ",
        "── Files (",
        "── History ",
        "── Task ",
        "Ctrl+\\ sidebar  Ctrl+] full screen",
    ] {
        assert!(
            sidebar.iter().any(|l| l.starts_with(label)),
            "the picture has no {label:?}"
        );
        assert!(
            real.contains(label),
            "the real sidebar has no {label:?}:\n{real}"
        );
    }
    // The status line: the icons the widget uses, each with a count, in its order.
    let status = lines.last().unwrap().trim();
    let order = ["⚙", "⚑", "✗", "✓", "⏸"];
    let mut last = 0;
    for w in status.split_whitespace().collect::<Vec<_>>().chunks(2) {
        if w[0] == "|" {
            break;
        }
        let at = order
            .iter()
            .position(|i| *i == w[0])
            .unwrap_or_else(|| panic!("{:?} is no icon of the status line: {status}", w[0]));
        assert!(at >= last, "out of order: {status}");
        assert!(
            w[1].parse::<u32>().is_ok(),
            "no count after {}: {status}",
            w[0]
        );
        last = at;
    }
    let legend = &text[start..];
    for icon in order {
        assert!(
            legend.contains(&format!("`{icon}`")),
            "the legend lacks {icon}"
        );
    }
    let _ = common::bin();
}

/// The usage page's own blocks for projects, workspaces and tasks, walked on a sandbox: each
/// command as written (an `[optional part]` left out but `[ID]` given, `a | b` as two
/// commands), the placeholders filled in (ID: the second task created, but `merge` takes
/// the first; LABEL, NAME, the example workspace), the example setup command one this
/// sandbox can run, the agents the test's own (`fake-wait`); `attach` needs a terminal and
/// is left out; before `respawn` its session is ended, as its comment says, and before
/// `complete` the task is back at work (the lines are examples, not one script). In
/// order, each must succeed.
#[test]
fn the_usage_project_and_task_commands_run_as_written() {
    let text = read("docs/usage.md");
    let block = |heading: &str| -> Vec<String> {
        let at = text.find(heading).unwrap_or_else(|| panic!("no {heading}"));
        let rest = &text[at..];
        let start = rest.find("```sh\n").unwrap() + 6;
        let end = start + rest[start..].find("```").unwrap();
        rest[start..end].lines().map(str::to_string).collect()
    };
    let env = TaskEnv::new();
    let mut ids: Vec<String> = vec![];
    let mut walked = vec![];
    let mut lines = block("\n## Projects and the workspace pool\n");
    lines.extend(block("\n## Tasks\n"));
    for raw in lines {
        let line = match raw.find("  #") {
            Some(i) => raw[..i].trim().to_string(),
            None => raw.trim().to_string(),
        };
        let Some(rest) = line.strip_prefix("orange ") else {
            continue;
        };
        let rest = rest.replace("[ID]", "ID");
        let mut plain = String::new();
        let mut depth = 0;
        for c in rest.chars() {
            match c {
                '[' => depth += 1,
                ']' => depth -= 1,
                _ if depth == 0 => plain.push(c),
                _ => {}
            }
        }
        let mut commands: Vec<Vec<String>> = vec![vec![]];
        for w in shell_words(&plain) {
            if w == "|" {
                commands.push(vec![]);
            } else {
                commands.last_mut().unwrap().push(w);
            }
        }
        // `show ID | peek ID` repeats the family; `--status x | --summary y` the command.
        let head = commands[0].clone();
        for c in commands.iter_mut().skip(1) {
            let keep = if c.first().is_some_and(|w| w.starts_with("--")) {
                2
            } else {
                1
            };
            let mut full: Vec<String> = head[..keep.min(head.len())].to_vec();
            if keep == 2 && head.get(2).is_some_and(|w| w == "ID") {
                full.push("ID".into());
            }
            full.append(c);
            *c = full;
        }
        for mut cmd in commands {
            if cmd.get(1).is_some_and(|w| w == "attach") {
                continue;
            }
            let merge = cmd.get(1).is_some_and(|w| w == "merge");
            for w in cmd.iter_mut() {
                *w = match w.as_str() {
                    "ID" if merge => ids[0].clone(),
                    "ID" => ids.get(1).cloned().unwrap_or_default(),
                    "LABEL" => "walk".into(),
                    "NAME" => "renamed".into(),
                    "shop--1" => "app--1".into(),
                    "npm ci" => "true".into(),
                    "-" => "from the usage walk".into(),
                    _ => std::mem::take(w),
                };
            }
            // Redirections are the shell's: `< notes.md` (its text given as --context
            // instead), `> file` (printed here instead).
            cmd.retain(|w| !matches!(w.as_str(), "<" | "notes.md"));
            if let Some(i) = cmd.iter().position(|w| w == ">") {
                cmd.truncate(i);
            }
            if cmd.starts_with(&["task".into(), "create".into()]) {
                match cmd.iter().position(|w| w == "--harness") {
                    Some(i) => cmd[i + 1] = "fake-wait".into(),
                    None => cmd.extend(["--harness".into(), "fake-wait".into()]),
                }
            }
            // The lines are examples, not one script: the agent's `complete` follows its
            // task going back to work after the `--status clarification` example.
            if cmd.get(1).is_some_and(|w| w == "complete" || w == "stuck") {
                env.ok(&["task", "update", &ids[1], "--status", "working"]);
            }
            if cmd.get(1).is_some_and(|w| w == "respawn") {
                let s = env.task(&cmd[2])["tmux_session_id"]
                    .as_str()
                    .unwrap()
                    .to_string();
                env.tmux.ok(&["kill-session", "-t", &s]);
            }
            let mut args: Vec<&str> = cmd.iter().map(String::as_str).collect();
            args.push("--json");
            let mut c = env.cmd_in(&env.repo, &args);
            if let Some(id) = ids.get(1) {
                c.env("ORANGE_TASK_ID", id);
            }
            let out = c.output().unwrap();
            let (ok, v) = common::parse_json_output(&args, &out);
            assert!(ok, "docs/usage.md: `orange {}` failed: {v}", args.join(" "));
            if args.starts_with(&["task", "create"]) {
                ids.push(v["id"].as_str().unwrap().to_string());
            }
            walked.push(args.join(" "));
        }
    }
    assert!(
        walked.len() >= 15,
        "only {} commands walked: {walked:#?}",
        walked.len()
    );
}

/// Split like a shell (quotes kept together, removed); `|` stands alone.
fn shell_words(s: &str) -> Vec<String> {
    let mut out = vec![];
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true
            }
            (None, c) if c.is_whitespace() => {
                if !cur.is_empty() || any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if !cur.is_empty() || any {
        out.push(cur);
    }
    out
}
