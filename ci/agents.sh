#!/usr/bin/env bash
# Does splitting the load over load agents change what a run measures? Runs
# one experiment PAIRS times with `--agents 1` and `--agents N`, one after the
# other (so a slow stretch of the host falls on both counts), then compares
# them with ci/agents_compare.py: the same document ids and integrity in every
# run (exit 1 otherwise), and how far the peaks differ across counts next to
# how far they differ between runs with the same count.
#   ci/agents.sh [--quick] [--release] [--agents N] [--pairs K] [--seed S]
#                [--environment embedded|containers] FILE
# Defaults: --agents 3, --pairs 3, --seed 42, embedded. OUT (default
# /tmp/agents-compare) holds one folder per run, agents<N>-<i>.
# A quick retry-storm pair takes about 4.5 minutes (release build).
set -u
cd "$(dirname "$0")/.."
quick=""; profile=debug; agents=3; pairs=3; seed=42; env=embedded; file=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick="--quick" ;;
    --release) profile=release ;;
    --agents) agents="$2"; shift ;;
    --pairs) pairs="$2"; shift ;;
    --seed) seed="$2"; shift ;;
    --environment) env="$2"; shift ;;
    -h|--help) sed -n 2,12p "$0"; exit 0 ;;
    -*) echo "agents.sh: unknown option $1" >&2; exit 2 ;;
    *) file="$1" ;;
  esac
  shift
done
[ -n "$file" ] || { echo "agents.sh: name an experiment file" >&2; exit 2; }
case "$agents$pairs" in *[!0-9]*) echo "agents.sh: --agents and --pairs are numbers" >&2; exit 2 ;; esac
[ "$agents" -ge 2 ] && [ "$pairs" -ge 1 ] || { echo "agents.sh: --agents >= 2 and --pairs >= 1" >&2; exit 2; }
case "$env" in embedded|containers) ;; *) echo "agents.sh: --environment is embedded or containers" >&2; exit 2 ;; esac
out=${OUT:-/tmp/agents-compare}
# OUT is emptied first, but only when this script made it (its marker is there).
if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ] && [ ! -e "$out/.agents-compare" ]; then
  echo "agents.sh: $out is not empty and was not made by agents.sh; choose another OUT" >&2
  exit 2
fi
rm -rf "$out" && mkdir -p "$out" && touch "$out/.agents-compare" || exit 2
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
# The workspace, as the tests and ci/images.sh build it (see ci/seeds.sh).
build=(-q -j2 --workspace)
[ "$profile" = release ] && build+=(--release)
cargo build "${build[@]}" || exit 2
if [ "$env" = containers ]; then
  images=()
  [ "$profile" = release ] && images+=(--release)
  bash ci/images.sh "${images[@]}" || exit 2
fi
harness="${CARGO_TARGET_DIR:-target}/$profile/harness"
for i in $(seq 1 "$pairs"); do
  for n in 1 "$agents"; do
    dir="$out/agents$n-$i"
    "$harness" "$file" $quick --seed "$seed" --agents "$n" --environment "$env" \
      --quiet --out "$dir" >"$dir.log" 2>&1
    echo "agents $n, run $i: exit $? ($dir)"
  done
done
python3 ci/agents_compare.py "$out"
