#!/usr/bin/env bash
# Run orange for a key binding or a menu item: nothing printed on success (run-shell would
# open the output in the pane), the error on the status line on failure.
# usage: run.sh PANE BIN ARGS...   (PANE becomes $TMUX_PANE, as if run in that pane)
pane=$1 bin=$2
shift 2
[[ $pane == %* ]] && export TMUX_PANE=$pane
if [[ ! -x $bin ]]; then
  tmux display-message "orange: $bin is not built yet (or @orange-bin is wrong)"
  exit 0
fi
if ! err=$("$bin" "$@" 2>&1 >/dev/null); then
  err=${err##*$'\n'}
  err=${err:-orange $1 failed}
  tmux display-message "${err//#/##}"
fi
exit 0
