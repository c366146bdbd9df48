#!/usr/bin/env bash
# Run orange for a key binding or a menu item: the error on the status line on failure;
# with -m, the outcome (the first line orange printed) on success too, else nothing (run-shell
# would open the output in the pane).
# usage: run.sh [-m] PANE BIN ARGS...   (PANE becomes $TMUX_PANE, as if run in that pane)
show=
if [[ $1 == -m ]]; then
  show=1
  shift
fi
# shellcheck source=tmux/lib.sh
. "${BASH_SOURCE[0]%/*}/lib.sh"
pane=$1 bin=$2
shift 2
[[ $pane == %* ]] && export TMUX_PANE=$pane
if [[ ! -x $bin ]]; then
  msg "$(not_built "$bin")"
  exit 0
fi
errfile=$(mktemp "${TMPDIR:-/tmp}/orange-run.XXXXXX") || exit 0
if out=$("$bin" "$@" 2>"$errfile"); then
  if [[ -n $show && -n $out ]]; then
    out=${out%%$'\n'*}
    msg "orange: $out"
  fi
else
  err=$(<"$errfile")
  err=${err##*$'\n'}
  err=${err:-orange $1 failed}
  msg "$err"
fi
rm -f "$errfile"
exit 0
