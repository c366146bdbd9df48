# shellcheck shell=bash
# Helpers shared by orange.tmux and tmux/*.sh (sourced, never run): the status-line
# message and the words for a missing binary. No subshell, no tmux call but the message.

# msg [DISPLAY-MESSAGE OPTIONS…] TEXT: TEXT on the status line exactly as written. tmux
# expands display-message's text as a format, so each # is doubled; its errors (no
# client to show it to) are dropped.
msg() {
  local text=${!#}
  tmux display-message "${@:1:$#-1}" "${text//#/##}" 2>/dev/null
}

# not_built BIN: what to say when BIN, the orange binary, is not there (no newline).
not_built() {
  printf 'orange: %s is not built yet (or @orange-bin is wrong)' "$1"
}
