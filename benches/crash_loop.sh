#!/usr/bin/env bash
# Kill -9 loop: real `aam install`, `aam upgrade` and `aam uninstall` processes
# killed with SIGKILL at random instants, then checked.
#
#   benches/crash_loop.sh               # 200 kills (debug build)
#   KILLS=600 AAM=target/release/aam benches/crash_loop.sh
#
# Each round restores a saved state (project, AAM_HOME and home folder, at
# fixed paths), starts the command, kills it after a random delay, runs one
# plain `aam list` (which finishes or undoes the interrupted command), and
# checks that:
#   - the project and home folder are byte for byte the state before or the
#     state after the command (lock file compared without its timestamp);
#   - no journal, staged (`.aam-*.new`) or saved (`.aam-*.old`) file is left;
#   - the catalog's install rows name exactly the lock file's packages;
#   - `aam verify --all` is clean, and a plain re-run of an interrupted
#     command succeeds without `--force`.
# Prints one line per operation: kills, how many left the old and the new
# state, and inconsistent rounds (the target is 0).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
kills=${KILLS:-200}
aam=${AAM:-"$root/target/debug/aam"}
(cd "$root" && cargo build --quiet)
command -v sqlite3 > /dev/null || { echo "needs sqlite3" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export AAM_HOME="$work/home" HOME="$work/user"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t.invalid \
  GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t.invalid
proj="$work/proj"
mkdir -p "$proj" "$HOME"
git -C "$proj" init -q
echo "# mine" > "$proj/README.md"
echo "My notes." > "$proj/CLAUDE.md"

# A source with three skills, an agent, a prompt and a rule.
up="$work/upstream"
mkdir -p "$up"
git -C "$up" init -q -b main
write_source() { # VERSION
  for s in pdf docx xlsx; do
    mkdir -p "$up/skills/$s/scripts"
    printf -- '---\nname: %s\ndescription: %s %s\n---\n# %s\n' "$s" "$s" "$1" "$s" > "$up/skills/$s/SKILL.md"
    printf 'print("%s")\n' "$1" > "$up/skills/$s/scripts/run.py"
  done
  mkdir -p "$up/agents" "$up/prompts" "$up/rules"
  printf -- '---\ndescription: reviewer %s\n---\nReview carefully (%s).\n' "$1" "$1" > "$up/agents/reviewer.md"
  printf 'Summarize (%s).\n' "$1" > "$up/prompts/summary.prompt.md"
  printf -- '---\ndescription: style %s\n---\nPrefer small functions (%s).\n' "$1" "$1" > "$up/rules/style.instructions.md"
  git -C "$up" add -A && git -C "$up" commit -qm "$1"
}
write_source v1
"$aam" source add "$up" --name up > /dev/null
specs=(up/pdf up/docx up/xlsx up/reviewer up/summary up/style)
platforms=(--platform claude --platform codex --platform cursor)

save() { tar -C "$work" -cf "$work/$1.tar" proj home user; }
restore() { rm -rf "$proj" "$AAM_HOME" "$HOME"; tar -C "$work" -xf "$work/$1.tar"; }

# fingerprint: every file of the project and home folder (the lock file
# without its timestamp), then the catalog's installed packages.
fingerprint() {
  (cd "$work" && find proj user -type f ! -path '*/.git/*' ! -path 'proj/.aam/lock' -print0 | sort -z |
    while IFS= read -r -d '' f; do
      if [ "$f" = proj/.aam/aam-lock.yaml ]; then grep -v '^resolved_at:' "$f" | sha1sum | sed "s|-|$f|"
      else sha1sum "$f"; fi
    done) | sha1sum | cut -c1-12
}
leftovers() { find "$proj" "$HOME" -name '*.aam-*' -o -name 'journal.json*' | grep -c . || true; }
locked() { grep -E '^  [^ ].*:$' "$proj/.aam/aam-lock.yaml" 2> /dev/null | sed 's/^  //; s/:$//' | sort | tr '\n' ' '; }
mirrored() {
  sqlite3 "$AAM_HOME/catalog.db" "SELECT DISTINCT package FROM install_files WHERE project_root = '$proj' ORDER BY package" |
    tr '\n' ' '
}

# States: empty project; everything installed at v1 (the source updated to
# v2 since); for upgrade and uninstall.
save empty
(cd "$proj" && "$aam" install "${specs[@]}" "${platforms[@]}" > /dev/null)
write_source v2
"$aam" source update up > /dev/null
save installed

round() { # OP FROM STATE_BEFORE STATE_AFTER SPAN_MS -> prints old|new|bad
  local op=$1 from=$2 before=$3 after=$4 span=$5 delay pid now
  restore "$from"
  # A random instant within the command's own uninterrupted run time.
  delay=$(awk -v r="$RANDOM" -v span="$span" 'BEGIN { printf "%.3f", (r % span) / 1000 }')
  (cd "$proj" && exec "$aam" $op > /dev/null 2>&1) &
  pid=$!
  sleep "$delay"
  kill -9 "$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
  (cd "$proj" && "$aam" list > /dev/null 2>"$work/recover.err") || { bad "recovery failed: $(cat "$work/recover.err")"; return; }
  now=$(fingerprint)
  if [ "$(leftovers)" != 0 ]; then bad "leftovers: $(find "$proj" "$HOME" -name '*.aam-*' -o -name 'journal.json*')"; return; fi
  if [ "$(locked)" != "$(mirrored)" ]; then bad "lock [$(locked)] != catalog [$(mirrored)]"; return; fi
  if [ -s "$proj/.aam/aam-lock.yaml" ] && ! (cd "$proj" && "$aam" verify --all > "$work/verify.out" 2>&1); then
    bad "verify not clean: $(tr '\n' ' ' < "$work/verify.out")"; return
  fi
  if [ "$now" = "$before" ]; then
    if (cd "$proj" && "$aam" $op > /dev/null 2>&1) && [ "$(fingerprint)" = "$after" ]; then echo old; else bad "re-run"; fi
  elif [ "$now" = "$after" ]; then echo new
  else bad "neither old nor new"
  fi
}

# bad WHY: reports an inconsistent round on stderr (its state kept for a look).
bad() {
  local keep
  keep=$(mktemp -d /tmp/aam-crash-XXXX)
  cp -a "$proj" "$AAM_HOME" "$HOME" "$keep"/ 2> /dev/null || true
  echo "inconsistent ($1); state kept in $keep" >&2
  echo bad
}

run_op() { # LABEL OP FROM
  local label=$1 op=$2 from=$3 before after n old=0 new=0 bad=0 outcome
  restore "$from"; before=$(fingerprint)
  local start span
  start=$(date +%s%N)
  (cd "$proj" && "$aam" $op > /dev/null 2>&1)
  span=$(( ($(date +%s%N) - start) / 1000000 + 20 ))
  after=$(fingerprint)
  for ((n = 0; n < kills / 3; n++)); do
    outcome=$(round "$op" "$from" "$before" "$after" "$span")
    case $outcome in old) old=$((old + 1)) ;; new) new=$((new + 1)) ;; *) bad=$((bad + 1)) ;; esac
  done
  printf '%-10s kills %4d   old state %4d   new state %4d   inconsistent %d\n' "$label" $((kills / 3)) $old $new $bad
  [ "$bad" = 0 ]
}

status=0
run_op install "install ${specs[*]} ${platforms[*]}" empty || status=1
run_op upgrade "upgrade" installed || status=1
run_op uninstall "uninstall pdf" installed || status=1
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
