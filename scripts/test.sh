#!/usr/bin/env bash
# The whole test suite: Rust unit and integration tests (real git, real tmux on private
# sockets), then syntax and lint checks of the shell side.
set -euo pipefail
cd "$(dirname "$0")/.."

# Tests must never touch a user's tmux server or git identity.
unset TMUX TMUX_PANE ORANGE_TMUX_SOCKET ORANGE_HOME GIT_DIR GIT_WORK_TREE

# Lints first, warnings as errors: clippy.toml keeps `std::process::Command` in src/adapters/.
cargo clippy --locked --all-targets -- -D warnings

# Every test binary runs even when one fails (cargo stops at the first failing one otherwise).
cargo test --locked --all-targets --no-fail-fast "$@"

shell_files=(scripts/*.sh .ci/run tests/fixtures/*.sh tests/fixtures/bin/*)
[ -f orange.tmux ] && shell_files+=(orange.tmux)
for f in tmux/*.sh; do [ -e "$f" ] && shell_files+=("$f"); done
for f in "${shell_files[@]}"; do bash -n "$f"; done
if command -v shellcheck >/dev/null 2>&1; then
  shellcheck -x "${shell_files[@]}"
  echo "shellcheck: ${#shell_files[@]} files clean"
else
  echo "shellcheck not installed: shell files checked with bash -n only"
fi
