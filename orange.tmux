#!/usr/bin/env bash
# orange — the tmux plugin entry. TPM runs it (every *.tmux file of a plugin, output
# discarded); without TPM put `run-shell /path/to/orange/orange.tmux` in ~/.tmux.conf.
#
# Silent and fast: three tmux calls and no subshell on the usual path, nothing printed;
# problems go to display-message. Idempotent: running it again rebinds the same keys and
# replaces orange's own hooks, never a user's. Never blocks tmux start: a missing binary is
# built in the background (scripts/build.sh).
#
# User options (set them before TPM runs; orange reads them and never sets them):
#   @orange-bin               the orange binary (default: <plugin>/target/release/orange,
#                             else `orange` on PATH, else built by scripts/build.sh)
#   @orange-key               key after the prefix that enters the `orange` key table (O; off)
#   @orange-sidebar-key       root key: focus the sidebar, in task sessions only (C-\; off)
#   @orange-zoom-key          root key: zoom the agent pane, in task sessions only (C-]; off)
#   @orange-sidebar-width     N% (kept within 15-50%) or N columns (30%)
#   @orange-sidebar-side      left | right (left)
#   @orange-sidebar-auto      on | off: new task sessions open with the sidebar (off)
#   @orange-refresh-interval  seconds between sidebar refreshes (10)
#   @orange-status-format     what #{orange_status} in status-left/right shows: tmux | plain (tmux)
#   @orange-hooks             on | off: tmux hooks tell orange at once about dead panes,
#                             closed sessions and client switches, and a sidebar when it
#                             gets or loses the focus (its footer names the keys of the
#                             pane in focus) (on)
#   @orange-monitor           on | off: run `orange monitor` (agent states, nudges,
#                             escalations) in the background, one per server (on)
#   @orange-notify            when a task starts to need you, the monitor tells attached
#                             clients: any of bell, message, osc (OSC 9/777 to the
#                             client's terminal), desktop (notify-send), or off
#                             (bell,message; unset means the default: the monitor reads
#                             it at each pass, this file never sets it)
# Set by orange (read them, do not set them): @orange_bin, @orange_dir (global: the binary
# and plugin in use), @orange_task (session: the task id of a task session), @orange_sidebar
# (pane: 1 on a sidebar pane), @orange_status (session), @orange_summary (global).

