// Command fold measures aggregate folding (docs/benchmarks.md "Aggregate folding"):
//
//	fold -dir DIR [-pods 20] [-flush 10m] [-runs 5] [-duckdb scripts/duckdb]
//
// A simulated day of a rollup written by `pods` ingest pods: every pod writes its partial
// per-minute rows (events, bytes, max_bytes per service and severity, the walgen rollup's
// schema) in one file per `flush` window, as the drain leaves them. The day is folded the way
// maintenance would (each window's pod files in one fold bin, then 2-hour groups of those
// outputs), and the same two levels without the fold (compacted, every row kept). It reports rows,
// files and bytes of the three, the merge times, and a dashboard query's time in DuckDB over each
// (RUNS round-robin runs, dashboard.mjs; the answers must be the same). Then one bin of the
// pods' whole-day files is merged RUNS times with and without the fold on the k-way path,
// alternating: fold throughput against a plain k-way merge.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/folding"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/sidecar/fold"
	"github.com/siglake/siglake/sidecar/walgen"
)

var (
	day                             = time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	services                        = []string{"api", "auth", "billing", "cart", "checkout", "search", "inventory", "email", "gateway", "payments", "profile", "shipping"}
	severity                        = []string{"debug", "info", "warn", "error", "fatal"}
	sevWeight                       = []int{3, 20, 4, 2, 1} // how many events of each per minute and pod, roughly
	fs        icebergio.WriteFileIO = icebergio.LocalFS{}
)

func main() {
	dir := flag.String("dir", "", "work directory (emptied)")
	pods := flag.Int("pods", 20, "ingest pods writing partial rows")
	flush := flag.Duration("flush", 10*time.Minute, "each pod's file covers this much of the day")
	runs := flag.Int("runs", 5, "alternating runs of the DuckDB query and of the throughput comparison")
	duck := flag.String("duckdb", "scripts/duckdb", "directory whose node_modules hold @duckdb/node-api")
	flag.Parse()
	if err := run(*dir, *pods, *flush, *runs, *duck); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// fileSet is some data files and what they add up to.
type fileSet struct {
	Files int   `json:"files"`
	Rows  int64 `json:"rows"`
	Bytes int64 `json:"bytes"`
	paths []string
}

func (s *fileSet) add(o merge.Output) {
	s.Files++
	s.Rows += o.Rows
	s.Bytes += o.Size
	s.paths = append(s.paths, o.Path)
}

func run(dir string, pods int, flush time.Duration, runs int, duck string) error {
	if dir == "" {
		return fmt.Errorf("-dir is required")
	}
	_ = os.RemoveAll(dir)
	for _, d := range []string{"in", "day", "l1", "l2", "c1", "c2", "tp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	ctx := context.Background()
	spec := fold.Builtin
	spec.Tiers = nil
	f, err := spec.MergeFold(time.Now(), 0)
	if err != nil {
		return err
	}
	before, perWindow, dayBin, err := writeDay(ctx, dir, pods, flush)
	if err != nil {
		return err
	}
	// Fold as maintenance would: each window's pod files, then 2-hour groups of the outputs; and
	// the same two levels without the fold (the file count of a compacted table, every row kept).
	group := max(int(2*time.Hour/flush), 1)
	compacted, compactSecs, err := foldTwoLevels(ctx, dir, perWindow, group, nil, "c1", "c2")
	if err != nil {
		return err
	}
	after, foldSecs, err := foldTwoLevels(ctx, dir, perWindow, group, &f, "l1", "l2")
	if err != nil {
		return err
	}
	report := map[string]any{"pods": pods, "flush": flush.String(), "before": before, "compacted_unfolded": compacted, "after": after,
		"fold_seconds": foldSecs, "compact_seconds": compactSecs, "bins": len(perWindow) + (len(perWindow)+group-1)/group}
	dash, err := dashboard(dir, duck, runs, map[string][]string{"before": before.paths, "compacted": compacted.paths, "folded": after.paths})
	if err != nil {
		return err
	}
	report["dashboard"] = dash
	tp, err := throughput(ctx, dir, dayBin, f, runs)
	if err != nil {
		return err
	}
	report["throughput"] = tp
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(report)
}

// writeDay writes the day: per pod and flush window one file (before, and per window the pods'
// files), and per pod its whole day too (dayBin, the throughput bin).
func writeDay(ctx context.Context, dir string, pods int, flush time.Duration) (before fileSet, perWindow [][]merge.Input, dayBin []merge.Input, err error) {
	windows := int(24 * time.Hour / flush)
	perWindow = make([][]merge.Input, windows)
	for p := 0; p < pods; p++ {
		r := rand.New(rand.NewPCG(uint64(p), 42))
		var podDay []arrow.RecordBatch
		for w := 0; w < windows; w++ {
			rec := podRows(r, day.Add(time.Duration(w)*flush), flush)
			outs, err := writer.WriteSorted(ctx, fs, newPath(dir, "in", 0), walgen.RollupSchema, []arrow.RecordBatch{rec}, merge.WriterOptions{})
			if err != nil {
				return before, nil, nil, err
			}
			for _, o := range outs {
				before.add(o)
				perWindow[w] = append(perWindow[w], merge.Input{Path: o.Path, Size: o.Size, Rows: o.Rows})
			}
			podDay = append(podDay, rec)
		}
		outs, err := writer.WriteSorted(ctx, fs, newPath(dir, "day", 0), walgen.RollupSchema, podDay, merge.WriterOptions{})
		for _, rec := range podDay {
			rec.Release()
		}
		if err != nil {
			return before, nil, nil, err
		}
		for _, o := range outs {
			dayBin = append(dayBin, merge.Input{Path: o.Path, Size: o.Size, Rows: o.Rows})
		}
	}
	return before, perWindow, dayBin, nil
}

// foldTwoLevels rewrites each window's bin into sub1, then groups of group outputs into sub2,
// with fold f (nil: compaction only); it returns the second level and the seconds it all took.
func foldTwoLevels(ctx context.Context, dir string, perWindow [][]merge.Input, group int, f *folding.Fold, sub1, sub2 string) (fileSet, float64, error) {
	start := time.Now()
	var l1 []merge.Input
	var out fileSet
	for _, bin := range perWindow {
		res, err := merge.Rewrite(ctx, fs, bin, walgen.RollupSchema, newPath(dir, sub1, 1), merge.RewriteOptions{Fold: f})
		if err != nil {
			return out, 0, err
		}
		for _, o := range res.Outputs {
			l1 = append(l1, merge.Input{Path: o.Path, Size: o.Size, Rows: o.Rows, Generation: 1})
		}
	}
	for i := 0; i < len(l1); i += group {
		res, err := merge.Rewrite(ctx, fs, l1[i:min(i+group, len(l1))], walgen.RollupSchema, newPath(dir, sub2, 2), merge.RewriteOptions{Fold: f})
		if err != nil {
			return out, 0, err
		}
		for _, o := range res.Outputs {
			out.add(o)
		}
	}
	return out, time.Since(start).Seconds(), nil
}

// podRows is one pod's partial rows of [from, from+span): per minute, service and severity
// (most keys every minute, rare severities now and then).
func podRows(r *rand.Rand, from time.Time, span time.Duration) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, walgen.RollupSchema)
	defer b.Release()
	for m := from; m.Before(from.Add(span)); m = m.Add(time.Minute) {
		for _, svc := range services {
			for si, sev := range severity {
				n := r.IntN(2 * sevWeight[si])
				if n == 0 {
					continue
				}
				b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(m.UnixMicro()))
				b.Field(1).(*array.StringBuilder).Append(svc)
				b.Field(2).(*array.StringBuilder).Append(sev)
				b.Field(3).(*array.Int64Builder).Append(int64(n))
				b.Field(4).(*array.Int64Builder).Append(int64(n * (120 + r.IntN(200))))
				b.Field(5).(*array.Int64Builder).Append(int64(200 + r.IntN(2000)))
			}
		}
	}
	return b.NewRecordBatch()
}

