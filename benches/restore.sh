#!/usr/bin/env bash
# Restoring a project from its lock file (issue 15): a project with N installed
# skills (default 200, from the deterministic corpus of ../shared/bench/gen-corpus.sh,
# deployed for claude) loses everything but `.aam/aam-lock.yaml`, then
# `aam install` restores it:
#
#   cold   a fresh AAM_HOME each run: no catalog, no git cache (the commit is
#          fetched from the corpus repository, served over smart HTTP on loopback
#          as a CI machine meets a remote, every skill detected and read at it; a
#          local repository a lock names is read only where it is registered)
#   warm   the AAM_HOME that installed it: the git cache holds the commit
#   intact nothing is missing: every recorded file is hashed, nothing written
#
# Each restore is checked byte for byte against the original install once.
#
#   benches/restore.sh                      # 200 skills, 5 runs each
#   N=1000 RUNS=3 benches/restore.sh
#   CARGO_TARGET_DIR=/work/target-release benches/restore.sh
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
gen="$root/../shared/bench/gen-corpus.sh"
n=${N:-200}
runs=${RUNS:-5}
work="$root/target/bench/restore-$n"
aam="$work/aam"
. "$root/benches/timing.sh"

[ -f "$gen" ] || { echo "missing $gen" >&2; exit 1; }
mkdir -p "$work"
# This checkout's binary, copied (see `checkout_binary` in benches/timing.sh).
checkout_binary "$root" "$aam"
uptime

corpus="$work/corpus"
ensure_corpus "$gen" "$n" "$corpus"
home="$work/home"
project="$work/project"
rm -rf "$home" "$project" "$work/served"
mkdir -p "$project" "$work/served"
git -C "$project" init -q
# The corpus served over smart HTTP (`git http-backend` behind the tests' server).
git clone -q --bare "$corpus" "$work/served/corpus.git"
python3 "$root/tests/it/http_backend.py" "$work/served" > "$work/port" &
server=$!
trap 'kill "$server" 2> /dev/null' EXIT
until [ -s "$work/port" ]; do sleep 0.05; done
url="http://127.0.0.1:$(head -1 "$work/port")/corpus.git"
AAM_HOME="$home" "$aam" source add "$url" --name bench > /dev/null 2>&1
mapfile -t specs < <(ls "$corpus/skills" | head -n "$n" | sed 's|^|bench/skills/|')
(cd "$project" && AAM_HOME="$home" "$aam" install --platform claude "${specs[@]}" > /dev/null)
echo "installed ${#specs[@]} skills"

# snapshot DIR: a digest of every file below DIR (but .git and the project lock).
snapshot() {
  (cd "$1" && find . -path ./.git -prune -o -type f ! -path ./.aam/lock -print0 | sort -z | xargs -0 sha256sum) | sha256sum
}
original=$(snapshot "$project")

# keep_only_the_lock: deletes every installed file, keeping `.aam/aam-lock.yaml`.
keep_only_the_lock() {
  find "$project" -mindepth 1 -maxdepth 1 ! -name .git ! -name .aam -exec rm -rf {} +
  find "$project/.aam" -mindepth 1 -maxdepth 1 ! -name aam-lock.yaml -exec rm -rf {} +
}

restore() {
  (cd "$project" && AAM_HOME="$1" "$aam" install --frozen)
}

check() {
  [ "$(snapshot "$project")" = "$original" ] || { echo "restore $1 differs from the install" >&2; exit 1; }
}

cold=(); warm=(); intact=()
for i in $(seq "$runs"); do
  keep_only_the_lock
  rm -rf "$work/fresh"
  cold+=("$(time_ms restore "$work/fresh")")
  [ "$i" = 1 ] && check cold
  keep_only_the_lock
  warm+=("$(time_ms restore "$home")")
  [ "$i" = 1 ] && check warm
  intact+=("$(time_ms restore "$home")")
done
report "restore $n skills, fresh AAM_HOME (fetch)" "${cold[@]}"
report "restore $n skills, git cache present" "${warm[@]}"
report "restore $n skills, nothing missing" "${intact[@]}"
uptime
