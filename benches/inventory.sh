#!/usr/bin/env bash
# `aam inventory -g` over a home folder with 1,000 artifacts (issue 15): a catalog
# of the deterministic corpus of ../shared/bench/gen-corpus.sh (N skills, default
# 10,000), and in the home folder A skills (default 1,000) copied by hand:
#
#   60%  exact copies in ~/.claude/skills
#   20%  exact copies in ~/.agents/skills (a folder many agents share)
#   10%  copies with an extra file in ~/.cursor/skills (modified from the original)
#   10%  skills the catalog has never seen in ~/.claude/skills
#
# Every run walks every agent folder of the table, hashes every file and looks
# every digest up in the catalog's version history. The first run's answer is
# checked (how many exact, modified and unknown).
#
#   benches/inventory.sh                      # 10,000-skill catalog, 1,000 artifacts, 5 runs
#   N=2000 A=500 RUNS=3 benches/inventory.sh
#   CARGO_TARGET_DIR=/work/target-release benches/inventory.sh
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
gen="$root/../shared/bench/gen-corpus.sh"
n=${N:-10000}
a=${A:-1000}
runs=${RUNS:-5}
work="$root/target/bench/inventory-$n"
aam="$work/aam"
. "$root/benches/timing.sh"

[ -f "$gen" ] || { echo "missing $gen" >&2; exit 1; }
[ "$a" -le "$n" ] || { echo "A must not exceed N" >&2; exit 2; }
mkdir -p "$work"
# This checkout's binary, copied (see `checkout_binary` in benches/timing.sh).
checkout_binary "$root" "$aam"
uptime

corpus="$work/corpus"
ensure_corpus "$gen" "$n" "$corpus"
home="$work/aam-home"
user="$work/user"
rm -rf "$home" "$user"
mkdir -p "$user/.claude/skills" "$user/.agents/skills" "$user/.cursor/skills"
start=$(date +%s%N)
AAM_HOME="$home" HOME="$user" "$aam" source add "$corpus" --name bench > /dev/null 2>&1
echo "catalog of $n-skill corpus: $(( ($(date +%s%N) - start) / 1000000 )) ms"

mapfile -t names < <(ls "$corpus/skills" | head -n "$a")
exact_claude=$(( a * 6 / 10 )); exact_shared=$(( a * 2 / 10 )); modified=$(( a / 10 ))
unknown=$(( a - exact_claude - exact_shared - modified ))
i=0
for name in "${names[@]}"; do
  if [ "$i" -lt "$exact_claude" ]; then
    cp -r "$corpus/skills/$name" "$user/.claude/skills/$name"
  elif [ "$i" -lt $(( exact_claude + exact_shared )) ]; then
    cp -r "$corpus/skills/$name" "$user/.agents/skills/$name"
  elif [ "$i" -lt $(( exact_claude + exact_shared + modified )) ]; then
    cp -r "$corpus/skills/$name" "$user/.cursor/skills/$name"
    printf 'my notes on %s\n' "$name" > "$user/.cursor/skills/$name/NOTES.md"
  else
    mkdir -p "$user/.claude/skills/mine-$i"
    printf -- '---\nname: mine-%s\ndescription: written here\n---\nBody %s.\n' "$i" "$i" > "$user/.claude/skills/mine-$i/SKILL.md"
  fi
  i=$(( i + 1 ))
done
echo "home: $a skills ($exact_claude + $exact_shared exact, $modified modified, $unknown unknown)"

inventory() {
  (cd "$user" && AAM_HOME="$home" HOME="$user" "$aam" --json inventory -g)
}

inventory | python3 -c '
import json, sys
want = [int(x) for x in sys.argv[1:]]
items = json.load(sys.stdin)["artifacts"]
exact = sum(1 for a in items if a["origin"] and a["origin"]["match"] == "exact")
modified = sum(1 for a in items if a["origin"] and a["origin"]["match"] == "modified")
unknown = sum(1 for a in items if a["origin"] is None)
got = [len(items), exact, modified, unknown]
assert got == want, f"inventory found {got}, expected {want}"
' "$a" $(( exact_claude + exact_shared )) "$modified" "$unknown"

times=()
for _ in $(seq "$runs"); do
  times+=("$(time_ms inventory)")
done
report "inventory -g, $a artifacts, $n-skill catalog" "${times[@]}"
uptime
