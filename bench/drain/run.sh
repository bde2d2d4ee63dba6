#!/usr/bin/env bash
# run.sh [MB] [COUNT]: the drain benchmark of docs/benchmarks.md ("Drain") in one command.
#
# Generates (once) about MB megabytes of walgen segments (8 MiB each), then, all with GOMAXPROCS=1:
#   1. BenchmarkDrain in package sidecar, COUNT times (one process each): the drain (Drain.Cycle on
#      a fresh embedded catalog), then its floor (merge.WriteSorted of the same decoded batches);
#   2. the real binary, `siglake compactor --once` on a copy of the same WAL, COUNT times under
#      /usr/bin/time -v, for its peak RSS;
# and prints the medians. Work files go to $SIGLAKE_BENCH_DIR (default .cache/bench-drain).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
mb="${1:-300}"
count="${2:-3}"
work="${SIGLAKE_BENCH_DIR:-$repo/.cache/bench-drain}"
mkdir -p "$work"
cd "$repo"
go build -o "$work/siglake" ./cmd/siglake
export GOMAXPROCS=1

tmpl="$work/wal-$mb"
if [ ! -f "$tmpl.json" ]; then
	rm -rf "$tmpl"
	# About 250 bytes of segment per walgen row.
	"$work/siglake" walgen --wal-dir "$tmpl" --stream bench-0 --rows "$((mb * 4000))" --batch-rows 1000 \
		--segment-mb 8 --roll-age 1h --start 2026-11-28T00:00:00Z --seed 1 --late-fraction 0.02 --json >"$tmpl.json.tmp"
	mv "$tmpl.json.tmp" "$tmpl.json"
fi
echo "input: $(cat "$tmpl.json" | cut -c1-80)... in $tmpl"

# One process per run, each running drain then floor, so both see the same machine load (the
# machine is shared: compare them pairwise).
: >"$work/bench.txt"
for i in $(seq "$count"); do
	SIGLAKE_BENCH_WAL="$tmpl" go test ./sidecar/drain -run '^$' -bench '^BenchmarkDrain$' -benchtime 1x -count 1 -cpu 1 \
		-timeout 60m | tee -a "$work/bench.txt"
done

: >"$work/rss.txt"
for i in $(seq "$count"); do
	run="$work/rss"
	rm -rf "$run"
	mkdir -p "$run/wal"
	cp -al "$tmpl/." "$run/wal/" # hard links: the drain removes them, the template stays
	rm -f "$run/wal/LOCK"
	/usr/bin/time -v "$work/siglake" compactor --once --wal-dir "$run/wal" --catalog "sqlite:$run/catalog.db" \
		--warehouse "$run/warehouse" --http-addr 127.0.0.1:0 --log-format json --log-level warn 2>"$run/time.txt"
	left=$(find "$run/wal" -maxdepth 1 -name '*.wal' | wc -l)
	[ "$left" = 0 ] || { echo "--once left $left segments" >&2; exit 1; }
	rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$run/time.txt")
	wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$run/time.txt")
	cpu=$(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {print u+s}' "$run/time.txt")
	echo "$rss $wall $cpu" >>"$work/rss.txt"
	echo "compactor --once: peak RSS ${rss} KiB, wall ${wall}, CPU ${cpu} s"
done
rm -rf "$work/rss"

median() { sort -g | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
# metric NAME UNIT: the median over the runs of sub-benchmark NAME's value in UNIT.
metric() { awk -v n="BenchmarkDrain/$1" -v u="$2" '$1 == n {for (i = 2; i < NF; i++) if ($(i+1) == u) print $i}' "$work/bench.txt" | median; }
dw=$(metric drain ns/op); fw=$(metric floor ns/op)
dc=$(metric drain cpu-s/op); fc=$(metric floor cpu-s/op)
echo
echo "medians of $count runs, GOMAXPROCS=1:"
printf "  drain: %.2f s wall, %s MB/s, %s rows/s; %.2f CPU-s, %s MB/CPU-s, %s rows/CPU-s\n" "$(awk -v a="$dw" 'BEGIN {print a / 1e9}')" \
	"$(metric drain MB/s)" "$(metric drain rows/s)" "$dc" "$(metric drain MB/cpu-s)" "$(metric drain rows/cpu-s)"
printf "  floor: %.2f s wall, %s MB/s, %s rows/s; %.2f CPU-s, %s MB/CPU-s, %s rows/CPU-s\n" "$(awk -v a="$fw" 'BEGIN {print a / 1e9}')" \
	"$(metric floor MB/s)" "$(metric floor rows/s)" "$fc" "$(metric floor MB/cpu-s)" "$(metric floor rows/cpu-s)"
# ratio UNIT: the median over the runs of floor/drain time in UNIT (= drain/floor throughput).
ratio() {
	awk -v u="$1" '$1 == "BenchmarkDrain/drain" {for (i = 2; i < NF; i++) if ($(i+1) == u) d = $i}
		$1 == "BenchmarkDrain/floor" {for (i = 2; i < NF; i++) if ($(i+1) == u) print $i / d}' "$work/bench.txt" | median
}
printf "  drain/floor throughput, median of the per-run ratios: %.2f (wall), %.2f (CPU)\n" "$(ratio ns/op)" "$(ratio cpu-s/op)"
echo "  compactor --once peak RSS: $(cut -d' ' -f1 "$work/rss.txt" | median) KiB; CPU $(cut -d' ' -f3 "$work/rss.txt" | median) s"
