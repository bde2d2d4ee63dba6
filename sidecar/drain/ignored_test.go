package drain

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/lake/marks"
)

// TestIgnoredFilesCountedAndLoggedOnce: a symlink named like a segment and a misnamed segment are
// never drained (the link's target is neither read nor removed), but they are counted in
// siglake_wal_ignored_files and logged once per path, not every cycle. The mark moves past the
// link's seq once a later segment commits, as docs/wal-format.md says.
func TestIgnoredFilesCountedAndLoggedOnce(t *testing.T) {
	e := newEnv(t, nil)
	core, logs := observer.New(zap.WarnLevel)
	e.drain.Log = zap.New(core)
	run := e.writeEach(3, 300, 9, time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	// The middle segment moves out of the WAL dir; a link to it takes its name.
	target := filepath.Join(t.TempDir(), run.segs[1].Name)
	if err := os.Rename(run.segs[1].Path, target); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, run.segs[1].Path); err != nil {
		t.Fatal(err)
	}
	misnamed := filepath.Join(e.cfg.WALDir, "events.7.1.wal")
	if err := os.WriteFile(misnamed, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var want RowSum
	want.Merge(run.sums[0])
	want.Merge(run.sums[2])

	for i := 0; i < 3; i++ {
		if _, err := e.drain.Cycle(context.Background(), true); err != nil {
			t.Fatal(err)
		}
	}
	for reason, n := range map[string]float64{localwal.IgnoredNotRegular: 1, localwal.IgnoredMisnamed: 1} {
		if v := testutil.ToFloat64(e.drain.Metrics.IgnoredFiles.WithLabelValues(reason)); v != n {
			t.Errorf("siglake_wal_ignored_files{reason=%q} = %v, want %v", reason, v, n)
		}
	}
	entries := logs.FilterMessageSnippet("looks like a segment but is not drained").All()
	if len(entries) != 2 {
		t.Fatalf("%d log lines after 3 cycles, want one per path (2)", len(entries))
	}
	paths := map[any]bool{}
	for _, en := range entries {
		paths[en.ContextMap()["path"]] = true
	}
	if !paths[run.segs[1].Path] || !paths[misnamed] {
		t.Fatalf("logged paths %v", paths)
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("the link's target was touched: %v", err)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table holds %+v, want the two regular segments' %+v", got, want)
	}
	tbl, err := e.lake.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	if m, ok, err := marks.ReadMark(tbl, "pod-0"); err != nil || !ok || m.Seq != run.segs[2].Seq {
		t.Fatalf("mark %v %v %v, want seq %d: past the ignored link's %d", m, ok, err, run.segs[2].Seq, run.segs[1].Seq)
	}

	// Once removed, the gauge falls to 0.
	os.Remove(run.segs[1].Path)
	os.Remove(misnamed)
	if _, err := e.drain.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	for _, reason := range localwal.IgnoredReasons {
		if v := testutil.ToFloat64(e.drain.Metrics.IgnoredFiles.WithLabelValues(reason)); v != 0 {
			t.Errorf("after removal siglake_wal_ignored_files{reason=%q} = %v", reason, v)
		}
	}
}

// TestManyIgnoredFilesLogBounded: thousands of misnamed files log at most 20 paths in a cycle and
// one line with the counts, and nothing more in the next cycle.
func TestManyIgnoredFilesLogBounded(t *testing.T) {
	e := newEnv(t, nil)
	core, logs := observer.New(zap.WarnLevel)
	e.drain.Log = zap.New(core)
	if err := os.MkdirAll(e.cfg.WALDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		if err := os.WriteFile(filepath.Join(e.cfg.WALDir, fmt.Sprintf("events.7.%d.wal", i+1)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if _, err := e.drain.Cycle(context.Background(), true); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(logs.FilterMessageSnippet("looks like a segment but is not drained").All()); n != 20 {
		t.Fatalf("%d path lines, want 20", n)
	}
	sum := logs.FilterMessageSnippet("more files in the WAL dir").All()
	if len(sum) != 1 || sum[0].ContextMap()["not_logged"] != int64(1980) {
		t.Fatalf("summary lines %+v, want one with 1980 not logged", sum)
	}
	if v := testutil.ToFloat64(e.drain.Metrics.IgnoredFiles.WithLabelValues(localwal.IgnoredMisnamed)); v != 2000 {
		t.Fatalf("gauge %v, want 2000", v)
	}
}
