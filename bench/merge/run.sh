#!/usr/bin/env bash
# run.sh [MiB] [FANINS]: the merge benchmark in one command. Builds
# bench/merge, generates (once) 8 and 32 overlapping sorted input files of MiB
# decoded MiB in total (default 256), runs the three merge paths, DuckDB's
# sorted COPY and iceberg-go's RewriteDataFiles on them, each in its own
# process, and writes bench/merge/RESULTS.md. Work files go to
# $SIGLAKE_BENCH_DIR (default .cache/bench-merge in the repository).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
mb="${1:-256}"
fanins="${2:-8,32}"
work="${SIGLAKE_BENCH_DIR:-$repo/.cache/bench-merge}"
mkdir -p "$work"
"$repo/scripts/duckdb.sh" install
go build -o "$work/merge-bench" "$here"
cp "$here/duckdb_copy.mjs" "$work/"
{
	echo "# Merge benchmark results"
	echo
	echo "Produced by \`bench/merge/run.sh $mb $fanins\` on $(date -u +%Y-%m-%d)."
	echo "Seconds are each contender's own timing of its merge (process start, input generation and"
	echo "iceberg-go's catalog setup excluded); peak RSS is the contender process's maximum resident set"
	echo "(getrusage), so DuckDB's includes node (about 50 MiB). MB/s are 10^6 bytes per second."
	echo
	"$work/merge-bench" -dir "$work" -mb "$mb" -fanins "$fanins" -duckdb-dir "$repo/scripts/duckdb"
} >"$here/RESULTS.md.tmp"
mv "$here/RESULTS.md.tmp" "$here/RESULTS.md"
cat "$here/RESULTS.md"
