#!/usr/bin/env bash
# run.sh [ROWS] [COUNT]: the delete-task benchmark of docs/benchmarks.md ("Delete-task rewrite").
#
# Drains ROWS walgen rows (one day, no late rows) into ONE data file (the size of a compacted
# file), records a request deleting one service's rows (about 1/12 of them, spread through the
# file, as one user's rows are), and runs `siglake delete-sweep --apply` on a copy COUNT times
# under /usr/bin/time -v. Prints the rewrite's rows/s and MB/s (from its log line: rows and
# bytes read over its time) and the process's peak RSS, wall and CPU time. Options of the binary
# pass through the environment (SIGLAKE_MERGE_MEMORY_BYTES=4294967296 selects the in-memory arm). Work files go to
# $SIGLAKE_BENCH_DIR (default .cache/bench-deletes).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
rows="${1:-1000000}"
count="${2:-3}"
work="${SIGLAKE_BENCH_DIR:-$repo/.cache/bench-deletes}"
mkdir -p "$work"
cd "$repo"
go build -o "$work/siglake" ./cmd/siglake

tmpl="$work/table-$rows-v2"
if [ ! -f "$tmpl/done" ]; then
	rm -rf "$tmpl"
	mkdir -p "$tmpl"
	"$work/siglake" walgen --wal-dir "$tmpl/wal" --stream bench-0 --rows "$rows" --batch-rows 1000 \
		--segment-mb 64 --roll-age 1h --start 2026-11-28T00:00:00Z --seed 1 --late-fraction 0 --json >/dev/null
	"$work/siglake" compactor --once --wal-dir "$tmpl/wal" --catalog "sqlite:$tmpl/catalog.db" \
		--warehouse "$tmpl/warehouse" --http-addr 127.0.0.1:0 --log-format json --log-level warn \
		--commit-batch-target-mb 100000 --commit-batch-max-age-secs 3600 --target-file-mb 100000
	touch "$tmpl/done"
fi
files=$(find "$tmpl/warehouse" -name '*.parquet' | wc -l)
bytes=$(find "$tmpl/warehouse" -name '*.parquet' -printf '%s\n' | awk '{s+=$1} END {print s}')
echo "input: $rows rows in $files data file(s), $bytes bytes"

# The catalog holds absolute paths, so every run restores the table in place from a pristine copy.
[ -d "$tmpl.pristine" ] || cp -a "$tmpl" "$tmpl.pristine"
: >"$work/results.txt"
for i in $(seq "$count"); do
	rm -rf "$tmpl"
	cp -a "$tmpl.pristine" "$tmpl"
	run="$tmpl"
	opts=(--catalog "sqlite:$run/catalog.db" --warehouse "$run/warehouse")
	"$work/siglake" delete-request "${opts[@]}" --table events --where service=billing --reason bench >/dev/null 2>&1
	/usr/bin/time -v "$work/siglake" delete-sweep --apply --json "${opts[@]}" >"$run/sweep.json" 2>"$run/time.txt"
	rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$run/time.txt")
	wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$run/time.txt")
	cpu=$(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {print u+s}' "$run/time.txt")
	line=$(grep 'rewrote files' "$run/time.txt" | grep 'delete-task')
	[ "$(echo "$line" | wc -l)" = 1 ] || { echo "want one rewrite, got: $line" >&2; exit 1; }
	took=$(echo "$line" | grep -o '"took": "[^"]*"' | cut -d'"' -f4)
	deleted=$(echo "$line" | grep -o '"rows_deleted": [0-9]*' | awk '{print $2}')
	before=$(echo "$line" | grep -o '"rows_before": [0-9]*' | awk '{print $2}')
	read_b=$(echo "$line" | grep -o '"bytes_read": [0-9]*' | awk '{print $2}')
	path=$(echo "$line" | grep -o '"merge_path": "[^"]*"' | cut -d'"' -f4)
	echo "run $i: rewrite ($path) of $before rows deleting $deleted took $took, read $read_b bytes; delete-sweep --apply wall $wall, CPU $cpu s, peak RSS $rss KiB (load average $(cut -d' ' -f1 /proc/loadavg))"
	echo "$before $deleted $took $read_b $rss $wall $cpu" >>"$work/results.txt"
done
