#!/usr/bin/env bash
# Nightly chaos run: every experiment over a few seeds, then one index page.
#
#   ci/nightly.sh [--quick] [--debug] [--out DIR] [--experiments DIR]
#
#   --quick            run each experiment's quick form (about 45 s instead of
#                      about 3 min); at most 5 seeds instead of 10
#   --debug            build and run the debug harness (default: --release)
#   --out DIR          where the reports go (default reports/nightly/<UTC date-time>)
#   --experiments DIR  where the *.yaml files are (default experiments/)
#
# Environment: MAX_SEEDS (default 10, 5 with --quick), RUN_TIMEOUT (seconds
# per harness run; default 900, 300 with --quick).
#
# Each experiment runs as a sequential campaign (`harness campaign
# --until-settled`: seeds in batches until every claim is decided, or
# MAX_SEEDS, "not settled") under <out>/campaigns/; the index shows each
# one's time to proof over the nights. Writes <out>/campaigns.tsv
# (each campaign and its exit code), <out>/runs.tsv (each run), <out>/logs/,
# <out>/nightly.log (this script's whole output) and <out>/index.html, then
# regenerates reports/index.html over every run under reports/, with each
# expectation's pass rate over the nights. Exit 0 when every campaign met
# every expectation, 1 when any failed, errored or timed out (the index is
# written first), 2 when the setup (arguments, build) failed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

quick=""
profile="release"
out=""
exp_dir="experiments"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick="--quick" ;;
    --debug) profile="debug" ;;
    --out) out=${2:?--out needs a folder}; shift ;;
    --experiments) exp_dir=${2:?--experiments needs a folder}; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "nightly: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ -n "$quick" ]; then
  max_seeds=${MAX_SEEDS:-5}; run_timeout=${RUN_TIMEOUT:-300}; mode=quick
else
  max_seeds=${MAX_SEEDS:-10}; run_timeout=${RUN_TIMEOUT:-900}; mode=full
fi

