#!/usr/bin/env bash
# Runs experiments over several seeds and prints one line per run:
#   ci/seeds.sh [--quick] [--release] [EXPERIMENT.yaml ...]   (default: every experiments/*.yaml)
# SEEDS="1 2 3 4 5" by default; OUT (default /tmp/seed-reports) holds the reports.
# Exits 1 if any run failed an expectation, 2 on a setup error.
set -u
cd "$(dirname "$0")/.."
quick=""
profile=debug
files=()
for a in "$@"; do
  case "$a" in
    --quick) quick="--quick" ;;
    --release) profile=release ;;
    *) files+=("$a") ;;
  esac
done
[ ${#files[@]} -gt 0 ] || files=(experiments/*.yaml)
seeds=${SEEDS:-"1 2 3 4 5"}
out=${OUT:-/tmp/seed-reports}
mkdir -p "$out" "$(dirname "$out")" || exit 2
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
# The workspace, as the tests build it: `-p harness` alone unifies features
# differently and rebuilds most dependencies.
build=(-q -j2 --workspace)
[ "$profile" = release ] && build+=(--release)
cargo build "${build[@]}" || exit 2
harness="${CARGO_TARGET_DIR:-target}/$profile/harness"
worst=0
for f in "${files[@]}"; do
  pass=0; n=0
  for s in $seeds; do
    "$harness" "$f" $quick --seed "$s" --quiet --out "$out" >"$out.log" 2>&1
    rc=$?
    n=$((n + 1))
    if [ $rc -eq 0 ]; then pass=$((pass + 1)); echo "PASS $f seed $s"; else
      echo "FAIL($rc) $f seed $s: $(grep -E 'FAIL|error' "$out.log" | head -3 | tr '\n' ' ')"
      [ $rc -gt $worst ] && worst=$rc
    fi
  done
  echo "== $f: $pass/$n seeds pass"
done
exit $worst
