#!/usr/bin/env bash
# What a remote `aam source add` costs for a repository holding one large binary blob
# beside its skills (issue #20), against `git clone --bare` of the same URL in the same
# run: both over smart HTTP from `git http-backend` on 127.0.0.1
# (tests/it/http_backend.py), so the network is loopback and the difference is work.
#
#   benches/large_blob.sh                  # a 200 MB blob beside 100 skills, 3 runs
#   BLOB_MB=50 RUNS=5 benches/large_blob.sh
#
# The server allows filters (uploadpack.allowFilter), so aam leaves blobs over 16 MiB
# on it (docs/sources.md, "What a fetch downloads"); the references in the same run are
# `git clone --bare` (everything) and `git clone --bare --filter=blob:limit=16m` (what
# aam asks for).
# Prints `uptime` first: figures depend on load.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
aam=${AAM_BIN:-"$target/release/aam"}
blob_mb=${BLOB_MB:-200}
runs=${RUNS:-3}
work="$target/bench/large-blob-$blob_mb"

[ -n "${AAM_BIN:-}" ] || (cd "$root" && cargo build --release --quiet)
. "$root/benches/timing.sh"
uptime

if [ ! -d "$work/served/repo.git" ]; then
  rm -rf "$work" && mkdir -p "$work/src" "$work/served"
  git -C "$work/src" init -q -b main
  for i in $(seq 100); do
    mkdir -p "$work/src/skills/skill-$i"
    printf -- '---\nname: skill-%d\ndescription: Skill number %d\n---\n# Skill %d\n' "$i" "$i" "$i" \
      > "$work/src/skills/skill-$i/SKILL.md"
  done
  mkdir -p "$work/src/assets"
  head -c "$((blob_mb * 1024 * 1024))" /dev/urandom > "$work/src/assets/model.bin"
  git -C "$work/src" add -A
  git -C "$work/src" -c user.name=b -c user.email=b@b commit -q -m "skills and a large blob"
  git clone -q --bare "$work/src" "$work/served/repo.git"
fi
git -C "$work/served/repo.git" config uploadpack.allowFilter true

python3 "$root/tests/it/http_backend.py" "$work/served" > "$work/port" &
server=$!
trap 'kill $server 2> /dev/null' EXIT
while [ ! -s "$work/port" ]; do sleep 0.1; done
url="http://127.0.0.1:$(cat "$work/port")/repo.git"

add=(); clone=(); filtered=()
for _ in $(seq "$runs"); do
  rm -rf "$work/home" "$work/clone.git" "$work/filtered.git"
  clone+=("$(time_ms git clone -q --bare "$url" "$work/clone.git")")
  filtered+=("$(time_ms git clone -q --bare --filter=blob:limit=16m "$url" "$work/filtered.git")")
  add+=("$(AAM_HOME="$work/home" AAM_FETCH_TIMEOUT=600 time_ms "$aam" source add "$url" --name big)")
done
echo "== ${blob_mb} MB blob beside 100 skills, over loopback smart HTTP"
report "git clone --bare (everything)" "${clone[@]}"
report "git clone --bare --filter=blob:limit=16m" "${filtered[@]}"
report "aam source add" "${add[@]}"
echo "bytes on disk: clone $(du -sm "$work/clone.git" | cut -f1) MB, filtered clone $(du -sm "$work/filtered.git" | cut -f1) MB, aam home $(du -sm "$work/home" | cut -f1) MB"
