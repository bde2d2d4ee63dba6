#!/usr/bin/env bash
# run.sh [RUNS] [PODS]: the aggregate-folding benchmark of docs/benchmarks.md ("Aggregate folding").
# A simulated day of a PODS-pod rollup (default 20), folded; a dashboard query in DuckDB before and
# after (RUNS alternating runs, default 5); fold against a plain k-way merge of the same bin.
# Needs node and scripts/duckdb's packages (scripts/duckdb.sh install). Work files go to
# $SIGLAKE_BENCH_DIR (default .cache/bench-fold).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
runs="${1:-5}"
pods="${2:-20}"
work="${SIGLAKE_BENCH_DIR:-$repo/.cache/bench-fold}"
mkdir -p "$work"
cd "$repo"
scripts/duckdb.sh install >/dev/null
go build -o "$work/fold" ./bench/fold
cp "$here/dashboard.mjs" "$work/"
"$work/fold" -dir "$work/data" -pods "$pods" -runs "$runs" -duckdb "$repo/scripts/duckdb"
