//! The layers (DESIGN.md "The layers in the tree"): the folders of `src/` are adapters <
//! execution < orchestration < ui < cli. A module may import from its own layer or the
//! layers below, never from above, and the modules import one another without cycles.
//! Read from the source: every `crate::…` path (in `use` lines and in code).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const LAYERS: &[&str] = &["adapters", "execution", "orchestration", "ui", "cli"];

// `crate::error` (the crate's error type, at the root) is shared by every layer.

fn rank(layer: &str) -> Option<usize> {
    LAYERS.iter().position(|l| *l == layer)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `layer::module` of a file under src/ (`cli::task`; a layer's mod.rs is `layer::mod`).
/// A file in a folder is a module of its own: `src/adapters/git/worktree.rs` is
/// `git::worktree` of `adapters`, the folder's mod.rs is `git`; deeper files belong to their
/// folder under the layer's folder (`harness/claude/paths.rs` is `harness::claude`).
fn module_of(src: &Path, file: &Path) -> Option<(String, String)> {
    let rel = file.strip_prefix(src).ok()?;
    let parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    match parts.as_slice() {
        [layer, module, file, ..] if rank(layer).is_some() && file != "mod" => {
            Some((layer.clone(), format!("{module}::{file}")))
        }
        [layer, module, ..] if rank(layer).is_some() => Some((layer.clone(), module.clone())),
        _ => None,
    }
}

/// A reference (`layer`, `a::b`, as [`references`] reads it) → the module it names: `a::b`
/// when that is a module (a file in folder `a`), else `a`.
fn resolve(
    (layer, path): (String, String),
    modules: &BTreeSet<(String, String)>,
) -> (String, String) {
    let key = (layer, path);
    if modules.contains(&key) {
        return key;
    }
    let first = key.1.split("::").next().unwrap_or("").to_string();
    (key.0, first)
}

/// Strip comments (`//` to the end of the line) and string literals, so that prose and
/// messages never count as imports.
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_str = false;
    while let Some(c) = chars.next() {
        if in_str {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => in_str = false,
                '\n' => out.push('\n'),
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// Every `(layer, path)` a source text refers to through `crate::` (`path`: the first two
/// names after the layer, `tmux::Tmux`; see [`resolve`]): plain paths and the items of
/// `crate::{…}` groups (one level of nesting: `crate::{adapters::{git, tmux}}`).
fn references(text: &str) -> BTreeSet<(String, String)> {
    let code = code_only(text);
    let mut refs = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Up to the matching brace.
            let mut depth = 1;
            let mut end = 0;
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = k;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let inner = &group[..end];
            // `layer::module…` or `layer::{a, b}` items.
            let mut depth = 0;
            let mut item = String::new();
            let mut items = vec![];
            for c in inner.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        item.push(c);
                    }
                    '}' => {
                        depth -= 1;
                        item.push(c);
                    }
                    ',' if depth == 0 => items.push(std::mem::take(&mut item)),
                    _ => item.push(c),
                }
            }
            items.push(item);
            for it in items {
                refs.extend(path_refs(it.trim()));
            }
        } else {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':' || c == '{'))
                .unwrap_or(rest.len());
            let path = &rest[..end];
            if path.contains('{') {
                // `layer::{a, b}`
                let open = path.find('{').unwrap();
                let close = rest[open..]
                    .find('}')
                    .map(|k| open + k)
                    .unwrap_or(rest.len());
                refs.extend(path_refs(&rest[..=close.min(rest.len() - 1)]));
            } else {
                refs.extend(path_refs(path));
            }
        }
    }
    refs
}

/// `layer::module::…`, `layer::{a, b::c}` → the (layer, module) pairs; anything else
/// (`error::…`) → nothing.
fn path_refs(path: &str) -> Vec<(String, String)> {
    let mut parts = path.splitn(2, "::");
    let layer = parts.next().unwrap_or("").trim().to_string();
    let rest = parts.next().unwrap_or("").trim();
    if rank(&layer).is_none() {
        return vec![];
    }
    if let Some(group) = rest.strip_prefix('{') {
        group
            .trim_end_matches('}')
            .split(',')
            .filter_map(|m| {
                let m = two_names(m);
                (!m.is_empty() && m != "self").then(|| (layer.clone(), m))
            })
            .collect()
    } else {
        let module = two_names(rest);
        if module.is_empty() {
            vec![]
        } else {
            vec![(layer, module)]
        }
    }
}

/// `a::b::c` → `a::b`; `a::{x, y}` → `a` (a group is a folder's items, read as `a`).
fn two_names(path: &str) -> String {
    let names: Vec<&str> = path
        .trim()
        .split("::")
        .map(str::trim)
        .take_while(|n| !n.is_empty() && !n.starts_with('{'))
        .take(2)
        .collect();
    names.join("::")
}

