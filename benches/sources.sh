#!/usr/bin/env bash
# Benchmarks of whole `aam` processes on the deterministic corpus from
# ../shared/bench/gen-corpus.sh, with a local repository as the source:
# `source add | scan | update`, `list`, and the lookups that must not grow with
# the catalog (`info`, a page of `list --available`, `search`, `catalog stats`,
# `doctor`, `catalog check`).
#
#   benches/sources.sh                          # every op at 1k 10k 50k 100k, 5 runs each
#   SIZES="10000" RUNS=3 benches/sources.sh     # one size, fewer runs
#   OPS=lookups benches/sources.sh              # only the lookups (indexes each size once, untimed)
#
# `add` is printed beside the git floor measured in the same run (`git clone --bare`
# of the corpus plus `git cat-file --batch-all-objects --batch`), with the ratio of
# the medians and the peak RSS of the add runs.
# OPS picks from: add scan list update lookups (default: all), and wide (an update
# that changes every skill, beside an add of that commit; opt-in: it makes a changed
# copy of each corpus, 40 s at 100k). The binary is built
# into $CARGO_TARGET_DIR (default target/), or AAM_BIN names one to use as it is;
# corpora live in target/bench/, kept between runs. Prints one line per measurement: min and median wall time over
# RUNS runs, after the machine's load.
# Targets (2-core machine): add at most 1.5x the git floor at every size and at
# most 150 MB peak at 100k (issue #16), add 10k < 1.5 s; update bench-c1 -> bench-c2 < 0.1 s
# at every size (issue #16); scan and list at 10k < 50 ms (issue #2); info and stats < 10 ms,
# doctor and catalog check < 0.3 s at every size, the first check after a write included
# (issue #16).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
gen="$root/../shared/bench/gen-corpus.sh"
sizes=${SIZES:-"1000 10000 50000 100000"}
runs=${RUNS:-5}
ops=" ${OPS:-add scan list update lookups} "
work="$root/target/bench"
aam=${AAM_BIN:-"${CARGO_TARGET_DIR:-$root/target}/release/aam"}

[ -f "$gen" ] || { echo "missing $gen" >&2; exit 1; }
[ -n "${AAM_BIN:-}" ] || (cd "$root" && cargo build --release --locked --quiet)
mkdir -p "$work"

. "$root/benches/timing.sh"
uptime

# git_floor REPO DEST: what git itself needs to copy a repository and read it all.
git_floor() {
  git clone -q --bare "$1" "$2" && git -C "$2" cat-file --batch-all-objects --batch > /dev/null
}

# median TIMES...: the median of the given millisecond figures.
median() {
  printf '%s\n' "$@" | sort -n | awk '{ t[NR] = $1 } END { print t[int((NR + 1) / 2)] }'
}

