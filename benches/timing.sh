# Shared timing helpers of the shell benchmarks (sourced, not run).

# time_ms CMD...: wall time of one run in milliseconds, rounded (output discarded).
# The clock is bash's own: reading it through `date` added the start of a `date`
# process, 2 to 3 ms, to every figure.
time_ms() {
  local start=$EPOCHREALTIME end
  "$@" > /dev/null
  end=$EPOCHREALTIME
  echo $(( (${end/[.,]/} - ${start/[.,]/} + 500) / 1000 ))
}

# report LABEL TIMES...: min and median of the given millisecond figures.
report() {
  local label=$1; shift
  printf '%s\n' "$@" | sort -n | awk -v label="$label" '
    { t[NR] = $1 }
    END { printf "%-44s min %6d ms   median %6d ms   (%d runs)\n", label, t[1], t[int((NR + 1) / 2)], NR }'
}

# checkout_binary ROOT DEST: builds this checkout's release `aam` and copies it to
# DEST. In a target folder shared by several checkouts, cargo takes a build of
# another checkout newer than these sources for fresh, so the sources are touched
# first; the binary is copied so another build cannot swap it mid-run.
checkout_binary() {
  local root=$1 dest=$2 exe
  touch "$root/src/lib.rs"
  exe=$(cd "$root" && cargo build --release --quiet --bin aam --message-format=json \
    | python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("executable"):
        print(m["executable"])')
  cp "$exe" "$dest"
}

# ensure_corpus GEN N DIR: the deterministic corpus of N skills at DIR, generated
# with GEN (../shared/bench/gen-corpus.sh) unless it is already there.
ensure_corpus() {
  local gen=$1 n=$2 dir=$3
  if [ ! -d "$dir/.git" ]; then
    rm -rf "$dir"
    bash "$gen" "$n" "$dir" 2> /dev/null
  fi
}
