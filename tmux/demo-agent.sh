#!/bin/sh
# The built-in demo agent of `orange demo`: a stand-in for a coding agent, so a first look
# needs no AI, no account and no network. It prints its progress, edits files, commits on
# its task branch and reports to orange like a real agent would (`orange task update`,
# `orange task complete`). What it does depends on the branch; unknown branches get the
# long-running "working" script. ORANGE_DEMO_PACE: seconds per step (default 2).
# usage: demo-agent.sh [PROMPT]
pace=${ORANGE_DEMO_PACE:-2}
orange=${ORANGE_BIN:-orange}
task=${ORANGE_TASK_ID:-?}

step() {
  printf '\033[1;33m●\033[0m %s\n' "$*"
  sleep "$pace"
}
say() { printf '  %s\n' "$*"; }
commit() {
  git add -A &&
    git -c user.name='orange demo agent' -c user.email=demo@orange.invalid \
      -c commit.gpgsign=false -c core.hooksPath=/dev/null commit -qm "$1" &&
    printf '\033[32m✓\033[0m committed: %s\n' "$1"
}
report() { "$orange" task "$@" >/dev/null 2>&1 || printf '  (orange task %s failed)\n' "$*"; }
wait_for_input() {
  printf '\n\033[2m(the demo agent is idle: type something and press Enter)\033[0m\n'
  while IFS= read -r line; do
    printf '\033[1;33m●\033[0m noted: %s\n' "$line"
  done
}

printf '\033[1morange demo agent\033[0m · task %s · branch %s\n\n' "$task" "${ORANGE_BRANCH:-?}"
printf '> %s\n\n' "$(printf '%s\n' "${1:-}" | head -n 1)"

case ${ORANGE_BRANCH:-} in
*dark-mode*)
  step "Reading src/theme.css and src/settings.js"
  step "Plan: a dark palette, a theme setting, a toggle"
  cat >>src/theme.css <<'CSS'

body.dark {
  color: #eee;
  background: #121212;
}
CSS
  step "Added a dark palette to src/theme.css"
  commit "Dark palette"
  sed 's/language: .en.,/&\n  theme: "light",/' src/settings.js >src/settings.js.new && mv src/settings.js.new src/settings.js
  printf 'export function toggleTheme(s) {\n  s.theme = s.theme === "dark" ? "light" : "dark";\n  document.body.className = s.theme;\n}\n' >src/theme.js
  step "Added the theme setting and src/theme.js"
  commit "Theme setting and toggle"
  step "Running the tests: 12 passed"
  report complete
  printf '\033[32m✓\033[0m Done: ready for review (orange task complete)\n'
  wait_for_input
  ;;
*lockout*)
  step "Reading src/login.js"
  printf 'const failures = new Map();\n' >src/lockout.js
  step "Counting failed logins per account in src/lockout.js"
  commit "Count failed logins"
  report update --status clarification
  printf '\n\033[1;36m?\033[0m After how many failed attempts should an account be locked, and for how long?\n'
  printf '  (orange shows this task as waiting for you: answer here and press Enter)\n> '
  IFS= read -r answer
  report update --status working
  step "Locking after: ${answer:-5 attempts, 15 minutes}"
  printf '// lock policy: %s\nexport const policy = %s;\n' "${answer:-5 attempts, 15 minutes}" '{ attempts: 5, minutes: 15 }' >>src/lockout.js
  commit "Lock accounts after repeated failures"
  report complete
  printf '\033[32m✓\033[0m Done: ready for review\n'
  wait_for_input
  ;;
*)
  n=0
  for what in "Reading src/search.js" "Writing a typo-tolerant matcher" "Ranking exact matches first" \
    "Adding tests for misspelled queries" "Tuning the edit distance" "Benchmarking 10,000 products"; do
    n=$((n + 1))
    step "$what"
    printf '// step %s: %s\n' "$n" "$what" >>src/search.js
    if [ $((n % 2)) -eq 0 ]; then commit "Search: $what"; fi
  done
  printf 'export const maxDistance = 2;\n' >src/fuzzy.js
  step "Still working: src/fuzzy.js is not committed yet"
  while :; do
    step "Thinking about ranking…"
    sleep "$pace"
  done
  ;;
esac