DIR=${BASH_SOURCE[0]%/*}
[[ $DIR == "${BASH_SOURCE[0]}" ]] && DIR=.
DIR=$(cd "$DIR" && pwd)

# shellcheck source=tmux/lib.sh
. "$DIR/tmux/lib.sh"

# q VAR TEXT: TEXT sh-quoted ('…', each ' as '\''), every # doubled (run-shell, popups and
# #() expand formats before the shell sees the line).
q() {
  local s="'${2//\'/\'\\\'\'}'"
  printf -v "$1" '%s' "${s//#/##}"
}
# tq VAR TEXT: TEXT as a tmux double-quoted string (for command strings tmux parses later).
tq() {
  local s=${2//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//\$/\\\$}
  printf -v "$1" '"%s"' "$s"
}

# --- options: one call --------------------------------------------------------------------
US=$'\x1f'
IFS="$US" read -r o_bin o_key o_skey o_zkey o_hooks o_sfmt o_bound o_mon o_sleft o_sright <<<"$(tmux display-message -p \
  "#{@orange-bin}$US#{@orange-key}$US#{@orange-sidebar-key}$US#{@orange-zoom-key}$US#{@orange-hooks}$US#{@orange-status-format}$US#{@orange_bound_keys}$US#{@orange-monitor}$US#{status-left}$US#{status-right}" 2>/dev/null)"
key=${o_key:-O}
skey=${o_skey:-C-\\}
zkey=${o_zkey:-C-]}
hooks=${o_hooks:-on}
sfmt=tmux
[[ $o_sfmt == plain ]] && sfmt=plain

# --- the binary: @orange-bin, the plugin's own release build, PATH; else build it ---------
bin=${o_bin/#\~/$HOME}
if [[ -n $bin && ! -x $bin ]]; then
  msg "orange: @orange-bin $bin is not an executable; using the plugin's build or PATH"
  bin=
fi
[[ -z $bin && -x $DIR/target/release/orange ]] && bin=$DIR/target/release/orange
[[ -z $bin ]] && bin=$(command -v orange 2>/dev/null)
if [[ -z $bin ]]; then
  bin=$DIR/target/release/orange
  if [[ -x $DIR/scripts/build.sh ]]; then
    (nohup "$DIR/scripts/build.sh" </dev/null >/dev/null 2>&1 &)
    msg "orange: building the binary in the background (cargo build --release); the keys work once it is built"
  else
    msg "orange: no orange binary found; set @orange-bin or put orange on PATH"
  fi
fi

# --- what the keys run ----------------------------------------------------------------------
q B "$bin"
q RUNSH "$DIR/tmux/run.sh"
q FOCUSSH "$DIR/tmux/focus.sh"
q POPUPSH "$DIR/tmux/popup.sh"
T='#{@orange_task}'
# "In a task session", as a condition: if-shell -F takes any value starting with 0 for false
# (a task id such as 0jk8pw would send Ctrl+\ to the agent, a SIGQUIT), so test presence.
IN_TASK='#{?@orange_task,1,0}'

# run VAR ARGS…: run-shell the binary through run.sh (quiet on success, the error on the
# status line), as if in the pane the key was pressed in.
run() {
  local v=$1
  shift
  tq "$v" "$RUNSH #{q:pane_id} $B $*"
  printf -v "$v" 'run-shell -b %s' "${!v}"
}
# act VAR ARGS…: like run, and the outcome on the status line on success too (an action
# that ends the session you are in moves you to another one first, then says what it did).
act() {
  local v=$1
  shift
  tq "$v" "$RUNSH -m #{q:pane_id} $B $*"
  printf -v "$v" 'run-shell -b %s' "${!v}"
}
# popup VAR ACTION [SIZE]: popup.sh ACTION in a popup, in the pane's directory.
popup() {
  tq "$1" "$POPUPSH $B $2"
  printf -v "$1" "display-popup -E %s -d '#{pane_current_path}' %s" "${3:--w 90% -h 85%}" "${!1}"
}
confirm() { # VAR PROMPT COMMAND
  local p c
  tq p "$2"
  tq c "$3"
  printf -v "$1" 'confirm-before -p %s %s' "$p" "$c"
}
# menu VAR TITLE, then NAME KEY COMMAND triples ("" alone: a separator). display-menu
# expands each item's command as a format before running it: its # are doubled here (but
# for #[style], which expanding keeps as it is), so the command runs exactly as it would
# from a key binding.
menu() {
  local v=$1 out a b c
  tq a "#[align=centre] $2 "
  out="display-menu -T $a -x C -y C"
  shift 2
  while (($#)); do
    if [[ -z $1 ]]; then
      out+=' ""'
      shift
    else
      tq a "$1"
      tq b "$2"
      c=${3//#/##}
      tq c "${c//##[/#[}"
      out+=" $a $b $c"
      shift 3
    fi
  done
  printf -v "$v" '%s' "$out"
}

x='' y=''
run K_SIDEBAR sidebar toggle
# The new task is asked for in a popup (popup.sh new): what the user types never goes
# through tmux's parser (command-prompt's %1/%% substitution is not safe on tmux 3.3a).
popup K_NEW new "-w 70% -h 10 -T ' orange: new task '"
# A group member's row says its place under its group (@orange_tree: `group api/fix ┬ /1`).
tq x "choose-tree -Zs -f '$IN_TASK' -F '#{?window_format,#{window_name},#{@orange_tree}#{?@orange_status,#{@orange_status},task #{@orange_task}}}'"
tq y "display-message 'orange: no task sessions on this server'"
K_PICK="if-shell -F '#{S:#{?@orange_task,1,}}' $x $y"
run K_NEXT plugin next --client '#{q:client_name}' --session '#{q:session_id}'
# t: a message for an agent, asked for in tmux's command-prompt (`orange plugin prompt`
# builds the prompt: what is typed never goes through tmux's parser, a format or a shell
# line) and sent with `orange task send`. In a task session, for its agent; elsewhere a
# picker of the task sessions first (Enter on one asks for its agent).
run K_SEND plugin prompt --client '#{q:client_name}'
tq x "$RUNSH #{q:pane_id} $B plugin prompt --client #{q:client_name}"
tq x "run-shell -b -t '%%' $x"
tq x "choose-tree -Zs -f '$IN_TASK' -F '#{?window_format,#{window_name},#{@orange_tree}#{?@orange_status,#{@orange_status},task #{@orange_task}}}' $x"
tq y "display-message 'orange: no task sessions on this server'"
tq x "if-shell -F '#{S:#{?@orange_task,1,}}' $x $y"
tq y "$K_SEND"
K_SENDKEY="if-shell -F '$IN_TASK' $y $x"
popup A_SHOW show
act A_RESPAWN task respawn "$T"
act x task respawn --force --yes "$T"
confirm A_RESTART "Stop and restart the running agent of task $T? (y/n)" "$x"
act x task merge "$T"
confirm A_MERGE "Merge task $T? (y/n)" "$x"
popup A_PR pr
popup A_REVIEW review
act x task cancel --yes "$T"
confirm A_CANCEL "Cancel task $T? (y/n)" "$x"
# m: actions for the task of this session; outside one, a short menu of its own (one
# menu with hidden items would show two separators in a row).
menu x "orange task $T" \
  "Attach another task…" a "$K_PICK" \
  "Full screen (zoom the agent)" z "resize-pane -Z" \
  "Show the task" i "$A_SHOW" \
  "Toggle the sidebar" s "$K_SIDEBAR" \
  "Send text to the agent…" t "$K_SEND" \
  "Review the changes…" v "$A_REVIEW" \
  "" \
  "Respawn the agent" r "$A_RESPAWN" \
  "Stop and restart the running agent" R "$A_RESTART" \
  "Merge into the default branch" M "$A_MERGE" \
  "Pull request (push + gh pr create)" p "$A_PR" \
  "Cancel the task" x "$A_CANCEL" \
  "" \
  "New task…" n "$K_NEW"
# (a disabled item's name starts with -: given as a format, so that display-menu does not
# take it for a flag)
menu y "orange" \
  "#{?@orange_task,,-not an orange task session}" "" "" \
  "" \
  "Attach a task…" a "$K_PICK" \
  "New task…" n "$K_NEW"
tq x "$x"
tq y "$y"
K_ACTIONS="if-shell -F '$IN_TASK' $x $y"
# ?: every key, each runnable from the menu.
menu K_HELP "orange: prefix ${key//#/##}, then…" \
  "Toggle the sidebar" s "$K_SIDEBAR" \
  "New task…" n "$K_NEW" \
  "Task picker" l "$K_PICK" \
  "Next task waiting for you" w "$K_NEXT" \
  "Send text to a task's agent…" t "$K_SENDKEY" \
  "Actions for this task…" m "$K_ACTIONS" \
  "" \
  "-In task sessions:" "" "" \
  "-  ${skey//#/##}  focus the sidebar, and back" "" "" \
  "-  ${zkey//#/##}  zoom the agent pane" "" "" \
  "-In the sidebar:" "" "" \
  "-  Tab, Enter  the agent pane; Esc  back; q  close" "" ""

# tmux stops a command sequence at its first failing command: `unbind-key -a` of a table
# that does not exist yet would, so a binding creates the table first.
cmds=(set-option -gq @orange_bin "$bin" \; set-option -gq @orange_dir "$DIR" \;
  bind-key -T orange s "$K_SIDEBAR" \; unbind-key -aq -T orange \;
  bind-key -T orange -N "orange: toggle the sidebar" s "$K_SIDEBAR" \;
  bind-key -T orange -N "orange: new task" n "$K_NEW" \;
  bind-key -T orange -N "orange: task picker" l "$K_PICK" \;
  bind-key -T orange -N "orange: next task waiting for you" w "$K_NEXT" \;
  bind-key -T orange -N "orange: send text to a task's agent" t "$K_SENDKEY" \;
  bind-key -T orange -N "orange: actions for this task" m "$K_ACTIONS" \;
  bind-key -T orange -N "orange: keys" '?' "$K_HELP" \;)
# A binary at hand: whatever a build said on the status line is over.
[[ -x $bin ]] && cmds+=(set-option -gqu @orange_build \;)

# --- what is there already: hooks and bindings, one call -----------------------------------
events=(pane-died pane-exited session-closed client-session-changed)
existing=$(tmux show-hooks -g pane-died \; show-hooks -g pane-exited \; show-hooks -g session-closed \
  \; show-hooks -g client-session-changed \; show-hooks -g window-pane-changed \
  \; list-keys -T prefix \; list-keys -T root 2>/dev/null)
declare -A binding=()
declare -A orange_hooks=()
re_key='^bind-key +(-r +)?-T +([^ ]+) +([^ ]+) +(.*)$'
re_hook='^([a-z-]+)\[([0-9]+)\] (.*)$'
while IFS= read -r line; do
  if [[ $line =~ $re_key ]]; then
    binding["${BASH_REMATCH[2]}:${BASH_REMATCH[3]}"]=${BASH_REMATCH[4]}
  elif [[ $line =~ $re_hook && (${BASH_REMATCH[3]} == *" hook ${BASH_REMATCH[1]} --"* ||
    ${BASH_REMATCH[3]} == *"@orange_sidebar"*"1b 5b 49"*) ]]; then
    orange_hooks[${BASH_REMATCH[1]}]="${BASH_REMATCH[2]} ${orange_hooks[${BASH_REMATCH[1]}]}"
  fi
done <<<"$existing"

# --- keys outside the orange table ----------------------------------------------------------
# list-keys writes a key with a backslash before each of \ " # $ % ' ; { } ~.
escaped() {
  local k=$2 out='' c i
  for ((i = 0; i < ${#k}; i++)); do
    c=${k:i:1}
    [[ $c == [\\\"\#\$%\'\;\{\}~] ]] && out+="\\"
    out+=$c
  done
  printf -v "$1" '%s' "$out"
}
ours() { # TABLE KEY: is the key free, or bound by orange?
  local e
  escaped e "$2"
  local cmd=${binding["$1:$e"]-}
  [[ -z $cmd || $cmd == "switch-client -T orange" || $cmd == *"@orange_task"* ]]
}
bound=()
want_key() { # TABLE KEY EXPLICIT: taken when free, orange's, or set explicitly by the user
  if [[ -n $3 ]] || ours "$1" "$2"; then
    bound+=("$1:$2")
    return 0
  fi
  msg "orange: $1 key $2 is already bound; orange left it alone (see @orange-key, @orange-sidebar-key, @orange-zoom-key)"
  return 1
}
if [[ $key != off ]] && want_key prefix "$key" "$o_key"; then
  cmds+=(bind-key -T prefix -N "orange: enter the orange key table" "$key" switch-client -T orange \;)
fi
# Root keys: orange's action in a task session (@orange_task set); anywhere else the key
# reaches the application unchanged.
if [[ $skey != off && $skey != *\'* ]] && want_key root "$skey" "$o_skey"; then
  tq x "$FOCUSSH #{q:pane_id} $B"
  cmds+=(bind-key -T root "$skey" if-shell -F "$IN_TASK" "run-shell -b $x" "send-keys '$skey'" \;)
fi
if [[ $zkey != off && $zkey != *\'* ]] && want_key root "$zkey" "$o_zkey"; then
  cmds+=(bind-key -T root "$zkey" if-shell -F "$IN_TASK"
    "if-shell -F '#{?@orange_sidebar,1,0}' 'last-pane ; resize-pane -Z' 'resize-pane -Z'"
    "send-keys '$zkey'" \;)
fi
cmds+=(set-option -gq @orange_bound_keys "${bound[*]}" \;)
# A key orange bound last time and no longer wants is unbound while it is still orange's.
read -r -a olds <<<"$o_bound"
for old in "${olds[@]}"; do
  keep=0
  for b in "${bound[@]}"; do [[ $b == "$old" ]] && keep=1; done
  if ((!keep)) && ours "${old%%:*}" "${old#*:}"; then
    tmux unbind-key -q -T "${old%%:*}" "${old#*:}" 2>/dev/null
  fi
done

# --- hooks ----------------------------------------------------------------------------------
# Appended (-ga) next to the user's own; orange's earlier ones (recognised by their
# "hook EVENT --" words) are removed first, so re-running never duplicates them.
declare -A hook_args=(
  [pane-died]="--pane #{q:pane_id} --session #{q:session_name}"
  [pane-exited]="--pane #{q:pane_id} --session #{q:session_name}"
  [session-closed]="--session #{q:hook_session_name}"
  [client-session-changed]="--session #{q:session_name} --client #{q:client_name}"
)
for h in "${events[@]}"; do
  # Highest index first, so removing one never renumbers the next.
  read -r -a idxs <<<"${orange_hooks[$h]-}"
  for i in "${idxs[@]}"; do cmds+=(set-hook -gu "${h}[$i]" \;); done
  if [[ $hooks == on ]]; then
    tq x "$B hook $h ${hook_args[$h]} >/dev/null 2>&1 || true"
    cmds+=(set-hook -ga "$h" "run-shell -b $x" \;)
  fi
done

# --- status line: #{orange_status} in status-left/right becomes the widget ------------------
# #{@orange_build} before it: empty, except while scripts/build.sh builds the binary
# ("⏳ orange: building") or after it failed (with the log's path).
token='#{orange_status}'
widget="#{@orange_build}#($B status --format $sfmt)"
[[ $o_sleft == *"$token"* ]] && cmds+=(set-option -g status-left "${o_sleft//"$token"/"$widget"}" \;)
[[ $o_sright == *"$token"* ]] && cmds+=(set-option -g status-right "${o_sright//"$token"/"$widget"}" \;)

# --- the agent monitor ----------------------------------------------------------------------
# One per tmux server (it takes a lock and exits at once if one runs; it stops with the
# server), so re-running this file never starts a second one.
if [[ ${o_mon:-on} != off ]]; then
  cmds+=(run-shell -b "$B monitor >/dev/null 2>&1 || true" \;)
fi

# --- the sidebar's focus ---------------------------------------------------------------------
# A sidebar is told when it gets or loses the focus, however it moved (a key, the mouse):
# the focus reports a terminal sends (ESC [ I, ESC [ O), which tmux 3.3a sends a pane only
# with focus-events on. No process: tmux itself checks that the pane (or the one that had
# the focus) is a sidebar at work, not in a mode. Last: a tmux too old for its syntax
# stops here, after everything else is set up.
read -r -a idxs <<<"${orange_hooks[window-pane-changed]-}"
for i in "${idxs[@]}"; do cmds+=(set-hook -gu "window-pane-changed[$i]" \;); done
if [[ $hooks == on ]]; then
  at_work='#{?@orange_sidebar,#{?pane_in_mode,,#{?pane_dead,,1}},}'
  cmds+=(set-hook -ga window-pane-changed "if-shell -F \"$at_work\" { send-keys -H 1b 5b 49 } { if-shell -F \"#{P:#{?pane_last,$at_work,}}\" { send-keys -H -t \"{last}\" 1b 5b 4f } }" \;)
fi

unset 'cmds[${#cmds[@]}-1]'
# An argument ending in ";" would end its command: tmux reads "\;" there as a ";".
for i in "${!cmds[@]}"; do
  [[ ${cmds[i]} == *\; && ${cmds[i]} != \; ]] && cmds[i]="${cmds[i]%;}\\;"
done
if ! err=$(tmux "${cmds[@]}" 2>&1); then
  msg "orange: setting up tmux failed: $err"
fi
exit 0
