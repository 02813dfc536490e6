#!/usr/bin/env bash
# Runs experiments over several seeds and prints one line per run, with each
# variant's verdict, waves and peak failure ratio (from its summary.json),
# and LATE / GPU N % slow where the report's harness-cost panel or GPU pace
# flagged the run (the host could not keep up: read its timing with care):
#   ci/seeds.sh [--quick] [--release] [EXPERIMENT.yaml ...]   (default: every experiments/*.yaml)
# SEEDS="1 2 3 4 5" by default; OUT (default /tmp/seed-reports) holds the
# reports and one log per run; JOBS (default 1) runs that many at once: a
# variant mostly waits on modeled time, so several share a machine (watch
# each report's harness-cost panel for a late schedule).
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
jobs=${JOBS:-1}
mkdir -p "$out" || exit 2
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
# The workspace, as the tests build it: `-p harness` alone unifies features
# differently and rebuilds most dependencies.
build=(-q -j2 --workspace)
[ "$profile" = release ] && build+=(--release)
cargo build "${build[@]}" || exit 2
export harness="${CARGO_TARGET_DIR:-target}/$profile/harness" quick out

# One run: prints "PASS|FAIL(rc) FILE seed N: variant=verdict (waves, peak) ...".
run_one() {
  local f=$1 s=$2 log rc dir line
  log="$out/$(basename "$f" .yaml)-seed$s.log"
  "$harness" "$f" $quick --seed "$s" --quiet --out "$out" >"$log" 2>&1
  rc=$?
  dir=$(sed -n 's/^report: \(.*\)\/index.html$/\1/p' "$log" | tail -n 1)
  line=$(python3 - "$dir/summary.json" <<'EOF' 2>/dev/null
import json, sys
s = json.load(open(sys.argv[1]))
def flags(v):
    # A run its host could not keep up with says so, so a tally never
    # counts it silently: the schedule's lag and the GPU's pace.
    cost, pace = v.get("harness_cost") or {}, v.get("gpu_pacing") or {}
    out = []
    if cost and not cost.get("delivered_as_planned", True):
        out.append(f"LATE: lag p99 {cost.get('lag_p99_ms') or 0:.0f} ms")
    if pace.get("warning"):
        out.append(f"GPU {100 * (pace.get('slower_by') or 0):.0f} % slow")
    return "".join(f", {f}" for f in out)
print(" ".join(
    f"{v['name']}={v['verdict']['verdict']}"
    f"(waves {len(v['waves'])}, peak {v['metrics'].get('peak_failure_ratio') or 0:.2f}"
    + (f", slow {v['verdict']['slow']['took_s']:.0f} s" if v['verdict'].get('slow') else "")
    + flags(v) + ")"
    for v in s["variants"]))
EOF
)
  if [ $rc -eq 0 ]; then echo "PASS $f seed $s: $line"; else
    echo "FAIL($rc) $f seed $s: $line $(grep -E '\[FAIL\]|error' "$log" | head -3 | tr '\n' ' ')"
  fi
  return $rc
}
export -f run_one

results="$out/results.txt"
: >"$results"
for f in "${files[@]}"; do for s in $seeds; do echo "$f $s"; done; done |
  xargs -P "$jobs" -n 2 bash -c 'run_one "$0" "$1"' | tee -a "$results"
worst=0
grep -q '^FAIL(2)' "$results" && worst=2
[ $worst -eq 0 ] && grep -q '^FAIL' "$results" && worst=1
for f in "${files[@]}"; do
  echo "== $f: $(grep -c "^PASS $f " "$results")/$(grep -c " $f seed " "$results") seeds pass"
done
exit $worst
