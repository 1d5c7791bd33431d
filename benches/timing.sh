# Shared timing helpers of the shell benchmarks (sourced, not run).

# time_ms CMD...: wall time of one run in milliseconds (output discarded).
time_ms() {
  local start end
  start=$(date +%s%N)
  "$@" > /dev/null
  end=$(date +%s%N)
  echo $(( (end - start) / 1000000 ))
}

# report LABEL TIMES...: min and median of the given millisecond figures.
report() {
  local label=$1; shift
  printf '%s\n' "$@" | sort -n | awk -v label="$label" '
    { t[NR] = $1 }
    END { printf "%-44s min %6d ms   median %6d ms   (%d runs)\n", label, t[1], t[int((NR + 1) / 2)], NR }'
}
