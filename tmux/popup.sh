#!/usr/bin/env bash
# What orange's keys and menus run in a display-popup (tmux 3.3a does not expand formats in
# a popup's command: the task comes from the session, the directory from `-d`).
# usage: popup.sh BIN new|show|pr|review [TASK]
#   new   ask for a branch and a task, then `orange task create` in the project of the
#         current directory. What the user types goes from the terminal to `read` to
#         orange's argv: never through tmux's parser, a format or a shell line (tmux
#         3.3a's command-prompt re-substitutes a typed %% unquoted and drops a final ;).
#         An empty task starts the agent with no prompt and takes the client to it: the
#         person types the first prompt there.
#   show  `orange task show` for the task of this session.
#   pr    `orange task pr`: push the task's branch, open (or link) its pull request.
#   review  `orange task review` of the task (this session's, or TASK): the diff in the
#         person's editor, the comments sent to the agent when they say so.
# shellcheck source=tmux/lib.sh
. "${BASH_SOURCE[0]%/*}/lib.sh"
bin=$1 action=$2
pause() {
  printf '\n\033[2m(press any key)\033[0m'
  read -rsn1 _
  exit 0
}
# To the client the popup is on, named: no other client gets it, even once it switched.
client=$(tmux display-message -p '#{client_name}' 2>/dev/null)
say() { msg ${client:+-c "$client"} -d 5000 "$1"; }
if [[ ! -x $bin ]]; then
  not_built "$bin"
  echo
  pause
fi
task=${3:-$(tmux display-message -p '#{@orange_task}' 2>/dev/null)}
case $action in
new)
  if ! project=$("$bin" plugin project 2>&1); then
    printf 'orange: no task here: %s\n' "${project#orange: }"
    pause
  fi
  # shellcheck disable=SC2317 # called by readline (bind -x) on Escape
  cancel() {
    say "orange: no task created (cancelled)"
    exit 0
  }
  # Escape cancels (arrow keys still work: readline tells them apart by their sequence).
  bind -x '"\e": cancel' 2>/dev/null
  printf '\033[1morange: new task\033[0m in project %s \033[2m(Esc cancels)\033[0m\n\n' "$project"
  IFS= read -r -e -p 'branch (empty: automatic): ' branch || exit 0
  IFS= read -r -e -p 'task (empty: type it to the agent): ' summary || exit 0
  if [[ -z ${summary//[[:space:]]/} ]]; then
    # No prompt: the agent starts interactive; the client goes to it to type the first.
    # stderr stays on this terminal: the progress of a workspace's setup shows live, and
    # an error stays on screen until a key is pressed.
    if out=$("$bin" task create -- "$branch"); then
      id=${out#created task }
      id=${id%% *}
      # Said first: the client leaving this session closes the popup (and this script).
      say "orange: ${out%%$'\n'*} (no prompt: type it there)"
      "$bin" task attach "$id" >/dev/null 2>&1
      exit 0
    fi
  elif out=$("$bin" task create -- "$branch" "$summary"); then
    say "orange: ${out%%$'\n'*}"
    exit 0
  fi
  [[ -n $out ]] && printf '\n%s\n' "$out"
  pause
  ;;
show)
  [[ -n $task ]] || { echo "orange: not an orange task session"; pause; }
  "$bin" task show "$task"
  pause
  ;;
review)
  [[ -n $task ]] || { echo "orange: not an orange task session"; pause; }
  "$bin" task review "$task"
  pause
  ;;
pr)
  [[ -n $task ]] || { echo "orange: not an orange task session"; pause; }
  # orange pushes the branch and opens (or links) the pull request: git and gh run there.
  "$bin" task pr "$task"
  pause
  ;;
*)
  echo "orange: unknown popup action ${action@Q}"
  pause
  ;;
esac
