#!/usr/bin/env bash
# Ctrl+\ in a task session: focus the window's sidebar (opening it when there is none), or,
# from the sidebar, go back to the agent pane.
# usage: focus.sh PANE BIN
pane=$1 bin=$2
sidebar() {
  tmux list-panes -t "$pane" -F '#{pane_id} #{@orange_sidebar} #{@orange_sidebar_for}' 2>/dev/null |
    awk '$2 == "1" { print $1, $3; exit }'
}
read -r sb agent <<<"$(sidebar)"
if [[ -z $sb ]]; then
  "$(dirname "$0")/run.sh" "$pane" "$bin" sidebar toggle
  read -r sb agent <<<"$(sidebar)"
  [[ -n $sb ]] || exit 0
fi
if [[ $pane == "$sb" ]]; then
  # Back to the agent pane; if it is gone, to the previous pane.
  tmux select-pane -t "${agent:-$pane}" 2>/dev/null || tmux last-pane 2>/dev/null
else
  tmux select-pane -t "$sb"
fi
exit 0
