#!/usr/bin/env bash
# A first look at orange: build the binary, then `orange demo` — a private tmux server
# (`tmux -L orange-demo`) with the plugin loaded, a throwaway sandbox repository with a bare
# origin, three tasks run by a built-in demo agent, and the sidebar open. On a terminal it
# attaches you to it (detach with prefix + d); elsewhere it prints how to attach.
# Nothing outside the sandbox directory and that tmux server is touched; the command to
# remove both is printed at the end. Usage: scripts/first-look.sh [--no-attach]
set -euo pipefail
repo_root="$(cd "$(dirname "$0")/.." && pwd)"
cargo build --release --quiet --manifest-path "$repo_root/Cargo.toml"
orange="$repo_root/target/release/orange"
args=("$@")
[[ -t 0 && -t 1 ]] || args+=(--no-attach)
exec "$orange" demo "${args[@]}"
