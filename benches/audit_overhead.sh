#!/usr/bin/env bash
# What the content audit adds to `aam source add` (issue 17: at most 10% at 10,000
# skills). Adds the deterministic corpus from ../shared/bench/gen-corpus.sh with the
# audit on and with `AAM_AUDIT=off`, alternating runs so machine load hits both
# alike, and prints the median wall and CPU time of each and the overhead.
#
#   benches/audit_overhead.sh                 # 10,000 skills, 7 runs each
#   SIZES="1000 10000" RUNS=5 benches/audit_overhead.sh
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
gen="$root/../shared/bench/gen-corpus.sh"
sizes=${SIZES:-"10000"}
runs=${RUNS:-7}
work="$root/target/bench"
aam="$root/target/release/aam"

[ -f "$gen" ] || { echo "missing $gen" >&2; exit 1; }
(cd "$root" && cargo build --release --quiet --bin aam)
mkdir -p "$work"
uptime

# add_times HOME [ENV...]: "wall user+sys" seconds of one fresh `source add`.
add_times() {
  local home=$1; shift
  rm -rf "$home"
  local TIMEFORMAT='%R %U %S'
  { time env "$@" AAM_HOME="$home" "$aam" source add "$corpus" --name bench > /dev/null 2>&1; } 2>&1 \
    | awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }'
}

# median FILE COLUMN: the median of one column.
median() {
  sort -n -k"$2" "$1" | awk -v c="$2" '{ v[NR] = $c } END { print v[int((NR + 1) / 2)] }'
}

for n in $sizes; do
  corpus="$work/corpus-$n"
  if [ ! -d "$corpus/.git" ]; then
    rm -rf "$corpus"
    bash "$gen" "$n" "$corpus" 2> /dev/null
  fi
  git -C "$corpus" reset -q --hard bench-c2
  on="$work/audit-on-$n.txt"; off="$work/audit-off-$n.txt"
  : > "$on"; : > "$off"
  for _ in $(seq "$runs"); do
    add_times "$work/audit-home-$n" AAM_AUDIT=off >> "$off"
    add_times "$work/audit-home-$n" AAM_AUDIT=on >> "$on"
  done
  printf 'n=%-7s audit off: wall %ss cpu %ss | audit on: wall %ss cpu %ss | overhead wall %s%% cpu %s%% (%d runs each)\n' \
    "$n" "$(median "$off" 1)" "$(median "$off" 2)" "$(median "$on" 1)" "$(median "$on" 2)" \
    "$(awk -v a="$(median "$off" 1)" -v b="$(median "$on" 1)" 'BEGIN { printf "%.1f", (b - a) * 100 / a }')" \
    "$(awk -v a="$(median "$off" 2)" -v b="$(median "$on" 2)" 'BEGIN { printf "%.1f", (b - a) * 100 / a }')" \
    "$runs"
done
uptime
