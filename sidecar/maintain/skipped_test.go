package maintain

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	zapobserver "go.uber.org/zap/zaptest/observer"

	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/retention"
	"github.com/siglake/siglake/sidecar/rewrite"
	"github.com/siglake/siglake/sidecar/rows"
	"github.com/siglake/siglake/sidecar/walgen"
	"github.com/siglake/siglake/test/testenv"
)

// TestPoisonInputSetAside: one of nine overlapping L0 files of a partition is broken in each way a
// bad disk, a truncated upload or a hand-edited bucket leaves it. Every failed rewrite is logged at
// error level with the inputs and the cause class; after SIGLAKE_COMPACTOR_SKIP_AFTER_FAILURES (3)
// the file is set aside in the table's properties, the other eight are rewritten, and every row of
// the readable files is still there exactly once (our reader and DuckDB). Cleared and repaired,
// the file is planned again.
func TestPoisonInputSetAside(t *testing.T) {
	type breakFn func(t *testing.T, path string)
	cases := []struct {
		name  string
		class rewrite.Class
		do    breakFn
	}{
		{"corrupt footer", rewrite.ClassCorrupt, func(t *testing.T, p string) { write(t, p, []byte("not a parquet file")) }},
		{"truncated", rewrite.ClassCorrupt, func(t *testing.T, p string) {
			b, _ := os.ReadFile(p)
			write(t, p, b[:len(b)/2])
		}},
		{"deleted", rewrite.ClassMissing, func(t *testing.T, p string) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}},
		{"a directory in its place", rewrite.ClassCorrupt, func(t *testing.T, p string) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	}
	if os.Geteuid() != 0 { // root reads whatever the mode says
		cases = append(cases, struct {
			name  string
			class rewrite.Class
			do    breakFn
		}{"unreadable", rewrite.ClassPermission, func(t *testing.T, p string) {
			if err := os.Chmod(p, 0); err != nil {
				t.Fatal(err)
			}
		}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, func(cfg *testConfig) { cfg.DeleteTasks = false; cfg.SnapshotExpireInterval = 0 })
			e.writeSegments("events", 9, 300, 3, time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC))
			e.te.DrainAll()
			live := e.te.Table("events")
			files, err := lake.LiveFiles(context.Background(), live)
			if err != nil || len(files) != 9 {
				t.Fatalf("setup: %d files (%v)", len(files), err)
			}
			bad := files[4].Path
			good := map[string]bool{}
			var want RowSum
			for _, f := range files {
				if f.Path != bad {
					s, err := testenv.ParquetRowSum(localPath(f.Path), walgen.Columns...)
					if err != nil {
						t.Fatal(err)
					}
					want.Merge(s)
					good[f.Path] = true
				}
			}
			original, _ := os.ReadFile(localPath(bad))
			c.do(t, localPath(bad))

			now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			m := newMaintainer(t, e, e.lake, func() time.Time { return now })
			core, logs := zapobserver.New(zapcore.ErrorLevel)
			m.Log = zap.New(core)
			for i := 0; i < 3; i++ {
				rep, _ := m.Cycle(context.Background())
				if rep.Failed != 1 {
					t.Fatalf("cycle %d: %d failed rewrites, want 1 (the bin with the bad file)", i, rep.Failed)
				}
				// A cycle before the back-off ends does not try again.
				now = now.Add(10 * time.Second)
				if rep, _ := m.Cycle(context.Background()); rep.Failed != 0 {
					t.Fatalf("cycle %d+10s: %d failed rewrites during the back-off, want none", i, rep.Failed)
				}
				now = now.Add(backoffMin)
			}
			failures := logs.FilterMessageSnippet("rewrite failed").All()
			if len(failures) != 3 {
				t.Fatalf("%d error-level rewrite failure lines, want 3", len(failures))
			}
			fields := failures[0].ContextMap()
			if fields["cause_class"] != string(c.class) || fields["blamed_input"] != bad || !strings.Contains(failures[0].Entry.Message, "rewrite failed") {
				t.Fatalf("failure line %v: want class %s blaming %s", fields, c.class, bad)
			}
			if paths, ok := fields["input_paths"].([]interface{}); !ok || len(paths) != 9 {
				t.Fatalf("failure line lists inputs %v, want the 9 of the bin", fields["input_paths"])
			}
			if logs.FilterMessageSnippet("set a data file aside").Len() != 1 {
				t.Fatal("setting the file aside was not logged at error level")
			}
			skipped := lake.SkippedFiles(e.te.Table("events").Properties())
			if s, ok := skipped[bad]; !ok || s.Class != string(c.class) || s.Failures != 3 {
				t.Fatalf("skip list %+v: want %s set aside as %s after 3 failures", skipped, bad, c.class)
			}
			if got := testutil.ToFloat64(m.Metrics.Rewrite.Failures.WithLabelValues("l0", string(c.class))); got != 3 {
				t.Fatalf("siglake_compactor_rewrite_failures_total{class=%s} = %v, want 3", c.class, got)
			}
			// The next cycle plans the partition without it: the other eight are rewritten.
			rep, err := m.Cycle(context.Background())
			if err != nil || rep.Rewrites != 1 || rep.Failed != 0 {
				t.Fatalf("cycle after the set-aside: %+v, %v; want one committed rewrite", rep, err)
			}
			if got := testutil.ToFloat64(m.Metrics.SkippedFiles.WithLabelValues("events")); got != 1 {
				t.Fatalf("siglake_compactor_skipped_files = %v, want 1", got)
			}
			if st := m.State("events"); st == nil || len(st.Skipped) != 1 || st.Skipped[0].Path != bad {
				t.Fatalf("status does not list the set-aside file: %+v", st)
			}
			after, err := lake.LiveFiles(context.Background(), e.te.Table("events"))
			if err != nil {
				t.Fatal(err)
			}
			var got RowSum
			var paths []string
			for _, f := range after {
				if f.Path == bad {
					continue
				}
				if good[f.Path] {
					t.Fatalf("good input %s is still live: the cluster was not rewritten", f.Path)
				}
				s, err := testenv.ParquetRowSum(localPath(f.Path), walgen.Columns...)
				if err != nil {
					t.Fatal(err)
				}
				got.Merge(s)
				paths = append(paths, localPath(f.Path))
			}
			if got != want {
				t.Fatalf("readable rows after the rewrite %+v, want %+v", got, want)
			}

			// Repaired and cleared, the file is planned again: with seven new files beside it, an L0
			// bin takes it and it is rewritten.
			_ = os.RemoveAll(localPath(bad))
			write(t, localPath(bad), original)
			_ = os.Chmod(localPath(bad), 0o644)
			if cleared, err := e.lake.ClearSkipped(context.Background(), "events", []string{bad}); err != nil || len(cleared) != 1 {
				t.Fatalf("clear: %v %v", cleared, err)
			}
			e.writeSegments("events", 7, 300, 4, time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC))
			e.te.DrainAll()
			now = now.Add(time.Minute)
			if rep, err := m.Cycle(context.Background()); err != nil || rep.Rewrites == 0 {
				t.Fatalf("cycle after the clear: %+v %v", rep, err)
			}
			for _, f := range testlakeLive(t, e) {
				if f == bad {
					t.Fatal("the repaired, cleared file was not planned again")
				}
			}
			// Last: DuckDB (which skips the test where it is not installed) read the rewrite's outputs.
			duck := testenv.DuckDB(t)
			if s := duck.SummarizeWith(paths, testenv.SummaryOptions{ChecksumColumns: walgen.Columns}); s.Rows != want.Rows || s.Checksum != want.Sum {
				t.Fatalf("DuckDB reads %d rows (%d) of the rewrite's outputs, want %+v", s.Rows, s.Checksum, want)
			}
		})
	}
}

