#!/usr/bin/env bash
# Build orange's release binary for the tmux plugin (target/release/orange), then reload
# the plugin and say so on the tmux status line. orange.tmux starts it in the background
# when it finds no binary; it is fine to run by hand. One build at a time.
set -u
dir="$(cd "$(dirname "$0")/.." && pwd)"
say() {
  if [[ -n ${TMUX:-} ]]; then
    tmux display-message -d 8000 "${1//#/##}" 2>/dev/null
  else
    printf '%s\n' "$1"
  fi
}
mkdir -p "$dir/target"
lock="$dir/target/.orange-build.lock"
if ! mkdir "$lock" 2>/dev/null; then
  pid=$(cat "$lock/pid" 2>/dev/null)
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then exit 0; fi
fi
echo $$ >"$lock/pid"
trap 'rm -rf "$lock"' EXIT

cargo=$(command -v cargo || true)
[[ -z $cargo && -x $HOME/.cargo/bin/cargo ]] && cargo=$HOME/.cargo/bin/cargo
if [[ -z $cargo ]]; then
  say "orange: cannot build: cargo not found (install Rust from https://rustup.rs, or set @orange-bin)"
  exit 1
fi
log="$dir/target/orange-build.log"
# mark TEXT: what #{@orange_build} shows on the status line (orange.tmux puts it where
# #{orange_status} is) until the build is over; empty TEXT removes it.
mark() {
  [[ -n ${TMUX:-} ]] || return 0
  if [[ -n $1 ]]; then
    tmux set-option -gq @orange_build "${1//#/##} " 2>/dev/null
  else
    tmux set-option -gqu @orange_build 2>/dev/null
  fi
  tmux refresh-client -S 2>/dev/null || true
}
say "orange: building $dir/target/release/orange (log: $log)…"
mark "⏳ orange: building"
# However this ends (killed too), "building" does not stay; a failure says so below.
trap 'mark ""; rm -rf "$lock"' EXIT
if "$cargo" build --release --locked --manifest-path "$dir/Cargo.toml" >"$log" 2>&1; then
  mark ""
  if [[ -n ${TMUX:-} ]]; then
    "$dir/orange.tmux"
  fi
  say "orange: built"
else
  trap 'rm -rf "$lock"' EXIT
  mark "✗ orange build failed: $log"
  say "orange: the build failed; see $log"
  exit 1
fi
