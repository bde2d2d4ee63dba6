#!/usr/bin/env bash
# run.sh [COUNT] [ROWS]: the retention benchmark of docs/benchmarks.md ("Retention").
#
#   1. drop: a table of 40 days x 250 live files (10,000); one retention run with a 10-day period
#      drops 30 day partitions. On the local embedded catalog, then (when scripts/test-services.sh
#      can start them) on PostgreSQL + versitygw S3. COUNT runs each; prints every run's JSON.
#   2. rewrite: one day of ROWS walgen rows in one data file; retention with a rule that expires
#      the day's debug rows (a tenth) against the k-way merge of the same file, COUNT runs each, alternating,
#      each in its own process under /usr/bin/time -v for the peak RSS.
# Work files go to $SIGLAKE_BENCH_DIR (default .cache/bench-retention).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
count="${1:-3}"
rows="${2:-2000000}"
work="${SIGLAKE_BENCH_DIR:-$repo/.cache/bench-retention}"
mkdir -p "$work"
cd "$repo"
go build -o "$work/retention" ./bench/retention

# SIGLAKE_BENCH_ONLY=rewrite skips the drop part.
only="${SIGLAKE_BENCH_ONLY:-}"
[ "$only" = rewrite ] || echo "== drop, sqlite + local"
for i in $(seq "$count"); do
	[ "$only" = rewrite ] && break
	rm -rf "$work/drop"
	env -u SIGLAKE_TEST_POSTGRES_DSN -u SIGLAKE_TEST_S3_ENDPOINT "$work/retention" drop -dir "$work/drop"
done
if [ "$only" != rewrite ] && eval "$(scripts/test-services.sh up 2>/dev/null)"; then
	echo "== drop, PostgreSQL + S3"
	for i in $(seq "$count"); do
		rm -rf "$work/drop"
		"$work/retention" drop -dir "$work/drop"
	done
fi

echo "== rewrite, $rows rows"
tmpl="$work/day-$rows"
[ -f "$tmpl/prepared.json" ] || "$work/retention" rewrite -dir "$tmpl" -rows "$rows"
cat "$tmpl/prepared.json"; echo
[ -d "$tmpl.pristine" ] || cp -a "$tmpl" "$tmpl.pristine"
for i in $(seq "$count"); do
	for mode in retention kway; do
		rm -rf "$tmpl"
		cp -a "$tmpl.pristine" "$tmpl"
		/usr/bin/time -v "$work/retention" rewrite -dir "$tmpl" -mode "$mode" >"$work/out.json" 2>"$work/time.txt"
		rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt")
		cpu=$(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {print u+s}' "$work/time.txt")
		echo "$(cat "$work/out.json") peak_rss_kb=$rss cpu_s=$cpu"
	done
done