for n in $sizes; do
  corpus="$work/corpus-$n"
  if [ ! -d "$corpus/.git" ]; then
    rm -rf "$corpus"
    bash "$gen" "$n" "$corpus" 2> /dev/null
  fi
  home="$work/home-$n"

  # add at bench-c2 (the full corpus), fresh home each run, beside the git floor:
  # a bare clone of the same repository plus reading every object it holds
  git -C "$corpus" reset -q --hard bench-c2
  if [[ $ops == *" add "* ]]; then
    add=(); floor=(); peak=0
    for _ in $(seq "$runs"); do
      rm -rf "$work/floor.git"
      floor+=("$(time_ms git_floor "$corpus" "$work/floor.git")")
      rm -rf "$home"
      add+=("$(AAM_HOME="$home" time_ms /usr/bin/time -f %M -o "$work/rss" "$aam" source add "$corpus" --name bench)")
      peak=$(( $(tail -1 "$work/rss") > peak ? $(tail -1 "$work/rss") : peak ))
    done
    rm -rf "$work/floor.git"
    report "git floor  n=$n" "${floor[@]}"
    report "add        n=$n" "${add[@]}"
    awk -v a="$(median "${add[@]}")" -v f="$(median "${floor[@]}")" -v kb="$peak" -v n="$n" \
      'BEGIN { printf "add/floor  n=%-34s median %.2fx the git floor   peak RSS %d MB\n", n, a / f, kb / 1024 }'
  else
    rm -rf "$home"
    AAM_HOME="$home" "$aam" source add "$corpus" --name bench > /dev/null
  fi

  # scan and list answer from the catalog just built
  scan=(); list=()
  for _ in $(seq "$runs"); do
    [[ $ops == *" scan "* ]] && scan+=("$(AAM_HOME="$home" time_ms "$aam" --json source scan bench)")
    [[ $ops == *" list "* ]] && list+=("$(AAM_HOME="$home" time_ms "$aam" --json source list)")
  done
  [[ $ops == *" scan "* ]] && report "scan       n=$n" "${scan[@]}"
  [[ $ops == *" list "* ]] && report "list       n=$n" "${list[@]}"

  # lookups: one artifact by name and by path, then the census and the health checks
  if [[ $ops == *" lookups "* ]]; then
    folder=$(ls "$corpus/skills" | sed -n "$(( n / 2 ))p")
    skill=$(sed -n 's/^name: *//p' "$corpus/skills/$folder/SKILL.md" | head -1)
    AAM_HOME="$home" "$aam" --json catalog stats > /dev/null # warm the page cache, untimed
    # doctor and check skip SQLite's quick check while the catalog is unchanged since
    # one passed, recorded once the last write is 2 s old: one untimed check records
    # it, so `doctor` and `check` below are repeated runs; `check after a write` is
    # the first check after the catalog changed (touched, then left 2 s, as a real
    # write would be), which runs the quick check again.
    sleep 2.1
    AAM_HOME="$home" "$aam" --json catalog check > /dev/null
    by_name=(); by_path=(); page=(); search=(); stats=(); doctor=(); check=(); full=(); changed=()
    for _ in $(seq "$runs"); do
      by_name+=("$(AAM_HOME="$home" time_ms "$aam" --json info "bench/$skill")")
      by_path+=("$(AAM_HOME="$home" time_ms "$aam" --json info "bench/skills/$folder")")
      page+=("$(AAM_HOME="$home" time_ms "$aam" --json list --available --limit 50)")
      search+=("$(AAM_HOME="$home" time_ms "$aam" --json search quokka)")
      stats+=("$(AAM_HOME="$home" time_ms "$aam" --json catalog stats)")
      doctor+=("$(AAM_HOME="$home" time_ms "$aam" --json doctor)")
      check+=("$(AAM_HOME="$home" time_ms "$aam" --json catalog check)")
      full+=("$(AAM_HOME="$home" time_ms "$aam" --json catalog check --full)")
    done
    for _ in $(seq "$runs"); do
      touch "$home/catalog.db"
      sleep 2.1
      changed+=("$(AAM_HOME="$home" time_ms "$aam" --json catalog check)")
    done
    report "info name  n=$n" "${by_name[@]}"
    report "info path  n=$n" "${by_path[@]}"
    report "list --available (a page) n=$n" "${page[@]}"
    report "search (rare word) n=$n" "${search[@]}"
    report "stats      n=$n" "${stats[@]}"
    report "doctor     n=$n" "${doctor[@]}"
    report "check      n=$n" "${check[@]}"
    report "check after a write n=$n" "${changed[@]}"
    report "check --full n=$n" "${full[@]}"
  fi

  # wide: an update that changes every skill (a formatting commit), beside an add of
  # the same commit, with the peak RSS of each. The changed commit is made once per
  # size in a clone of the corpus (target/bench/wide-N), kept between runs.
  if [[ $ops == *" wide "* ]]; then
    wide="$work/wide-$n"
    if [ ! -f "$wide/.git/wide-done" ]; then
      rm -rf "$wide"
      git clone -q "$corpus" "$wide"
      find "$wide/skills" -name SKILL.md -print0 | xargs -0 sed -i 's/^## Steps$/## Steps to follow/'
      git -C "$wide" -c user.name=bench -c user.email=bench@example.com commit -qam "change every skill"
      git -C "$wide" tag -f bench-wide
      git -C "$wide" repack -adq
      touch "$wide/.git/wide-done"
    fi
    wide_add=(); wide_update=(); add_peak=0; update_peak=0
    for _ in $(seq "$runs"); do
      rm -rf "$home"
      git -C "$wide" update-ref refs/heads/main bench-wide
      wide_add+=("$(AAM_HOME="$home" time_ms /usr/bin/time -f %M -o "$work/rss" "$aam" source add "$wide" --name bench)")
      add_peak=$(( $(tail -1 "$work/rss") > add_peak ? $(tail -1 "$work/rss") : add_peak ))
      rm -rf "$home"
      git -C "$wide" update-ref refs/heads/main bench-c2
      AAM_HOME="$home" "$aam" source add "$wide" --name bench > /dev/null
      git -C "$wide" update-ref refs/heads/main bench-wide
      sync
      wide_update+=("$(AAM_HOME="$home" time_ms /usr/bin/time -f %M -o "$work/rss" "$aam" --json source update bench)")
      update_peak=$(( $(tail -1 "$work/rss") > update_peak ? $(tail -1 "$work/rss") : update_peak ))
    done
    report "add of the changed commit n=$n" "${wide_add[@]}"
    report "update changing every skill n=$n" "${wide_update[@]}"
    echo "peak RSS n=$n: add $(( add_peak / 1024 )) MB, update $(( update_peak / 1024 )) MB"
  fi

  # update bench-c1 -> bench-c2 (+5 ~5 -5 skills): index at c1 (untimed), move, time the update.
  # `sync` before timing: the add leaves hundreds of MB of dirty pages, and the update's
  # fsync would otherwise pay for their writeback (~280 ms at 100k) instead of its own.
  [[ $ops == *" update "* ]] || continue
  update=()
  for _ in $(seq "$runs"); do
    rm -rf "$home"
    git -C "$corpus" reset -q --hard bench-c1
    AAM_HOME="$home" "$aam" source add "$corpus" --name bench > /dev/null
    git -C "$corpus" reset -q --hard bench-c2
    sync
    update+=("$(AAM_HOME="$home" time_ms "$aam" --json source update bench)")
  done
  report "update c1->c2 n=$n" "${update[@]}"
  AAM_HOME="$home" "$aam" --json source update bench --dry-run | grep -q '"up_to_date"' \
    || { echo "update did not reach bench-c2" >&2; exit 1; }
done