func newPath(dir, sub string, gen int) func(int) string {
	return func(int) string { return filepath.Join(dir, sub, merge.DataFileName(gen)) }
}

// dashboard times the dashboard query in DuckDB over each set of files: the drain's files, the
// same rows compacted, and folded.
func dashboard(dir, duck string, runs int, sets map[string][]string) (map[string]any, error) {
	args := []string{"", duck, fmt.Sprint(runs)}
	names := []string{"before", "compacted", "folded"}
	for _, name := range names {
		list := filepath.Join(dir, name+".txt")
		if err := os.WriteFile(list, []byte(strings.Join(sets[name], "\n")+"\n"), 0o644); err != nil {
			return nil, err
		}
		args = append(args, name+"="+list)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args[0] = filepath.Join(filepath.Dir(self), "dashboard.mjs")
	out, err := exec.Command("node", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("node dashboard.mjs: %w", err)
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("dashboard.mjs said %q: %w", out, err)
	}
	if string(res["same"]) != "true" {
		return nil, fmt.Errorf("the dashboard's answer differs between the file sets: %s", out)
	}
	rep := map[string]any{}
	for _, name := range names {
		var s struct {
			Ms     []float64 `json:"ms"`
			Groups int       `json:"groups"`
		}
		if err := json.Unmarshal(res[name], &s); err != nil {
			return nil, err
		}
		rep[name] = map[string]any{"ms": s.Ms, "median_ms": median(s.Ms), "groups": s.Groups}
	}
	return rep, nil
}

// throughput merges the pods' whole-day files as one bin on the k-way path, with and without the
// fold, runs times alternating.
func throughput(ctx context.Context, dir string, bin []merge.Input, f folding.Fold, runs int) (map[string]any, error) {
	var rows int64
	for _, in := range bin {
		rows += in.Rows
	}
	secs := map[string][]float64{}
	var outRows int64
	for i := 0; i < runs; i++ {
		for _, mode := range []string{"kway", "fold"} {
			opts := merge.RewriteOptions{ForcePath: merge.PathKWay}
			if mode == "fold" {
				opts.Fold = &f
			}
			_ = os.RemoveAll(filepath.Join(dir, "tp"))
			_ = os.MkdirAll(filepath.Join(dir, "tp"), 0o755)
			start := time.Now()
			res, err := merge.Rewrite(ctx, fs, bin, walgen.RollupSchema, newPath(dir, "tp", 1), opts)
			if err != nil {
				return nil, fmt.Errorf("%s merge: %w", mode, err)
			}
			secs[mode] = append(secs[mode], time.Since(start).Seconds())
			if res.Fold != nil {
				outRows = res.Fold.RowsOut
			}
		}
	}
	mk, mf := median(secs["kway"]), median(secs["fold"])
	return map[string]any{"inputs": len(bin), "rows": rows, "fold_rows_out": outRows, "kway_seconds": secs["kway"], "fold_seconds": secs["fold"],
		"median_kway_rows_per_s": float64(rows) / mk, "median_fold_rows_per_s": float64(rows) / mf, "fold_over_kway_time": mf / mk}, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
