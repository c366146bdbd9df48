//! What a branch changed since it left a base (`git diff BASE...BRANCH`, committed work
//! only: what merging it would bring): its size and its text, for `group judge`.

use std::path::Path;

use crate::error::Result;

const PLAIN: [&str; 6] = [
    "-c",
    "core.quotePath=false",
    "diff",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
];

/// Files changed and lines added and removed by `branch` since its merge base with `base`
/// (binary files count as a file, no lines).
pub fn size(repo: &Path, base: &str, branch: &str) -> Result<(usize, usize, usize)> {
    let range = format!("{base}...{branch}");
    let mut args = PLAIN.to_vec();
    args.extend(["--numstat", "--no-renames", &range, "--"]);
    let out = super::run_ok(repo, &args)?;
    Ok(parse_numstat(&out))
}

/// The unified diff of `branch` since its merge base with `base`.
pub fn patch(repo: &Path, base: &str, branch: &str) -> Result<String> {
    let range = format!("{base}...{branch}");
    let mut args = PLAIN.to_vec();
    args.extend(["--no-renames", "-U3", &range, "--"]);
    super::run_ok(repo, &args)
}

/// `git diff --numstat`'s lines: `added\tremoved\tpath` (`-` for a binary file).
fn parse_numstat(out: &str) -> (usize, usize, usize) {
    let mut files = 0;
    let (mut added, mut removed) = (0, 0);
    for l in out.lines().filter(|l| !l.is_empty()) {
        let mut f = l.split('\t');
        files += 1;
        added += f.next().and_then(|n| n.parse::<usize>().ok()).unwrap_or(0);
        removed += f.next().and_then(|n| n.parse::<usize>().ok()).unwrap_or(0);
    }
    (files, added, removed)
}

#[cfg(test)]
mod tests {
    #[test]
    fn numstat_counts_files_and_lines_binary_files_without_lines() {
        assert_eq!(
            super::parse_numstat("3\t1\ta.rs\n-\t-\timg.png\n10\t0\tb/c d.rs\n"),
            (3, 13, 1)
        );
        assert_eq!(super::parse_numstat(""), (0, 0, 0));
    }
}
