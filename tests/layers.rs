//! The layers (DESIGN.md "The layers in the tree"): the folders of `src/` are adapters <
//! execution < orchestration < ui < cli. A file may import from its own layer or the
//! layers below, never from above, and no two files import each other, directly or through
//! a cycle of other files.
//!
//! Read from the source, every path that names a module of the crate, in `use` lines and
//! in code: `crate::…`, `super::…` (any number of them), `self::…`, a module's own
//! children by name (`task::run` in the file that declares `mod task;`), and the groups
//! of each (`use crate::{a, b::{c, d}}`). A path is attributed to the file that holds the
//! module it names; a name a module re-exports (`pub use x::Y`) to the file it comes from.
//! Inline modules (`mod tests { use super::*; }`) belong to their file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const LAYERS: &[&str] = &["adapters", "execution", "orchestration", "ui", "cli"];

// The root modules (`crate::error`, `crate::text`) are shared by every layer.

/// Cycles between files that other work removes. Each entry is one cycle's files, sorted
/// and joined by ", " (as the failure message prints them). A cycle not listed here fails
/// the test; so does an entry whose cycle is gone (remove it).
///
/// Left by the parts of the restructure that move these folders (orchestration, ui,
/// adapters): empty this list when they are merged.
/// Cycles known and not yet broken (each entry names its files, and why it is allowed).
/// Empty: a new cycle fails the test; an entry whose cycle is gone fails it too.
const ALLOWED_CYCLES: &[&str] = &[];

/// A module's path: `["cli", "task"]` for src/cli/task.rs (and for src/cli/task/mod.rs),
/// `[]` for src/lib.rs.
type Module = Vec<String>;

fn rank(layer: &str) -> Option<usize> {
    LAYERS.iter().position(|l| *l == layer)
}

