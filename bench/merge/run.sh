#!/usr/bin/env bash
# run.sh [MiB] [FANINS] [REPEAT] [LARGE_MiB] [SHAPES]: the merge benchmark in
# one command. Builds bench/merge, generates (once) the input sets of each bin
# shape in SHAPES (default overlap: 8 and 32 overlapping sorted files; see
# shapes.go for disjoint, sliver, tail and foreign) of MiB decoded MiB in total
# (default 256), runs the merge paths, DuckDB's sorted COPY and iceberg-go's
# RewriteDataFiles on them (CONTENDERS overrides the list), each in its own
# process, REPEAT times (default 3); then, once, the streamed paths and DuckDB
# on 8 inputs of LARGE_MiB (default 1024; 0 skips) to show how peak memory
# scales. Writes bench/merge/RESULTS.md. Work files go to $SIGLAKE_BENCH_DIR
# (default .cache/bench-merge in the repository).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
mb="${1:-256}"
fanins="${2:-8,32}"
repeat="${3:-3}"
large="${4:-1024}"
shapes="${5:-overlap}"
contenders="${CONTENDERS:-in-memory,k-way,page-bounded,splice,duckdb,iceberg-go}"
work="${SIGLAKE_BENCH_DIR:-$repo/.cache/bench-merge}"
mkdir -p "$work"
"$repo/scripts/duckdb.sh" install
go build -o "$work/merge-bench" "$here"
# Our contenders run in merge-child: the same code without iceberg-go's table package, whose init
# every merge-bench process pays (about 0.2 CPU s); merge-bench runs it when it finds it beside itself.
go build -tags mergeonly -o "$work/merge-child" "$here"
cp "$here/duckdb_copy.mjs" "$work/"
{
	echo "# Merge benchmark results"
	echo
	echo "Produced by \`CONTENDERS=$contenders bench/merge/run.sh $mb $fanins $repeat $large $shapes\` on $(date -u +%Y-%m-%d)."
	echo "Each contender runs $repeat times, round-robin, each run in its own process. Seconds: the fastest"
	echo "run's own timing of its merge (process start, input generation and iceberg-go's catalog setup"
	echo "excluded); median s: the median of the runs' timings. Process CPU s: the lowest user+system time of a whole process (startup included);"
	echo "median process CPU s its median; median merge CPU s: the median CPU time of the timed work alone (start-up excluded)."
	echo "Peak RSS: the highest maximum resident set (getrusage) seen; DuckDB's includes node (about"
	echo "50 MiB). MB/s are 10^6 bytes per second of wall time. Our paths also build the search metadata"
	echo "(row-group blooms, group counts, time buckets; in-memory adds the file bloom and a trace_id"
	echo "inverted index attempt); DuckDB and iceberg-go write plain Parquet, and iceberg-go does not sort."
	echo
	"$work/merge-bench" -dir "$work" -shapes "$shapes" -contenders "$contenders" -mb "$mb" -fanins "$fanins" -repeat "$repeat" -duckdb-dir "$repo/scripts/duckdb"
	if [ "$large" != 0 ]; then
		echo
		echo "## Larger input, one run each: how peak memory scales"
		echo
		"$work/merge-bench" -dir "$work" -mb "$large" -fanins 8 -repeat 1 -contenders k-way,page-bounded,duckdb -duckdb-dir "$repo/scripts/duckdb"
	fi
} >"$here/RESULTS.md.tmp"
mv "$here/RESULTS.md.tmp" "$here/RESULTS.md"
cat "$here/RESULTS.md"