func write(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func testlakeLive(t *testing.T, e *env) []string {
	files, err := lake.LiveFiles(context.Background(), e.te.Table("events"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		out = append(out, f.Path)
	}
	return out
}

// TestRetentionReadFailuresSetAside: a file retention must read (a rule covers some of its rows)
// but cannot is logged and counted like a failed rewrite, and set aside after the limit, so
// retention stops failing on it every run.
func TestRetentionReadFailuresSetAside(t *testing.T) {
	e := newEnv(t, func(cfg *testConfig) {
		cfg.Retention = retention.Config{DefaultPeriod: 0, MaxFiles: 8, MaxBytes: 1 << 30, Metadata: metadata}
	})
	sealDays(e, 7, 5, 5, 1)
	e.te.DrainAll()
	if _, err := retention.Set(context.Background(), e.lake, "events", retention.Policy{Period: "0",
		Rules: []retention.Rule{{Where: []rows.Condition{{Column: "severity", Values: []string{"debug"}}}, Period: "3d"}}}); err != nil {
		t.Fatal(err)
	}
	files := testlakeLive(t, e)
	write(t, localPath(files[0]), []byte("not a parquet file"))
	m := newMaintainer(t, e, e.lake, func() time.Time { return retentionNow })
	core, logs := zapobserver.New(zapcore.ErrorLevel)
	m.Log = zap.New(core)
	for i := 0; i < 3; i++ {
		if _, err := m.Retention().Run(context.Background(), "events", retention.Options{Apply: true}); err == nil {
			t.Fatalf("run %d over a corrupt file did not fail", i)
		}
	}
	if s, ok := lake.SkippedFiles(e.te.Table("events").Properties())[files[0]]; !ok || s.Class != string(rewrite.ClassCorrupt) || s.Kind != "retention" {
		t.Fatalf("skip list after 3 failed retention reads: %+v", lake.SkippedFiles(e.te.Table("events").Properties()))
	}
	if n := logs.FilterMessageSnippet("rewrite failed").FilterField(zap.String("kind", "retention")).Len(); n != 3 {
		t.Fatalf("%d error-level failure lines of kind retention, want 3", n)
	}
	rep, err := m.Retention().Run(context.Background(), "events", retention.Options{Apply: true})
	if err != nil || rep.SetAside != 1 {
		t.Fatalf("run after the set-aside: %v, set aside %d; want it to pass and report the file", err, rep.SetAside)
	}
}
