#!/usr/bin/env bash
# The whole test suite: Rust unit and integration tests (real git, real tmux on private
# sockets), then syntax and lint checks of the shell side.
set -euo pipefail
cd "$(dirname "$0")/.."

# Tests must never touch a user's tmux server or git identity.
unset TMUX TMUX_PANE ORANGE_TMUX_SOCKET ORANGE_HOME GIT_DIR GIT_WORK_TREE

# scripts/test.sh --repeat N FILTER [-- TEST ARGS]: run the tests FILTER names (a name,
# `task::`, or a whole test name) N times in a row, built once, stopping at the first
# failure; prints `N passed, N failed`. A test that fails one time in N is a bug: this is
# how to find it and how to show it is gone.
if [[ ${1:-} == --repeat ]]; then
  n=${2:?usage: scripts/test.sh --repeat N FILTER}
  filter=${3:?usage: scripts/test.sh --repeat N FILTER}
  shift 3
  [[ ${1:-} == -- ]] && shift
  runner=$(cargo test --locked --test runner --no-run 2>&1 |
    sed -n 's/.*Executable tests\/runner.rs (\(.*\))/\1/p' | tail -n 1)
  [[ -x $runner ]] || { echo "the test runner did not build" >&2; exit 1; }
  passed=0 failed=0
  for ((i = 1; i <= n; i++)); do
    log=$(mktemp)
    if "$runner" --quiet "$filter" "$@" >"$log" 2>&1; then
      if ! grep -qE '^running [1-9]' "$log"; then
        echo "no test matches $filter" >&2
        exit 1
      fi
      passed=$((passed + 1))
      rm -f "$log"
      # One line a run: a long soak shows how far it got.
      echo "run $i of $n passed ($(date +%T))" >&2
    else
      failed=$((failed + 1))
      echo "run $i of $n failed (output: $log):" >&2
      tail -n 30 "$log" >&2
      break
    fi
  done
  echo "$passed passed, $failed failed"
  [[ $failed -eq 0 ]]
  exit
fi

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
