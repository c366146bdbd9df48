#!/usr/bin/env bash
# Install what the test suite needs and a fresh machine may lack: Debian packages (tmux,
# git, shellcheck, TPM, bubblewrap, OpenSSH, gh), the real agent CLIs from npm (Claude Code, pi, codex,
# opencode) and zellij from crates.io, at the versions pinned in scripts/test-deps.versions.
# Idempotent: what is present at the pinned version is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v git >/dev/null 2>&1 || need+=(git)
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
# The notification tests attach a real client through script(1) to record its terminal.
command -v script >/dev/null 2>&1 || need+=(bsdutils)
command -v npm >/dev/null 2>&1 || need+=(npm)
[ -d /usr/share/tmux-plugin-manager ] || need+=(tmux-plugin-manager)
# The remote-host tests run a real sshd on 127.0.0.1 (and the ssh client).
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v ssh >/dev/null 2>&1 || need+=(openssh-client)
# The pull-request tests run the real GitHub CLI against a stand-in API on 127.0.0.1.
command -v gh >/dev/null 2>&1 || need+=(gh)
if [ ${#need[@]} -gt 0 ]; then
  echo "apt-get install: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq "${need[@]}" >/dev/null
fi

# "<version>" of a program, as its --version prints it (first x.y.z found).
version_of() {
  "$1" --version 2>&1 | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -n 1 || true
}

npm_missing=()
while read -r kind spec program; do
  case "$kind" in
    npm)
      want=${spec##*@}
      have=""
      if command -v "$program" >/dev/null 2>&1; then have=$(version_of "$program"); fi
      [ "$have" = "$want" ] || npm_missing+=("$spec")
      ;;
    cargo)
      want=${spec##*@}
      have=""
      if command -v "$program" >/dev/null 2>&1; then have=$(version_of "$program"); fi
      if [ "$have" != "$want" ]; then
        echo "cargo install --locked ${spec%@*} --version $want (several minutes; cached in ~/.cargo)"
        cargo install --locked --quiet "${spec%@*}" --version "$want"
      fi
      ;;
  esac
done < <(grep -v '^#' scripts/test-deps.versions | grep .)

if [ ${#npm_missing[@]} -gt 0 ]; then
  echo "npm install -g ${npm_missing[*]}"
  # The agents' install scripts place their native binaries: allow them explicitly.
  npm install -g --no-fund --no-audit --loglevel=error "${npm_missing[@]}" >/dev/null
fi

tmux -V
for p in git gh claude pi codex opencode zellij bwrap; do
  if command -v "$p" >/dev/null 2>&1; then
    printf '%-9s %s\n' "$p" "$("$p" --version 2>&1 | head -n 1)"
  else
    printf '%-9s MISSING\n' "$p"
  fi
done
