#!/usr/bin/env bash
# A first look at orange: build the binary, then `orange demo` — a private tmux server
# (`tmux -L orange-demo`) with the plugin loaded, a throwaway sandbox repository with a bare
# origin, three tasks run by a built-in demo agent, and the sidebar open. On a terminal it
# attaches you to it (detach with prefix + d); elsewhere it prints how to attach.
# Nothing outside the sandbox directory and that tmux server is touched; the command to
# remove both is printed at the end. Usage: scripts/first-look.sh [--no-attach]
# Inside tmux it opens the demo in a new window of your tmux. Run it again to replace the
# previous demo (its tmux server, agents, monitor and sandbox directory).
set -euo pipefail
repo_root="$(cd "$(dirname "$0")/.." && pwd)"
orange="$repo_root/target/release/orange"
say() { printf 'first-look: %s\n' "$*" >&2; }
if ! command -v cargo >/dev/null 2>&1; then
  say "cargo is not installed: install Rust from https://rustup.rs, then run this again"
  exit 1
fi
if [[ -x $orange ]]; then
  say "[1/2] checking the build of $orange (cargo build --release)"
else
  say "[1/2] building $orange (cargo build --release: several minutes on a fresh clone; cargo shows its progress below)"
fi
cargo build --release --manifest-path "$repo_root/Cargo.toml"
say "[2/2] starting the demo: a private tmux server, a sandbox repository, three demo agents"
args=("$@")
if [[ ! -t 0 || ! -t 1 ]] && [[ " $* " != *" --no-attach "* ]]; then
  args+=(--no-attach)
fi
exec "$orange" demo "${args[@]}"
