#!/usr/bin/env bash
# Benchmarks for the project's own artifacts kept in the catalog (issue #19):
# `aam source candidates --limit 50` and `aam search review` as whole processes,
# run inside a project that is itself a corpus from ../shared/bench/gen-corpus.sh
# (N skills plus about 25% other artifacts), with no source registered.
#
#   benches/project.sh                 # 20000 and 100000 skills, 10 runs each
#   SIZES="20000" RUNS=5 benches/project.sh
#   AAM_BIN=/path/to/aam benches/project.sh   # an already built binary
#
# Per size: the first call (a fresh AAM_HOME: one walk, every main file read),
# warm calls (nothing changed: stat checks and a keyset query), and calls right
# after one SKILL.md changed (replaced by rename, as editors save), and calls right
# after one new skill folder appeared (the whole detection runs). Reference in
# the same run: the same candidates call from an empty folder (outside any git
# repository, so it is a project with nothing in it). Then the same calls
# through one running `aam mcp serve --root` (benches/mcp_project.py): its
# first call, warm calls answered from its watches, and calls right after one
# file changed and after one skill was added. All of that with
# AAM_PROJECT_AUTO_WATCH=0, so each command checks the files itself. Then the
# CLI calls again as aam runs them by default: the first starts `aam watch` in
# the background (the project is past project.auto_watch entries) and each
# later one asks it instead of checking the files (through inotify, or through
# fanotify where the project's folders would take more than half of
# max_user_watches). Where they would also take more than half of fanotify's
# max_user_marks (or fanotify is closed to the user) no watcher starts by
# itself: the same calls are then measured with `aam watch` started by hand.
# Targets: warm candidates and search <= 100 ms at 20k (<= 300 ms right after one
# file changed), flat at 100k; through the MCP server, warm calls flat (a few
# ms). Prints `uptime` first: figures depend on load.
# Reference in the same run: `git status --porcelain` in the same project, which
# checks the same working tree against its index (the floor a stat check meets).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
gen="$root/../shared/bench/gen-corpus.sh"
sizes=${SIZES:-"20000 100000"}
runs=${RUNS:-10}
work="$root/target/bench"
aam=${AAM_BIN:-"$root/target/release/aam"}

[ -f "$gen" ] || { echo "missing $gen" >&2; exit 1; }
[ -n "${AAM_BIN:-}" ] || (cd "$root" && cargo build --release --quiet)
mkdir -p "$work"
uptime

. "$root/benches/timing.sh"

# candidates_after_edits LABEL: `candidates` right after one SKILL.md was
# replaced by rename (as editors save), RUNS times; `search` too unless LABEL
# says otherwise. The edits are undone after.
candidates_after_edits() {
  local t=() s=() i skill file
  for i in $(seq "$runs"); do
    skill=$(ls skills | sed -n "${i}p")
    file="skills/$skill/SKILL.md"
    sed "s/^name: .*/name: edited-$i/" "$file" > "$file.tmp" && mv "$file.tmp" "$file"
    t+=("$(time_ms "$aam" source candidates --limit 50 --json)")
    [ -n "$1" ] || s+=("$(time_ms "$aam" search review --json)")
  done
  report "${1}candidates right after one file changed" "${t[@]}"
  [ -n "$1" ] || report "search right after one file changed" "${s[@]}"
  git -C "$project" checkout -q -- skills
}

# candidates_after_new_skills LABEL: `candidates` right after one new skill
# folder appeared, RUNS times; the folders are removed after.
candidates_after_new_skills() {
  local t=() i
  for i in $(seq "$runs"); do
    mkdir -p "skills/bench-new-$i"
    printf -- '---\nname: bench-new-%s\ndescription: new\n---\n' "$i" > "skills/bench-new-$i/SKILL.md"
    t+=("$(time_ms "$aam" source candidates --limit 50 --json)")
  done
  report "${1}candidates right after one skill added" "${t[@]}"
  rm -rf skills/bench-new-*
}

for n in $sizes; do
  project="$work/project-$n"
  [ -d "$project/.git" ] || bash "$gen" "$n" "$project" > /dev/null
  home="$work/project-home-$n"
  empty=$(mktemp -d)
  rm -rf "$home"
  export AAM_HOME="$home"
  echo "== $n skills ($(git -C "$project" ls-files | wc -l) files)"
  cd "$project"
  # First each command checks the project's files itself (no watcher started).
  export AAM_PROJECT_AUTO_WATCH=0
  report "candidates, first call" "$(time_ms "$aam" source candidates --limit 50 --json)"
  total=$("$aam" source candidates --limit 1 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])')
  echo "candidates total: $total"

  t=(); for _ in $(seq "$runs"); do t+=("$(time_ms "$aam" source candidates --limit 50 --json)"); done
  report "candidates --limit 50, warm" "${t[@]}"
  t=(); for _ in $(seq "$runs"); do t+=("$(time_ms "$aam" search review --json)"); done
  report "search review, warm" "${t[@]}"

  candidates_after_edits ""
  candidates_after_new_skills ""

  python3 "$root/benches/mcp_project.py" "$aam" "$project" "$runs"

  # The same CLI calls as aam runs them by default: the first command that
  # checks the whole project (past project.auto_watch entries) starts `aam
  # watch` in the background, and each later one asks it whether the record is
  # current instead of checking the files itself.
  unset AAM_PROJECT_AUTO_WATCH
  report "auto watch: candidates, the call that starts the watcher" \
    "$(time_ms "$aam" source candidates --limit 50 --json)"
  label="auto watch: "
  if ! ls "$home"/run/*.started > /dev/null 2>&1; then
    echo "auto watch: no watcher started (its folders would take more than half of" \
      "max_user_watches, $(cat /proc/sys/fs/inotify/max_user_watches), and of fanotify's" \
      "max_user_marks, $(cat /proc/sys/fs/fanotify/max_user_marks 2> /dev/null || echo none)); measuring with aam watch"
    label="with aam watch: "
    AAM_LOG=info "$aam" watch > /dev/null 2> "$home/watch.log" &
  fi
  until ls "$home"/run/*.sock > /dev/null 2>&1; do sleep 0.05; done
  "$aam" source candidates --limit 1 --json > /dev/null # waits for its first refresh
  echo "${label}the watcher $(cat "$home"/run/*.log "$home/watch.log" 2> /dev/null |
    grep -o 'watching the .* folders through [a-z]*' | tail -1)"
  t=(); for _ in $(seq "$runs"); do t+=("$(time_ms "$aam" source candidates --limit 50 --json)"); done
  report "${label}candidates warm" "${t[@]}"
  candidates_after_edits "$label"
  candidates_after_new_skills "$label"
  "$aam" watch --stop > /dev/null # the watcher stops within a second
  wait
  export AAM_PROJECT_AUTO_WATCH=0

  t=(); for _ in $(seq "$runs"); do t+=("$(time_ms git status --porcelain)"); done
  report "reference: git status --porcelain" "${t[@]}"

  cd "$empty"
  t=(); for _ in $(seq "$runs"); do t+=("$(time_ms "$aam" source candidates --limit 50 --json)"); done
  report "reference: candidates in an empty folder" "${t[@]}"
  rm -rf "$empty"
  cd "$root"
done
