#!/usr/bin/env bash
# Instructions per task of bench/otel-ours.ts's modes, counted by valgrind (steady where CPU time
# is not: a busy machine changes the time an instruction takes, not how many run). Each mode runs
# twice, after the same warm-up, with N1 and N2 measured tasks: (Ir(N2) − Ir(N1)) / (N2 − N1) is
# its instructions per task, start-up and warm-up cancelled out. Node runs with --predictable (V8
# single-threaded: no concurrent compiler or GC threads whose timing varies), without which two
# identical runs differ by tens of millions of instructions; with it, by about 0.1 million.
# Still only for orientation: between task counts GC's timing moves the per-task figure by
# thousands of instructions (on 2026-12-05, `base` and `ours` without an SDK, the same code,
# came out 8,000 apart); the GC trace of otel-ours.ts's runs is the steadier comparison.
#
#   bench/otel-callgrind.sh                     # base, floor and ours with the SDK
#   BENCH_OTEL_PARTS=none bench/otel-callgrind.sh base ours
#
# It bundles otel-ours.ts with esbuild first (valgrind makes tsx's start-up take minutes).
# Env: N1 (2000), N2 (10000), WARM (5000).
set -euo pipefail
cd "$(dirname "$0")/.."
N1=${N1:-2000}
N2=${N2:-10000}
WARM=${WARM:-5000}
modes=("$@")
[ ${#modes[@]} -eq 0 ] && modes=(base floor ours)
bundle=node_modules/.cache/otel-ours-$$.mjs
mkdir -p node_modules/.cache
npx esbuild bench/otel-ours.ts --bundle --platform=node --format=esm --target=node20 --packages=external --log-level=warning --outfile="$bundle"
trap 'rm -f "$bundle"' EXIT
ir() {
  OTEL_OURS_MODE=$1 OTEL_OURS_TASKS=$2 OTEL_OURS_WARM_UP=$WARM valgrind --tool=callgrind --callgrind-out-file=/dev/null node --predictable "$bundle" 2>&1 |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
echo "SDK parts: ${BENCH_OTEL_PARTS:-traces,metrics}; instructions per task, ($N2 − $N1 tasks after $WARM to warm up)"
for mode in "${modes[@]}"; do
  a=$(ir "$mode" "$N1")
  b=$(ir "$mode" "$N2")
  echo "  $mode $(( (b - a) / (N2 - N1) ))   (Ir $a, $b)"
done
