#!/usr/bin/env bash
# A first look at orange on a sandbox: builds the binary, makes a throwaway repository
# with a bare origin, registers it, warms a pool of worktrees, binds and releases one.
# Nothing outside a temp directory is touched (set KEEP=1 to keep it).
set -euo pipefail
repo_root="$(cd "$(dirname "$0")/.." && pwd)"
cargo build --release --quiet --manifest-path "$repo_root/Cargo.toml"
orange="$repo_root/target/release/orange"

sandbox="$(mktemp -d -t orange-first-look.XXXXXX)"
if [ "${KEEP:-0}" != 1 ]; then trap 'rm -rf "$sandbox"' EXIT; fi
export ORANGE_HOME="$sandbox/orange-home"
export GIT_AUTHOR_NAME=orange GIT_AUTHOR_EMAIL=orange@example.invalid
export GIT_COMMITTER_NAME=orange GIT_COMMITTER_EMAIL=orange@example.invalid

step() { printf '\n\033[1;33m$ %s\033[0m\n' "$*"; "$@"; }

git init -q --bare -b main "$sandbox/shop-origin.git"
git init -q -b main "$sandbox/shop"
cd "$sandbox/shop"
mkdir -p src && echo 'fn main() {}' > src/main.rs && echo '# shop' > README.md
git add -A && git commit -qm "initial commit"
git remote add origin "$sandbox/shop-origin.git" && git push -q -u origin main
git remote set-head origin -a >/dev/null

# shellcheck disable=SC2016 # expanded by the setup shell, not here
step "$orange" project add --pool-size 3 --setup-cmd 'echo "set up $ORANGE_WORKSPACE_NAME" > .setup.log'
step "$orange" workspace init
step "$orange" workspace acquire --task dark-mode
ws="$ORANGE_HOME/workspaces/shop--1"
(cd "$ws" && git checkout -qb feature/dark-mode && echo dark > theme.txt && git add theme.txt && git commit -qm "dark mode")
step "$orange" workspace list
echo "work in progress" > "$ws/wip.txt"
step "$orange" workspace release shop--1 || echo "(refused: the workspace has uncommitted work; nothing was lost)"
rm "$ws/wip.txt"
step "$orange" workspace release shop--1
step git -C "$sandbox/shop" log --oneline feature/dark-mode -1
step "$orange" workspace list --json
echo
echo "sandbox: $sandbox${KEEP:+ (kept)}"