fn graph() -> BTreeMap<(String, String), BTreeSet<(String, String)>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![];
    rust_files(&src, &mut files);
    let modules: BTreeSet<(String, String)> =
        files.iter().filter_map(|f| module_of(&src, f)).collect();
    let mut g = BTreeMap::new();
    for f in files {
        let Some(me) = module_of(&src, &f) else {
            continue;
        };
        let text = std::fs::read_to_string(&f).unwrap();
        let mut refs: BTreeSet<(String, String)> = references(&text)
            .into_iter()
            .map(|r| resolve(r, &modules))
            .collect();
        refs.remove(&me);
        // A folder's mod.rs declares its modules; it imports nothing by that.
        if me.1 == "mod" {
            refs.retain(|(l, _)| *l != me.0);
        }
        g.entry(me).or_insert_with(BTreeSet::new).extend(refs);
    }
    g
}

#[test]
fn no_module_imports_from_a_layer_above_its_own() {
    let g = graph();
    // The reader works: the tree has every layer, and edges that must be there are seen.
    for layer in LAYERS {
        assert!(
            g.keys().any(|(l, _)| l == layer),
            "no module in src/{layer}/"
        );
    }
    let edge = |a: (&str, &str), b: (&str, &str)| {
        g.get(&(a.0.to_string(), a.1.to_string()))
            .is_some_and(|s| s.contains(&(b.0.to_string(), b.1.to_string())))
    };
    assert!(edge(
        ("orchestration", "task::service"),
        ("adapters", "tmux")
    ));
    assert!(edge(("execution", "pool"), ("adapters", "git")));
    assert!(edge(("cli", "task"), ("orchestration", "task::service")));
    let mut upward = vec![];
    for ((layer, module), refs) in &g {
        for (to_layer, to_module) in refs {
            if rank(to_layer) > rank(layer) {
                upward.push(format!("{layer}::{module} → {to_layer}::{to_module}"));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports from a higher layer (a lower layer never calls a higher one):\n  {}",
        upward.join("\n  ")
    );
}

#[test]
fn modules_import_one_another_without_cycles() {
    let g = graph();
    // Depth-first search for a back edge; report the cycle.
    fn visit(
        n: &(String, String),
        g: &BTreeMap<(String, String), BTreeSet<(String, String)>>,
        state: &mut BTreeMap<(String, String), u8>,
        stack: &mut Vec<(String, String)>,
        cycles: &mut Vec<String>,
    ) {
        state.insert(n.clone(), 1);
        stack.push(n.clone());
        for m in g.get(n).into_iter().flatten() {
            match state.get(m).copied().unwrap_or(0) {
                0 => visit(m, g, state, stack, cycles),
                1 => {
                    let from = stack.iter().position(|x| x == m).unwrap();
                    let names: Vec<String> = stack[from..]
                        .iter()
                        .chain([m])
                        .map(|(l, n)| format!("{l}::{n}"))
                        .collect();
                    cycles.push(names.join(" → "));
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.clone(), 2);
    }
    let mut state = BTreeMap::new();
    let mut cycles = vec![];
    for n in g.keys() {
        if state.get(n).copied().unwrap_or(0) == 0 {
            visit(n, &g, &mut state, &mut vec![], &mut cycles);
        }
    }
    assert!(
        cycles.is_empty(),
        "import cycles:\n  {}",
        cycles.join("\n  ")
    );
}

#[test]
fn the_reader_sees_grouped_and_nested_imports_and_ignores_comments_and_strings() {
    let text = r#"
use crate::adapters::tmux::{self, Tmux};
use crate::{execution::pool, orchestration::{task, lane::Lanes}};
// use crate::ui::status;  (a comment)
let s = "crate::cli::task";
fn f() { crate::adapters::git::run_in(p, a); }
"#;
    let refs: BTreeSet<(String, String)> = references(text)
        .into_iter()
        .map(|r| resolve(r, &BTreeSet::new()))
        .collect();
    let want: BTreeSet<(String, String)> = [
        ("adapters", "tmux"),
        ("execution", "pool"),
        ("orchestration", "task"),
        ("orchestration", "lane"),
        ("adapters", "git"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(refs, want);
    // A file in a folder is its own module; the folder's items are its mod.rs.
    let modules: BTreeSet<(String, String)> = [("execution", "harness::claude")]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let text = "use crate::execution::harness::claude::paths;\nuse crate::execution::harness::{Harness, kind_of};\n";
    let refs: BTreeSet<(String, String)> = references(text)
        .into_iter()
        .map(|r| resolve(r, &modules))
        .collect();
    let want: BTreeSet<(String, String)> =
        [("execution", "harness::claude"), ("execution", "harness")]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
    assert_eq!(refs, want);
}
