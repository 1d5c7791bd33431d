#!/usr/bin/env bash
# Benchmarks for `aam source add | update | scan | list` on the deterministic corpus
# from ../shared/bench/gen-corpus.sh, with a local repository as the source.
#
#   benches/sources.sh                # sizes 1000 10000 50000, 5 runs each
#   SIZES="10000" RUNS=3 benches/sources.sh
#
# Prints one line per measurement: min and median wall time over RUNS runs.
# Targets (issue #2, 2-core machine): add 10k < 1.5 s; update bench-c1 -> bench-c2
# < 0.15 s at every size; scan and list at 10k < 50 ms.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
gen="$root/../shared/bench/gen-corpus.sh"
sizes=${SIZES:-"1000 10000 50000"}
runs=${RUNS:-5}
work="$root/target/bench"
aam="$root/target/release/aam"

[ -f "$gen" ] || { echo "missing $gen" >&2; exit 1; }
(cd "$root" && cargo build --release --quiet)
mkdir -p "$work"

. "$root/benches/timing.sh"

for n in $sizes; do
  corpus="$work/corpus-$n"
  if [ ! -d "$corpus/.git" ]; then
    rm -rf "$corpus"
    bash "$gen" "$n" "$corpus" 2> /dev/null
  fi
  home="$work/home-$n"

  # add at bench-c2 (the full corpus), fresh home each run
  git -C "$corpus" reset -q --hard bench-c2
  add=()
  for _ in $(seq "$runs"); do
    rm -rf "$home"
    add+=("$(AAM_HOME="$home" time_ms "$aam" source add "$corpus" --name bench)")
  done
  report "add        n=$n" "${add[@]}"

  # scan and list answer from the catalog just built
  scan=(); list=()
  for _ in $(seq "$runs"); do
    scan+=("$(AAM_HOME="$home" time_ms "$aam" --json source scan bench)")
    list+=("$(AAM_HOME="$home" time_ms "$aam" --json source list)")
  done
  report "scan       n=$n" "${scan[@]}"
  report "list       n=$n" "${list[@]}"

  # update bench-c1 -> bench-c2 (+5 ~5 -5 skills): index at c1 (untimed), move, time the update
  update=()
  for _ in $(seq "$runs"); do
    rm -rf "$home"
    git -C "$corpus" reset -q --hard bench-c1
    AAM_HOME="$home" "$aam" source add "$corpus" --name bench > /dev/null
    git -C "$corpus" reset -q --hard bench-c2
    update+=("$(AAM_HOME="$home" time_ms "$aam" --json source update bench)")
  done
  report "update c1->c2 n=$n" "${update[@]}"
  AAM_HOME="$home" "$aam" --json source update bench --dry-run | grep -q '"up_to_date"' \
    || { echo "update did not reach bench-c2" >&2; exit 1; }
done
