#!/usr/bin/env bash
# run.sh [SPLICE_MIN_ROWS]: an absorb bin on the real binary (docs/benchmarks.md, "Splice": "An
# absorb bin on the real binary").
#
# Builds the binary and generates (once) two walgen WALs: 7 M rows over 53 minutes of one day
# (one commit, about 295 MiB of Parquet: a terminal L2 file) and 20,000 rows inside its last
# 40 s (a straggler). Drains both with `siglake compactor --once` into a fresh embedded
# catalog, then starts `siglake compactor` (maintenance on, first pass checks every level) and
# waits up to 120 s for a committed rewrite. Prints the layout before and after and the merge
# metrics: siglake_merge_spliced_bytes_total is what the splice copied. SPLICE_MIN_ROWS is
# passed as --merge-splice-min-rows (0 turns the splice, and with it absorb bins, off). Work
# files go to $SIGLAKE_BENCH_DIR (default .cache/bench-absorb).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
min_rows="${1:-65536}"
work="${SIGLAKE_BENCH_DIR:-$repo/.cache/bench-absorb}"
port="${SIGLAKE_BENCH_PORT:-19479}"
mkdir -p "$work"
cd "$repo"
go build -o "$work/siglake" ./cmd/siglake
bin="$work/siglake"

tmpl="$work/wal"
if [ ! -f "$tmpl/done" ]; then
	rm -rf "$tmpl"
	mkdir -p "$tmpl/small"
	"$bin" walgen --wal-dir "$tmpl/big" --rows 7000000 --start 2026-11-30T10:00:00Z --step 460us \
		--late-fraction 0 --segment-mb 64 --batch-rows 10000 --seed 3 >/dev/null
	# The straggler's segments continue the big WAL's numbering (one stream).
	cp -r "$tmpl/big" "$tmpl/both"
	"$bin" walgen --wal-dir "$tmpl/both" --rows 20000 --start 2026-11-30T10:53:00Z --step 1ms \
		--late-fraction 0 --seed 4 >/dev/null
	for f in "$tmpl"/both/*.wal; do
		[ -e "$tmpl/big/$(basename "$f")" ] || mv "$f" "$tmpl/small/"
	done
	rm -rf "$tmpl/both"
	touch "$tmpl/done"
fi

run="$work/run"
rm -rf "$run"
mkdir -p "$run/wal"
common=(--catalog "sqlite:$run/catalog.db" --warehouse "$run/warehouse" --wal-dir "$run/wal"
	--memory-budget-bytes 8589934592)
cp "$tmpl"/big/* "$run/wal/"
"$bin" compactor --once "${common[@]}" --http-addr 127.0.0.1:0 --commit-batch-target-mb 100000 \
	--target-file-mb 2048 >"$run/drain-big.log" 2>&1
cp "$tmpl"/small/* "$run/wal/"
"$bin" compactor --once "${common[@]}" --http-addr 127.0.0.1:0 >"$run/drain-small.log" 2>&1
echo "before:"
"$bin" inspect events --catalog "sqlite:$run/catalog.db" --warehouse "$run/warehouse" | head -8

"$bin" compactor "${common[@]}" --http-addr "127.0.0.1:$port" --merge-splice-min-rows "$min_rows" \
	>"$run/maintain.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
committed=0
for _ in $(seq 120); do
	sleep 1
	committed=$(curl -s "127.0.0.1:$port/metrics" | awk '/^siglake_compactor_rewrites_total.*committed/ {s += $2} END {print s + 0}')
	[ "$committed" -gt 0 ] && break
done
echo "rewrites committed: $committed"
curl -s "127.0.0.1:$port/metrics" | grep -E '^siglake_(merge_spliced_bytes_total|merge_(input|output)_bytes_total|merge_duration_seconds_sum|compactor_rewrites_total)' | grep -v ' 0$' || true
echo "process CPU s (user + system, start-up included): $(awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$pid/stat")"
kill "$pid"
wait "$pid" || true
trap - EXIT
echo "after:"
"$bin" inspect events --catalog "sqlite:$run/catalog.db" --warehouse "$run/warehouse" | head -8
