package drain

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icebergio "github.com/apache/iceberg-go/io"
	"go.uber.org/zap"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/density"
	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/sidecar/drain/batches"
	"github.com/siglake/siglake/sidecar/drain/dayfiles"
	"github.com/siglake/siglake/sidecar/gctune"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/rows"
	"github.com/siglake/siglake/sidecar/walgen"
)

// BenchmarkDrain measures the drain against its floor on the same sealed segments (docs/benchmarks.md,
// "Drain"):
//
//   - drain: Drain.Cycle on a fresh embedded catalog: read and decode the segments, conform, split by
//     day, write sorted generation-0 Parquet, commit, remove the segments;
//   - floor: only writer.WriteSorted of the same (already decoded, conformed, day-split) batches, grouped
//     into the same commit batches, with the same writer options (density cuts included) and FileIO,
//     into a local dir.
//
// Both report MB/s of segment (file) bytes and rows/s; floor/drain time is the share of the drain
// that is Parquet encoding. The input is SIGLAKE_BENCH_WAL (a WAL dir written by `siglake walgen`,
// which bench/drain/run.sh makes) or, without it, SIGLAKE_BENCH_DRAIN_MB (default 32) MB generated
// here. Run one iteration per count: -benchtime=1x -count=3 -cpu=1.
func BenchmarkDrain(b *testing.B) {
	// The binary tunes the collector when GOGC is unset (gomem.GCTuning: one batch of headroom,
	// GOGC between 50 and 100); SIGLAKE_BENCH_GCTUNE_MB=32 does the same here for 32 MiB batches.
	if v := os.Getenv("SIGLAKE_BENCH_GCTUNE_MB"); v != "" {
		mb, err := strconv.Atoi(v)
		if err != nil || mb <= 0 {
			b.Fatalf("SIGLAKE_BENCH_GCTUNE_MB=%q: accepted: a batch size in MiB above 0", v)
		}
		if g := os.Getenv("GOGC"); g != "" {
			b.Fatalf("SIGLAKE_BENCH_GCTUNE_MB and GOGC=%s both set: the binary tunes only without GOGC; unset one", g)
		}
		gctune.Start(gctune.Config{Headroom: int64(mb) << 20, MinPercent: 50, MaxPercent: 100})
	}
	// SIGLAKE_BENCH_ENCODER picks the Parquet encoder as --merge-parquet-encoder does.
	if v := os.Getenv("SIGLAKE_BENCH_ENCODER"); v != "" {
		e, err := writer.ParseEncoder(v)
		if err != nil {
			b.Fatalf("SIGLAKE_BENCH_ENCODER: %v", err)
		}
		writer.SetDefaultEncoder(e)
		defer writer.SetDefaultEncoder(writer.EncoderDefault)
	}
	tmpl := benchWAL(b)
	segs, err := localwal.Scan(tmpl)
	if err != nil || len(segs) == 0 {
		b.Fatalf("no sealed segments in %s (%v)", tmpl, err)
	}
	var walBytes int64
	for _, s := range segs {
		walBytes += s.Size
	}
	rows := benchRows(b, segs)
	b.Logf("input: %d segments, %d rows, %.1f MB", len(segs), rows, float64(walBytes)/1e6)
	cfg := benchConfig(b)

	b.Run("drain", func(b *testing.B) {
		b.SetBytes(walBytes)
		var elapsed, cpu time.Duration
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			dir := b.TempDir()
			c := cfg
			c.WALDir = filepath.Join(dir, "wal")
			linkDir(b, tmpl, c.WALDir)
			d := benchDrain(b, c, dir)
			b.StartTimer()
			began, cpu0 := time.Now(), cpuTime()
			res, err := d.Cycle(context.Background(), true)
			elapsed, cpu = elapsed+time.Since(began), cpu+cpuTime()-cpu0
			b.StopTimer()
			if err != nil || res.Rows != rows || res.Pending != 0 {
				b.Fatalf("drain: %+v %v, want %d rows and nothing pending", res, err, rows)
			}
			d.Lake.Close()
			b.StartTimer()
		}
		reportRates(b, rows, walBytes, elapsed, cpu)
	})

	b.Run("floor", func(b *testing.B) {
		b.SetBytes(walBytes)
		var elapsed, cpu time.Duration
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			dir := b.TempDir()
			work := floorInput(b, cfg, dir, segs)
			b.StartTimer()
			began, cpu0 := time.Now(), cpuTime()
			var written int64
			for _, w := range work {
				outs, err := writer.WriteSorted(context.Background(), w.fs, func(int) string { return w.dir + "/" + merge.DataFileName(0) },
					w.schema, w.recs, w.opts)
				if err != nil {
					b.Fatal(err)
				}
				for _, o := range outs {
					written += o.Rows
				}
			}
			elapsed, cpu = elapsed+time.Since(began), cpu+cpuTime()-cpu0
			b.StopTimer()
			if written != rows {
				b.Fatalf("floor wrote %d rows, want %d", written, rows)
			}
			for _, w := range work {
				for _, r := range w.recs {
					r.Release()
				}
			}
			b.StartTimer()
		}
		reportRates(b, rows, walBytes, elapsed, cpu)
	})
}

// benchConfig is the drain's default configuration (batching 32 MiB / 10 s, flushed by Cycle),
// with the process's default density cuts (SIGLAKE_COMPACTOR_SPLIT_SPARSE) as the binary drains,
// or SIGLAKE_BENCH_SPLIT_SPARSE's (0 turns them off, to compare with builds that had none).
func benchConfig(b *testing.B) Config {
	c := defaultConfig(b.TempDir()).Config
	c.SplitSparse = density.DefaultSplitSparse
	if v := os.Getenv("SIGLAKE_BENCH_SPLIT_SPARSE"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f >= 1 {
			b.Fatalf("SIGLAKE_BENCH_SPLIT_SPARSE=%q: accepted: a fraction in [0, 1)", v)
		}
		c.SplitSparse = f
	}
	return c
}

