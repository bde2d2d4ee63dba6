package filtered_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/siglake/siglake/merge/rowfilter"
	"github.com/siglake/siglake/sidecar/filtered"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/rewrite"
)

// liveRows is the rows of the live files of events.
func liveRows(t *testing.T, e *testlake.Env) (files []lake.File, n int64) {
	t.Helper()
	files, err := lake.LiveFiles(context.Background(), e.Table("events"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		n += f.Rows
	}
	return files, n
}

// TestCountRewriteFailure: Count counts a file's matching rows; Rewrite replaces the file with one
// without them (the rows the table loses are exactly the counted ones, and a count of the output
// finds none); a read that fails is handed to OnFailure as a failed rewrite of the file.
func TestCountRewriteFailure(t *testing.T) {
	e := testlake.New(t)
	e.DeleteTable(1)
	ctx := context.Background()
	var failed []string
	w := filtered.Rewriter{Executor: &rewrite.Executor{Lake: e.Lake, Now: time.Now}, RewriteMetrics: rewrite.NewMetrics(prometheus.NewRegistry()), Log: e.Log,
		OnFailure: func(_ context.Context, _ string, job rewrite.Job, out rewrite.Outcome) {
			failed = append(failed, job.Inputs[0].Path+" "+string(out.Status))
		}}
	files, before := liveRows(t, e)
	src, err := filtered.Open(ctx, e.Table("events"))
	if err != nil {
		t.Fatal(err)
	}
	rf := &rowfilter.Filter{Predicates: []rowfilter.Predicate{{Columns: []rowfilter.ColumnIn{{Column: "service", Values: []string{"billing"}}}}}}
	rd := filtered.Read{Kind: "delete-task", File: files[0], Filter: rf}
	per, err := w.Count(ctx, src, rd, true)
	if err != nil || len(per) != 1 || per[0] == 0 || per[0] >= files[0].Rows {
		t.Fatalf("count: %v %v, want some but not all of %d rows", per, err, files[0].Rows)
	}
	out := w.Rewrite(ctx, src, filtered.Rewrite{Read: rd, DeleteTask: true, Reason: "test", RowsField: "rows_deleted"})
	if err := out.Error(); err != nil || filtered.Removed(out.Merge) != per[0] {
		t.Fatalf("rewrite: %v, removed %d, want %d", err, filtered.Removed(out.Merge), per[0])
	}
	after, n := liveRows(t, e)
	if n != before-per[0] || slices.ContainsFunc(after, func(f lake.File) bool { return f.Path == files[0].Path }) {
		t.Fatalf("the table holds %d rows, want %d, without %s", n, before-per[0], files[0].Path)
	}
	src, _ = filtered.Open(ctx, e.Table("events"))
	for _, f := range after {
		if per, err := w.Count(ctx, src, filtered.Read{Kind: "delete-task", File: f, Filter: rf}, true); err != nil || per[0] != 0 {
			t.Fatalf("count of %s after the rewrite: %v %v", f.Path, per, err)
		}
	}
	if len(failed) != 0 {
		t.Fatalf("failures reported: %q", failed)
	}
	gone := files[0]
	gone.Path += ".missing" // an object that is not there
	if _, err := w.Count(ctx, src, filtered.Read{Kind: "delete-task", File: gone, Filter: rf}, false); err == nil || len(failed) != 0 {
		t.Fatalf("count of a missing file without record: %v, failures %q", err, failed)
	}
	if _, err := w.Count(ctx, src, filtered.Read{Kind: "delete-task", File: gone, Filter: rf}, true); err == nil || len(failed) != 1 {
		t.Fatalf("count of a missing file: %v, failures %q, want one", err, failed)
	}
}

// TestSetAside: files on the skipped list are set aside, the others read, each in order.
func TestSetAside(t *testing.T) {
	e := testlake.New(t)
	e.DeleteTable(2)
	files, _ := liveRows(t, e)
	if len(files) < 2 {
		t.Fatalf("setup: %d files", len(files))
	}
	if err := e.Lake.SetSkipped(context.Background(), "events", lake.Skipped{Path: files[1].Path, Class: "corrupt", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	read, aside := filtered.SetAside(e.Table("events").Properties(), files, func(f lake.File) string { return f.Path })
	if len(aside) != 1 || aside[0].Path != files[1].Path || len(read) != len(files)-1 || slices.Contains(read, files[1]) {
		t.Fatalf("read %d, aside %v", len(read), aside)
	}
}
