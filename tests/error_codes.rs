//! Every canonical error code is triggered through the CLI by some test: this test fails
//! when a code has no `err(&[…], "<code>")` (or `["code"] == "<code>"`) assertion anywhere
//! in tests/. The codes are read from the repository itself: the `=> "<code>"` arms of
//! `OrangeError::code` in src/error.rs.

use std::path::Path;

/// The codes `OrangeError::code` returns: every `=> "…"` in its body.
fn canonical_codes(error_rs: &str) -> Vec<String> {
    let start = error_rs
        .find("pub fn code(&self)")
        .expect("src/error.rs defines OrangeError::code");
    let body = &error_rs[start..];
    let body = &body[..body.find("\n    }\n").expect("the end of fn code")];
    body.split("=> \"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].to_string())
        .collect()
}

/// At most `n` bytes of `text` before byte `i`, cut at a character boundary (a plain
/// `&text[i - n..i]` panics when it falls inside a multi-byte character).
fn before(text: &str, i: usize, n: usize) -> &str {
    let start = (i.saturating_sub(n)..=i)
        .find(|&j| text.is_char_boundary(j))
        .unwrap();
    &text[start..i]
}

#[test]
fn the_window_before_a_code_never_splits_a_character() {
    let text = format!("{}é.err(\"x\"", "a".repeat(10));
    let i = text.find("\"x\"").unwrap();
    // 6 bytes before the quote start inside the two-byte "é".
    assert_eq!(before(&text, i, 6), ".err(");
    assert_eq!(before(&text, i, 7), "é.err(");
    assert_eq!(before(&text, 3, 200), "aaa");
}

#[test]
fn every_canonical_error_code_is_triggered_by_a_cli_test() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let codes = canonical_codes(&std::fs::read_to_string(root.join("src/error.rs")).unwrap());
    assert!(codes.len() >= 13, "{codes:?}");
    // Each tests/<name>.rs, and each file of a module split into tests/<name>/ (mod.rs and
    // its parts; not tests/common/, the shared helpers).
    let mut files = Vec::new();
    for e in std::fs::read_dir(root.join("tests")).unwrap().flatten() {
        let p = e.path();
        if p.join("mod.rs").is_file() && e.file_name() != "common" {
            files.extend(std::fs::read_dir(&p).unwrap().flatten().map(|f| f.path()));
        } else {
            files.push(p);
        }
    }
    let mut sources = Vec::new();
    for p in files {
        if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("tests/error_codes.rs") {
            sources.push(std::fs::read_to_string(&p).unwrap());
        }
    }
    let missing: Vec<&String> = codes
        .iter()
        .filter(|c| {
            let quoted = format!("\"{c}\"");
            // An assertion on a CLI result: env.err(…, "code") or v["error"]["code"] == "code".
            !sources.iter().any(|text| {
                text.match_indices(&quoted).any(|(i, _)| {
                    let before = before(text, i, 200);
                    before.contains(".err(") || before.contains("[\"code\"]")
                })
            })
        })
        .collect();
    assert!(missing.is_empty(), "no CLI test triggers: {missing:?}");
}

/// docs/usage.md's "Scripts: `--json` and errors" names every code a script can meet (the
/// codes of `OrangeError::code`): one it leaves out is one a script cannot know to handle.
#[test]
fn the_usage_page_names_every_canonical_error_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let codes = canonical_codes(&std::fs::read_to_string(root.join("src/error.rs")).unwrap());
    let usage = std::fs::read_to_string(root.join("docs/usage.md")).unwrap();
    let start = usage
        .find("## Scripts: `--json` and errors")
        .expect("docs/usage.md has its errors section");
    let section = &usage[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    let missing: Vec<&String> = codes
        .iter()
        .filter(|c| !section.contains(&format!("`{c}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/usage.md's errors section does not name: {missing:?}"
    );
}