shopt -s nullglob
experiments=("$exp_dir"/*.yaml)
shopt -u nullglob
if [ ${#experiments[@]} -eq 0 ]; then
  echo "nightly: no *.yaml in $exp_dir" >&2
  exit 2
fi

# A fresh folder per night, so earlier nights stay browsable next to it.
out=${out:-reports/nightly/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out/logs"
out=$(cd "$out" && pwd)  # absolute: the harness prints absolute report paths
: >"$out/runs.tsv"

# Everything below also goes to nightly.log, so an unattended night can be read back.
exec > >(tee -a "$out/nightly.log") 2>&1
tee_pid=$!
# On exit, let tee finish writing the log before the script's status is returned.
trap 'exec >&- 2>&-; wait "$tee_pid" 2>/dev/null || true' EXIT
echo "nightly: $(date -u +%FT%TZ) $mode, profile $profile, at most $max_seeds seeds, ${#experiments[@]} experiment(s) from $exp_dir, out $out"

# The Vulkan loader complains on every start without a private runtime dir.
if [ -z "${XDG_RUNTIME_DIR:-}" ] || [ ! -d "$XDG_RUNTIME_DIR" ]; then
  XDG_RUNTIME_DIR=$(mktemp -d)
  export XDG_RUNTIME_DIR
fi
chmod 700 "$XDG_RUNTIME_DIR" 2>/dev/null || true

# The index is written even when nothing could run, so a published site never
# keeps showing an older green night.
write_indexes() {
  local ok=0
  python3 ci/nightly_index.py "$out" || { echo "nightly: writing $out/index.html failed"; ok=1; }
  # reports/index.html lists every run under reports/ (this night's if --out is there).
  case "$out/" in
    "$root/reports/"*) ;;
    *) echo "nightly: note: $out is outside reports/, so reports/index.html does not list it" ;;
  esac
  python3 ci/nightly_index.py reports || { echo "nightly: writing reports/index.html failed"; ok=1; }
  return $ok
}

start=$SECONDS
build_flags=(-p harness)
[ "$profile" = release ] && build_flags+=(--release)
echo "nightly: cargo build ${build_flags[*]}"
if ! cargo build "${build_flags[@]}"; then
  echo "nightly: build failed"
  write_indexes || true
  exit 2
fi
harness="${CARGO_TARGET_DIR:-$root/target}/$profile/harness"
echo "nightly: build took $((SECONDS - start)) s"

# Container images are only needed by environments that run the system in
# Docker; the embedded experiments do not, so a missing piece is a note, not an error.
if command -v docker >/dev/null 2>&1 && [ -f ci/images.sh ]; then
  echo "nightly: building container images (ci/images.sh)"
  image_flags=()
  [ "$profile" = release ] && image_flags+=(--release)
  bash ci/images.sh "${image_flags[@]}" || { echo "nightly: ci/images.sh failed"; write_indexes || true; exit 2; }
elif [ -f ci/images.sh ]; then
  echo "nightly: note: docker not found, container images not built"
else
  echo "nightly: note: no ci/images.sh yet, container images not built"
fi

failed=0
for f in "${experiments[@]}"; do
  name=$(basename "$f" .yaml)
  log="$out/logs/$name-campaign.log"
  t0=$SECONDS
  echo "nightly: campaign $name until settled, at most $max_seeds seeds ($mode; each run bounded by the campaign)"
  # Each experiment runs as a sequential campaign: every (variant, seed) a
  # normal run with its report, judged together by the file's
  # `campaign.expect` and its before/after headline, until settled. SIGINT
  # first: the campaign then writes what finished (exit 130). --foreground:
  # otherwise timeout signals the process group and the runs see it twice.
  set +e
  timeout --foreground --signal=INT --kill-after=60 $((run_timeout * 40)) \
    "$harness" campaign "$f" $quick --until-settled --max-seeds "$max_seeds" --budget 24h --out "$out/campaigns" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  secs=$((SECONDS - t0))
  dir=$(sed -n 's|^campaign: \(.*\)/campaign\.html$|\1|p' "$log" | tail -1)
  case "$rc" in
    0) verdict=PASS ;; 1) verdict="FAIL (expectation)" ;; 2) verdict="ERROR (bad input or setup)" ;;
    124) verdict="TIMEOUT" ;; 130) verdict="INTERRUPTED" ;; *) verdict="ERROR (exit $rc)" ;;
  esac
  [ "$rc" -eq 0 ] || failed=1
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$f" "$name" "$mode" "$rc" "$secs" "${dir:+${dir#"$out"/}}" >>"$out/campaigns.tsv"
  # One runs.tsv row per run of the campaign, so the index lists every run.
  [ -n "$dir" ] && python3 - "$out" "$f" "$name" "$mode" "$dir" >>"$out/runs.tsv" <<'PY'
import json, sys
out, file, name, mode, d = sys.argv[1:6]
c = json.load(open(f"{d}/campaign.json"))
for r in c["runs"]:
    st = r["status"]["status"]
    judged = r["status"].get("judged") or r["status"]
    held = all(ok for _, ok in (judged.get("expectations") or []))
    rc = 2 if st == "errored" else (0 if held else 1)
    report = f"{d}/{r['report']}" if r.get("report") else "-"
    print("\t".join([file, name, str(r["seed"]), mode, str(rc), "0", report.removeprefix(out + "/")]))
PY
  echo "nightly: $verdict campaign $name in ${secs}s${dir:+ -> $dir/campaign.html}"
done

# The virtual clock's breadth, checked by real runs: each experiment the
# virtual clock accepts runs as a virtual campaign of 10 seeds whose first 3
# run again in real time (`--check-real 3`); a disagreement fails the night,
# so a change that breaks the clocks' agreement is found the next morning.
for f in "${experiments[@]}"; do
  name=$(basename "$f" .yaml)
  log="$out/logs/$name-check-real.log"
  t0=$SECONDS
  set +e
  timeout --foreground --signal=INT --kill-after=60 $((run_timeout * 20)) \
    "$harness" campaign "$f" $quick --clock virtual --without-alerts --seeds 1..10 --check-real 3 \
    --budget 24h --out "$out/check-real" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" -eq 2 ] && grep -q "cannot run with --clock virtual" "$log"; then
    echo "nightly: check-real $name SKIPPED: the virtual clock refuses it (real processes live on the wall clock)"
    continue
  fi
  secs=$((SECONDS - t0))
  dir=$(sed -n 's|^campaign: \(.*\)/campaign\.html$|\1|p' "$log" | tail -1)
  [ "$rc" -eq 0 ] || failed=1
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$f" "$name" "$mode virtual+real" "$rc" "$secs" "${dir:+${dir#"$out"/}}" >>"$out/campaigns.tsv"
  echo "nightly: check-real $name exit $rc in ${secs}s${dir:+ -> $dir/campaign.html}"
done

# The nightly folder is linked from the index run by run; the harness's
# per-experiment "latest" links would only make artifact uploads (which follow
# links) carry every run twice.
find "$out" -name latest -type l -delete

write_indexes || failed=1

echo "nightly: done in $((SECONDS - start)) s: $(if [ $failed -eq 0 ]; then echo all runs passed; else echo SOME RUNS FAILED; fi)"
echo "nightly: index $out/index.html"
exit $failed