fn name(m: &Module) -> String {
    if m.is_empty() {
        "crate".to_string()
    } else {
        m.join("::")
    }
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

/// The module of a file under src/ (`None`: the binary's main.rs and src/bin/, another
/// crate).
fn module_of(src: &Path, file: &Path) -> Option<Module> {
    let rel = file.strip_prefix(src).ok()?;
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.first().is_some_and(|p| p == "bin") || parts == ["main"] {
        return None;
    }
    if parts == ["lib"] {
        return Some(vec![]);
    }
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    Some(parts)
}

/// The text with comments (`//…`, `/* … */`), string literals (plain, byte and raw) and
/// character literals blanked out, so that prose and messages never count as paths. Line
/// breaks stay.
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let word = |k: usize| k > 0 && (c[k - 1].is_alphanumeric() || c[k - 1] == '_');
    while i < c.len() {
        let at = |k: usize| c.get(k).copied().unwrap_or('\0');
        match c[i] {
            '/' if at(i + 1) == '/' => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            '/' if at(i + 1) == '*' => {
                let mut depth = 0;
                while i < c.len() {
                    if c[i] == '/' && at(i + 1) == '*' {
                        depth += 1;
                        i += 2;
                    } else if c[i] == '*' && at(i + 1) == '/' {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        if c[i] == '\n' {
                            out.push('\n');
                        }
                        i += 1;
                    }
                }
            }
            // r"…", r#"…"#, br"…"
            'r' if !word(i) || (i > 0 && c[i - 1] == 'b' && !word(i - 1)) => {
                let mut k = i + 1;
                while at(k) == '#' {
                    k += 1;
                }
                if at(k) != '"' {
                    out.push('r');
                    i += 1;
                    continue;
                }
                let hashes = k - i - 1;
                k += 1;
                while k < c.len() {
                    if c[k] == '"' && (1..=hashes).all(|h| at(k + h) == '#') {
                        k += 1 + hashes;
                        break;
                    }
                    if c[k] == '\n' {
                        out.push('\n');
                    }
                    k += 1;
                }
                out.push(' ');
                i = k;
            }
            '"' => {
                i += 1;
                while i < c.len() && c[i] != '"' {
                    if c[i] == '\\' {
                        i += 1;
                    } else if c[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
                out.push(' ');
                i += 1;
            }
            // A character literal ('x', '\n', '\u{1F600}'); a lifetime ('a) stays.
            '\'' if at(i + 1) == '\\' => {
                i += 3;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                out.push(' ');
                i += 1;
            }
            '\'' if at(i + 2) == '\'' => {
                out.push(' ');
                i += 3;
            }
            ch => {
                out.push(ch);
                i += 1;
            }
        }
    }
    out
}

/// How a path starts.
#[derive(Debug, Clone, PartialEq)]
enum Base {
    /// `crate::`
    Crate,
    /// `self::` (`inline`: inside that many inline modules of the file)
    SelfMod { inline: usize },
    /// `super::` repeated `n` times, `inline` modules deep
    Super { n: usize, inline: usize },
    /// A child module of the file, by its name (the name is the path's first segment)
    Child,
}

/// One path a file names: its start, its segments after that start (`self` in a group
/// dropped), and the name it is brought in as (`use a::B as C`: `C`; else the last
/// segment), and whether it is a `pub use` (a re-export).
#[derive(Debug, Clone, PartialEq)]
struct PathRef {
    base: Base,
    segments: Vec<String>,
    alias: Option<String>,
    reexport: bool,
}

fn ident_at(c: &[char], mut i: usize) -> (String, usize) {
    let mut s = String::new();
    while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
        s.push(c[i]);
        i += 1;
    }
    (s, i)
}

fn skip_ws(c: &[char], mut i: usize) -> usize {
    while i < c.len() && c[i].is_whitespace() {
        i += 1;
    }
    i
}

/// One path of a use tree: its segments and the name it is brought in as, if renamed.
type Leaf = (Vec<String>, Option<String>);

/// The paths of a use tree at `i` (`a::b`, `a::{b, c::{d as e, self}}`, `a::*`): each
/// as its segments and alias. Returns them and where the tree ends.
fn use_tree(c: &[char], i: usize) -> (Vec<Leaf>, usize) {
    let mut segments = vec![];
    let mut i = skip_ws(c, i);
    loop {
        if c.get(i) == Some(&'{') {
            let mut all = vec![];
            i += 1;
            loop {
                i = skip_ws(c, i);
                match c.get(i) {
                    None => break,
                    Some('}') => {
                        i += 1;
                        break;
                    }
                    Some(',') => i += 1,
                    _ => {
                        let (inner, next) = use_tree(c, i);
                        if next == i {
                            i += 1; // something unexpected: step over it
                        } else {
                            i = next;
                        }
                        for (s, a) in inner {
                            let mut full = segments.clone();
                            full.extend(s.into_iter().filter(|x| x != "self"));
                            all.push((full, a));
                        }
                    }
                }
            }
            return (all, i);
        }
        let (id, next) = if c.get(i) == Some(&'*') {
            ("*".to_string(), i + 1)
        } else {
            ident_at(c, i)
        };
        if id.is_empty() {
            return (vec![(segments, None)], i);
        }
        segments.push(id);
        i = next;
        let j = skip_ws(c, i);
        if c[j..].starts_with(&['a', 's', ' ']) {
            let (alias, end) = ident_at(c, skip_ws(c, j + 2));
            return (vec![(segments, Some(alias))], end);
        }
        if c[i..].starts_with(&[':', ':']) {
            i = skip_ws(c, i + 2);
            continue;
        }
        return (vec![(segments, None)], i);
    }
}

/// The names of the modules a file declares with a body elsewhere (`mod x;`), its
/// children.
fn children(code: &str) -> BTreeSet<String> {
    let c: Vec<char> = code.chars().collect();
    let mut out = BTreeSet::new();
    let mut i = 0;
    while let Some(k) = find_word(&c, i, "mod") {
        let (name, end) = ident_at(&c, skip_ws(&c, k + 3));
        if !name.is_empty() && c.get(skip_ws(&c, end)) == Some(&';') {
            out.insert(name);
        }
        i = k + 3;
    }
    out
}

/// The next `word` at or after `i` standing alone (no letter, digit, '_' or ':' before
/// it, no letter, digit or '_' after it).
fn find_word(c: &[char], mut i: usize, word: &str) -> Option<usize> {
    let w: Vec<char> = word.chars().collect();
    while i + w.len() <= c.len() {
        if c[i..].starts_with(&w)
            && (i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_' || c[i - 1] == ':'))
            && c.get(i + w.len())
                .is_none_or(|x| !(x.is_alphanumeric() || *x == '_'))
        {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Every path a file's text names that starts at `crate`, `self`, `super` or one of the
/// file's `children`.
fn paths(text: &str) -> Vec<PathRef> {
    let code = code_only(text);
    let kids = children(&code);
    let c: Vec<char> = code.chars().collect();
    let mut out = vec![];
    // The open braces, each marked if it opens an inline module's body.
    let mut braces: Vec<bool> = vec![];
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '{' {
            let before: String = c[i.saturating_sub(120)..i].iter().collect();
            let t = before.trim_end();
            let (_, last) = t
                .rsplit_once(|x: char| !(x.is_alphanumeric() || x == '_'))
                .unwrap_or(("", t));
            let t = t[..t.len() - last.len()].trim_end();
            let is_mod =
                !last.is_empty() && (t.ends_with(" mod") || t.ends_with("\nmod") || t == "mod");
            braces.push(is_mod);
            i += 1;
            continue;
        }
        if ch == '}' {
            braces.pop();
            i += 1;
            continue;
        }
        let boundary =
            i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_' || c[i - 1] == ':');
        if !(boundary && (ch.is_alphabetic() || ch == '_')) {
            i += 1;
            continue;
        }
        let (word, end) = ident_at(&c, i);
        if !c[end..].starts_with(&[':', ':']) {
            i = end;
            continue;
        }
        let inline = braces.iter().filter(|m| **m).count();
        let reexport = {
            // `pub use` or `pub(crate) use` before this path.
            let before: String = c[i.saturating_sub(120)..i].iter().collect();
            let line = before.rsplit(';').next().unwrap_or("");
            let line = line.rsplit(['{', '}']).next().unwrap_or(line);
            let words: Vec<&str> = line.split_whitespace().collect();
            words.len() >= 2
                && words[words.len() - 1] == "use"
                && words[words.len() - 2].starts_with("pub")
        };
        let (base, start) = match word.as_str() {
            "crate" => (Base::Crate, end + 2),
            "self" => (Base::SelfMod { inline }, end + 2),
            "super" => {
                let mut n = 1;
                let mut k = end + 2;
                while c[k..].starts_with(&['s', 'u', 'p', 'e', 'r', ':', ':']) {
                    n += 1;
                    k += 7;
                }
                (Base::Super { n, inline }, k)
            }
            w if kids.contains(w) && inline == 0 => (Base::Child, i),
            _ => {
                i = end;
                continue;
            }
        };
        let (trees, next) = use_tree(&c, start);
        for (segments, alias) in trees {
            out.push(PathRef {
                base: base.clone(),
                segments,
                alias,
                reexport,
            });
        }
        i = next.max(end);
    }
    out
}

/// One file: its module, whether it is a folder's mod.rs or lib.rs (its own children sit
/// in its folder), and what it names.
struct File {
    module: Module,
    paths: Vec<PathRef>,
}

/// The full path a reference names, from the file `m` it is written in (`None`: inside
/// the file itself, through an inline module).
fn absolute(m: &Module, p: &PathRef) -> Option<Vec<String>> {
    let mut out = match &p.base {
        Base::Crate => vec![],
        Base::Child => m.clone(),
        Base::SelfMod { inline } => {
            if *inline > 0 {
                return None;
            }
            m.clone()
        }
        Base::Super { n, inline } => {
            if n <= inline {
                return None;
            }
            let up = n - inline;
            if up > m.len() {
                return Some(vec![]);
            }
            m[..m.len() - up].to_vec()
        }
    };
    out.extend(p.segments.iter().cloned());
    Some(out)
}

/// The file-level import graph of the tree at `src`: each module and the modules (files)
/// it names.
fn graph_of(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut list = vec![];
    rust_files(src, &mut list);
    let files: Vec<File> = list
        .iter()
        .filter_map(|f| {
            Some(File {
                module: module_of(src, f)?,
                paths: paths(&std::fs::read_to_string(f).unwrap()),
            })
        })
        .collect();
    let modules: BTreeSet<Module> = files.iter().map(|f| f.module.clone()).collect();
    // What each module re-exports: the name → the full path it stands for.
    let mut reexports: BTreeMap<Module, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for f in &files {
        for p in f.paths.iter().filter(|p| p.reexport) {
            let Some(full) = absolute(&f.module, p) else {
                continue;
            };
            let Some(last) = p.alias.clone().or_else(|| full.last().cloned()) else {
                continue;
            };
            if last != "*" && last != "_" {
                reexports
                    .entry(f.module.clone())
                    .or_default()
                    .insert(last, full);
            }
        }
    }
    // The file a full path lands in: its longest prefix that is a module, followed
    // through the re-exports of that module.
    let resolve = |full: &[String]| -> Module {
        let mut full = full.to_vec();
        for _ in 0..16 {
            let len = (0..=full.len())
                .rev()
                .find(|k| modules.contains(&full[..*k]))
                .unwrap_or(0);
            let m = full[..len].to_vec();
            match full
                .get(len)
                .and_then(|next| reexports.get(&m).and_then(|r| r.get(next)))
            {
                Some(target) if !target.starts_with(&full[..=len]) => {
                    let mut next = target.clone();
                    next.extend(full[len + 1..].iter().cloned());
                    full = next;
                }
                _ => return m,
            }
        }
        vec![]
    };
    let mut g = BTreeMap::new();
    for f in &files {
        let mut refs = BTreeSet::new();
        for p in &f.paths {
            let Some(full) = absolute(&f.module, p) else {
                continue;
            };
            let to = resolve(&full);
            // A folder re-exporting what its own files define: its surface, not a use.
            if p.reexport && to.starts_with(&f.module) {
                continue;
            }
            if to != f.module && !to.is_empty() {
                refs.insert(to);
            }
        }
        g.entry(f.module.clone())
            .or_insert_with(BTreeSet::new)
            .extend(refs);
    }
    g
}

fn graph() -> BTreeMap<Module, BTreeSet<Module>> {
    graph_of(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// The groups of files that import one another in a cycle (the strongly connected
/// components of more than one file), each with one cycle through it as an example.
fn cycles(g: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<(BTreeSet<Module>, Vec<Module>)> {
    // Tarjan's algorithm.
    struct T<'a> {
        g: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on: BTreeSet<&'a Module>,
        out: Vec<BTreeSet<Module>>,
    }
    fn strong<'a>(t: &mut T<'a>, v: &'a Module) {
        let i = t.index.len();
        t.index.insert(v, i);
        t.low.insert(v, i);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flatten() {
            let Some((w, _)) = t.g.get_key_value(w) else {
                continue;
            };
            if !t.index.contains_key(w) {
                strong(t, w);
                let l = t.low[w].min(t.low[v]);
                t.low.insert(v, l);
            } else if t.on.contains(w) {
                let l = t.index[w].min(t.low[v]);
                t.low.insert(v, l);
            }
        }
        if t.low[v] == t.index[v] {
            let mut scc = BTreeSet::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                scc.insert(w.clone());
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                t.out.push(scc);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: vec![],
        on: BTreeSet::new(),
        out: vec![],
    };
    for v in g.keys() {
        if !t.index.contains_key(v) {
            strong(&mut t, v);
        }
    }
    // An example: the shortest way back from the first file to itself, inside the group.
    t.out
        .into_iter()
        .map(|scc| {
            let first = scc.iter().next().unwrap().clone();
            let mut prev: BTreeMap<Module, Module> = BTreeMap::new();
            let mut queue = std::collections::VecDeque::from([first.clone()]);
            let mut path = vec![first.clone()];
            'bfs: while let Some(v) = queue.pop_front() {
                for w in g.get(&v).into_iter().flatten().filter(|w| scc.contains(*w)) {
                    if *w == first {
                        let mut back = vec![v.clone()];
                        while let Some(p) = prev.get(back.last().unwrap()) {
                            back.push(p.clone());
                        }
                        back.pop();
                        back.reverse();
                        path.extend(back);
                        path.push(first.clone());
                        break 'bfs;
                    }
                    if !prev.contains_key(w) && *w != first {
                        prev.insert(w.clone(), v.clone());
                        queue.push_back(w.clone());
                    }
                }
            }
            (scc, path)
        })
        .collect()
}

fn key(scc: &BTreeSet<Module>) -> String {
    scc.iter().map(name).collect::<Vec<_>>().join(", ")
}

#[test]
fn no_module_imports_from_a_layer_above_its_own() {
    let g = graph();
    // The reader works: the tree has every layer, and edges that must be there are seen.
    for layer in LAYERS {
        assert!(
            g.keys().any(|m| m.first().is_some_and(|l| l == layer)),
            "no module in src/{layer}/"
        );
    }
    let edge = |a: &[&str], b: &[&str]| {
        g.iter().any(|(from, to)| {
            from.starts_with(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                && to
                    .iter()
                    .any(|t| t.starts_with(&b.iter().map(|s| s.to_string()).collect::<Vec<_>>()))
        })
    };
    assert!(edge(&["orchestration"], &["adapters", "tmux"]));
    assert!(edge(&["execution", "pool"], &["adapters", "git"]));
    assert!(edge(&["cli", "task"], &["orchestration"]));
    let mut upward = vec![];
    for (from, refs) in &g {
        let Some(r) = from.first().and_then(|l| rank(l)) else {
            continue;
        };
        for to in refs {
            if to.first().and_then(|l| rank(l)).is_some_and(|t| t > r) {
                upward.push(format!("{} → {}", name(from), name(to)));
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
fn files_import_one_another_without_cycles() {
    let g = graph();
    let found = cycles(&g);
    let mut bad = vec![];
    let mut seen = BTreeSet::new();
    for (scc, path) in &found {
        let k = key(scc);
        if !ALLOWED_CYCLES.contains(&k.as_str()) {
            // The pairs of files that import each other directly, then one longer way round.
            let mut pairs = vec![];
            for a in scc {
                for b in g[a].iter().filter(|b| *b > a && g[*b].contains(a)) {
                    pairs.push(format!("{} ↔ {}", name(a), name(b)));
                }
            }
            bad.push(format!(
                "{k}\n      {}\n      e.g. {}",
                pairs.join(", "),
                path.iter().map(name).collect::<Vec<_>>().join(" → ")
            ));
        }
        seen.insert(k);
    }
    let stale: Vec<&&str> = ALLOWED_CYCLES
        .iter()
        .filter(|k| !seen.contains(**k))
        .collect();
    assert!(
        bad.is_empty(),
        "import cycles between files (move what both need to a third file, or pass it in):\n  {}",
        bad.join("\n  ")
    );
    assert!(
        stale.is_empty(),
        "entries of ALLOWED_CYCLES that are no cycle any more (remove them): {stale:?}"
    );
}

fn refs(module: &[&str], text: &str) -> BTreeSet<Vec<String>> {
    let m: Module = module.iter().map(|s| s.to_string()).collect();
    paths(text).iter().filter_map(|p| absolute(&m, p)).collect()
}

fn v(s: &str) -> Vec<String> {
    s.split("::").map(str::to_string).collect()
}

#[test]
fn the_reader_sees_grouped_nested_relative_paths_and_ignores_comments_and_strings() {
    let text = r##"
use crate::adapters::tmux::{self, Tmux};
use crate::{execution::pool, orchestration::{task, lane::Lanes as L}};
use super::{args::TaskCmd, context::{audited, Ctx}};
use super::super::error::Result;
use self::inner::Thing;
mod inner;
// use crate::ui::status;  (a comment)
/* crate::ui::block */
let s = "crate::cli::task";
let r = r#"super::quoted "still" quoted"#;
let q = '"'; let l: &'static str = x;
fn f() { crate::adapters::git::run_in(p, a); inner::go(); super::remote::task_lists(); }
#[cfg(test)]
mod tests {
    use super::*;
    use super::super::sibling::X;
}
"##;
    let got = refs(&["cli", "task"], text);
    let want: BTreeSet<Vec<String>> = [
        "adapters::tmux",
        "adapters::tmux::Tmux",
        "execution::pool",
        "orchestration::task",
        "orchestration::lane::Lanes",
        "cli::args::TaskCmd",
        "cli::context::audited",
        "cli::context::Ctx",
        "error::Result",
        "cli::task::inner::Thing",
        "cli::task::inner::go",
        "adapters::git::run_in",
        "cli::remote::task_lists",
        "cli::sibling::X",
    ]
    .iter()
    .map(|s| v(s))
    .collect();
    assert_eq!(got, want);
}

/// The cycle this check missed while it read only `crate::` paths: two files of one folder
/// calling each other through `super::` (cli/project_cmd.rs → cli/remote.rs → back), and
/// a re-export followed to the file that defines the name.
#[test]
fn a_cycle_through_super_paths_and_reexports_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |p: &str, t: &str| {
        let p = src.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, t).unwrap();
    };
    write("lib.rs", "pub mod cli;\npub mod ui;\n");
    write(
        "cli/mod.rs",
        "pub mod project_cmd;\npub mod remote;\npub mod task;\npub fn dispatch() { task::run() }\n",
    );
    write(
        "cli/project_cmd.rs",
        "pub enum ProjectCmd {}\npub fn run() { super::remote::project_add() }\n",
    );
    write(
        "cli/remote.rs",
        "use super::project_cmd::ProjectCmd;\nuse super::task::TaskCmd;\npub fn project_add() {}\n",
    );
    write(
        "cli/task.rs",
        "pub enum TaskCmd {}\npub fn run() { super::remote::task_lists() }\n#[cfg(test)]\nmod tests { use super::*; }\n",
    );
    // ui/mod.rs re-exports Model; ui/render.rs uses it through the folder: not a cycle.
    write(
        "ui/mod.rs",
        "mod model;\nmod render;\npub use model::Model;\n",
    );
    write("ui/model.rs", "pub struct Model;\n");
    write("ui/render.rs", "use super::Model;\n");
    let g = graph_of(src);
    let m = |s: &str| v(s);
    assert!(g[&m("cli::project_cmd")].contains(&m("cli::remote")));
    assert!(g[&m("cli::remote")].contains(&m("cli::task")));
    assert!(g[&m("cli")].contains(&m("cli::task")));
    assert!(g[&m("ui::render")].contains(&m("ui::model")));
    assert!(g[&m("ui")].is_empty(), "{:?}", g[&m("ui")]);
    let found: Vec<String> = cycles(&g).iter().map(|(s, _)| key(s)).collect();
    assert_eq!(
        found,
        vec!["cli::project_cmd, cli::remote, cli::task".to_string()]
    );
}