func benchLake(b *testing.B, dir string) *lake.Lake {
	l, err := lake.Open(context.Background(), lake.Config{Catalog: "sqlite:" + filepath.Join(dir, "catalog.db"),
		Warehouse: filepath.Join(dir, "warehouse"), Namespace: "siglake"})
	if err != nil {
		b.Fatal(err)
	}
	return l
}

func benchDrain(b *testing.B, cfg Config, dir string) *Drain {
	return &Drain{Cfg: cfg, Lake: benchLake(b, dir), Metrics: newMetrics(),
		Log: zap.NewNop(), Now: time.Now, Mem: memory.DefaultAllocator, Retry: lake.DefaultRetry}
}

// floorWork is one WriteSorted call of the floor: the records of one day of one commit batch.
type floorWork struct {
	fs     icebergio.WriteFileIO
	dir    string
	schema *arrow.Schema
	recs   []arrow.RecordBatch
	opts   merge.WriterOptions // the drain's own (Config.fileOptions)
}

// floorInput decodes segs and prepares exactly the WriteSorted calls the drain makes: the same
// commit batches (batches.Plan), conformed to the table schema, split by day.
func floorInput(b *testing.B, cfg Config, dir string, segs []localwal.SegmentInfo) []floorWork {
	ctx := context.Background()
	l := benchLake(b, dir)
	b.Cleanup(func() { l.Close() })
	var out []floorWork
	for _, bt := range batches.Plan(segs, time.Now(), cfg.CommitBatchTargetBytes, cfg.CommitBatchMaxAge, true) {
		var days *dayfiles.Days
		var fsys icebergio.WriteFileIO
		var sc *arrow.Schema
		var tblDir func(date string) string
		var opts merge.WriterOptions
		for _, info := range bt.Segs {
			seg, err := localwal.ReadAll(info.Path, localwal.ReadOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if sc == nil {
				t, err := l.EnsureTable(ctx, bt.Table, rows.TableSchema(seg.Schema, lake.TimestampColumn))
				if err != nil {
					b.Fatal(err)
				}
				if sc, err = lake.ArrowSchema(t); err != nil {
					b.Fatal(err)
				}
				f, err := t.FS(ctx)
				if err != nil {
					b.Fatal(err)
				}
				fsys = f.(icebergio.WriteFileIO)
				tblDir = func(date string) string { return lake.DataDir(t, date) }
				opts = cfg.fileOptions(t, memory.DefaultAllocator)
				days = dayfiles.New(sc.FieldIndices(lake.TimestampColumn)[0], memory.DefaultAllocator)
			}
			for _, rec := range seg.Records {
				c, err := input.Conform(rec, sc, memory.DefaultAllocator)
				if err != nil {
					b.Fatal(err)
				}
				if err := days.Add(ctx, c); err != nil {
					b.Fatal(err)
				}
				c.Release()
			}
			seg.Release()
		}
		for date, recs := range days.Take() {
			out = append(out, floorWork{fs: fsys, dir: tblDir(date), schema: sc, recs: recs, opts: opts})
		}
	}
	return out
}

// benchWAL returns the template WAL dir: SIGLAKE_BENCH_WAL, or one generated here.
func benchWAL(b *testing.B) string {
	if dir := os.Getenv("SIGLAKE_BENCH_WAL"); dir != "" {
		return dir
	}
	mb := 32.0
	if v := os.Getenv("SIGLAKE_BENCH_DRAIN_MB"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			b.Fatalf("SIGLAKE_BENCH_DRAIN_MB=%q: accepted: a size in MB above 0", v)
		}
		mb = f
	}
	dir := filepath.Join(b.TempDir(), "wal")
	// About 250 bytes of segment per walgen row.
	_, err := walgen.Run(context.Background(), walgen.RunOptions{WALDir: dir, Stream: "bench-0", Rows: int64(mb * 1e6 / 250),
		BatchRows: 1000, SegmentSize: 8 << 20, RollAge: time.Hour, Start: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC),
		Gen: walgen.Options{Seed: 1, LateFraction: 0.02, MaxLateness: 5 * time.Minute}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return dir
}

func benchRows(b *testing.B, segs []localwal.SegmentInfo) int64 {
	var n int64
	for _, s := range segs {
		seg, err := localwal.ReadAll(s.Path, localwal.ReadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		n += seg.Rows
		seg.Release()
	}
	return n
}

// linkDir hard-links (or, across file systems, copies) every regular file of src into dst: the
// drain removes its links, the template stays.
func linkDir(b *testing.B, src, dst string) {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		b.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == "LOCK" {
			continue
		}
		from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		if os.Link(from, to) == nil {
			continue
		}
		if err := copyFile(from, to); err != nil {
			b.Fatal(fmt.Errorf("copy %s: %w", from, err))
		}
	}
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// reportRates reports rows/s over wall time and, since the machine is shared, MB and rows per
// second of process CPU time (user + system): the per-core rate an idle core would give.
func reportRates(b *testing.B, rows, walBytes int64, wall, cpu time.Duration) {
	n := float64(b.N)
	b.ReportMetric(float64(rows)*n/wall.Seconds(), "rows/s")
	b.ReportMetric(cpu.Seconds()/n, "cpu-s/op")
	b.ReportMetric(float64(walBytes)*n/1e6/cpu.Seconds(), "MB/cpu-s")
	b.ReportMetric(float64(rows)*n/cpu.Seconds(), "rows/cpu-s")
}

// cpuTime is the process's user plus system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
