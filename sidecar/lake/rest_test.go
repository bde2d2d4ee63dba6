package lake

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/walgen"
	"github.com/siglake/siglake/test/restcat"
)

// openRESTLake opens a lake on a test REST catalog (test/restcat) over a local warehouse.
func openRESTLake(t *testing.T) (*Lake, *restcat.Server) {
	t.Helper()
	wh := filepath.Join(t.TempDir(), "warehouse")
	srv, err := restcat.Start(restcat.Config{Warehouse: "file://" + wh})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	l, err := Open(context.Background(), Config{Catalog: "rest+" + srv.URL, Warehouse: wh, Namespace: "siglake"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, srv
}

// batch writes one data file of walgen rows into table events and returns the append of it as
// segment seq of stream s.
func batch(t *testing.T, l *Lake, seq uint64) AppendRequest {
	t.Helper()
	ctx := context.Background()
	rec := walgen.New(walgen.Options{Seed: seq}).Batch(memory.DefaultAllocator,
		time.Date(2026, 11, 29, 6, 0, int(seq), 0, time.UTC), 200, time.Millisecond)
	defer rec.Release()
	fields := append([]arrow.Field(nil), rec.Schema().Fields()...)
	for i := range fields {
		fields[i].Metadata = arrow.Metadata{}
	}
	sc := arrow.NewSchema(fields, nil)
	tbl, err := l.EnsureTable(ctx, "events", sc)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	outs, err := writer.WriteSorted(ctx, fsys.(icebergio.WriteFileIO), func(int) string { return DataDir(tbl, "2026-11-29") + "/" + merge.DataFileName(0) },
		sc, []arrow.RecordBatch{rec}, merge.WriterOptions{TimestampColumn: TimestampColumn})
	if err != nil {
		t.Fatal(err)
	}
	files, err := DataFiles(tbl, outs)
	if err != nil {
		t.Fatal(err)
	}
	m := marks.Mark{Incarnation: 1, Seq: seq}
	return AppendRequest{Table: "events", Files: files, Stream: "s", First: m, Last: m}
}

var quickRetry = Retry{Attempts: 4, MinWait: time.Millisecond, MaxWait: 10 * time.Millisecond}

func liveCount(t *testing.T, l *Lake) int {
	t.Helper()
	tbl, err := l.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	files, err := LiveFiles(context.Background(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	return len(files)
}

// TestRESTCommitAppendUnknownOutcome: a commit the REST catalog applies but answers with a 503, or
// whose connection it cuts, is retried only after the stream mark is re-read, which finds the
// batch in: nothing is appended twice.
func TestRESTCommitAppendUnknownOutcome(t *testing.T) {
	for _, fault := range []restcat.Fault{restcat.ApplyThen503, restcat.ApplyThenCut} {
		t.Run(string(fault), func(t *testing.T) {
			l, srv := openRESTLake(t)
			if _, err := l.CommitAppend(context.Background(), batch(t, l, 1), quickRetry); err != nil {
				t.Fatal(err)
			}
			srv.Inject(fault, 1)
			res, err := l.CommitAppend(context.Background(), batch(t, l, 2), quickRetry)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != AlreadyCommitted || res.Attempts != 2 {
				t.Fatalf("%s: %+v, want already_committed on the second attempt", fault, res)
			}
			if n := srv.Fired()[fault]; n != 1 {
				t.Fatalf("%s fired %d times, want 1", fault, n)
			}
			if n := liveCount(t, l); n != 2 {
				t.Fatalf("%d live files after two batches, want 2 (the lost answer duplicated a batch)", n)
			}
		})
	}
}

// TestRESTErrorsClassified: what iceberg-go's REST client returns for each answer is a conflict,
// an unknown outcome or a refusal, as lake classifies it.
func TestRESTErrorsClassified(t *testing.T) {
	ctx := context.Background()
	l, srv := openRESTLake(t)
	if _, err := l.CommitAppend(ctx, batch(t, l, 1), quickRetry); err != nil {
		t.Fatal(err)
	}
	commit := func(name string) error {
		_, _, err := l.Catalog().CommitTable(ctx, l.Ident(name), nil,
			[]table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"k": name})})
		return err
	}
	for _, c := range []struct {
		fault             restcat.Fault
		table             string
		conflict, unknown bool
	}{
		{restcat.Conflict409, "events", true, false},
		{restcat.ApplyThen503, "events", false, true},
		{restcat.ApplyThenCut, "events", false, true},
		{"", "missing", false, false}, // 404: refused, nothing applied
	} {
		if c.fault != "" {
			srv.Inject(c.fault, 1)
		}
		err := commit(c.table)
		if err == nil || IsConflict(err) != c.conflict || IsCommitStateUnknown(err) != c.unknown {
			t.Errorf("%s on %s: %v: conflict %v unknown %v, want %v %v", c.fault, c.table, err,
				IsConflict(err), IsCommitStateUnknown(err), c.conflict, c.unknown)
		}
	}
	// A real conflict: two claim-style commits from the same state, the REST 409 of a failed
	// requirement.
	a, err := l.EnsureClaimsTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CommitPropertiesCAS(ctx, a, iceberg.Properties{"x": "1"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := CommitPropertiesCAS(ctx, a, iceberg.Properties{"x": "2"}, nil, nil); !errors.Is(err, ErrCASConflict) {
		t.Fatalf("stale CAS commit on REST: %v, want ErrCASConflict", err)
	}
	if IsCommitStateUnknown(nil) || IsCommitStateUnknown(errors.New("read tcp: connection reset by peer")) != true {
		t.Fatal("nil is unknown, or an unrecognised error is not")
	}
}

// TestRESTReplaceUnknownOutcomeKeepsFiles: a rewrite commit answered 503 after being applied
// reports MaybeCommitted (its outputs are live); the table holds the replacement exactly once.
func TestRESTReplaceUnknownOutcomeKeepsFiles(t *testing.T) {
	ctx := context.Background()
	l, srv := openRESTLake(t)
	a, b := batch(t, l, 1), batch(t, l, 2)
	for _, r := range []AppendRequest{a, b} {
		if _, err := l.CommitAppend(ctx, r, quickRetry); err != nil {
			t.Fatal(err)
		}
	}
	srv.Inject(restcat.ApplyThen503, 1)
	res, err := l.CommitReplace(ctx, "events", a.Files, batch(t, l, 3).Files, nil, nil)
	if err == nil || !res.MaybeCommitted {
		t.Fatalf("replace answered 503: %+v %v, want an error with MaybeCommitted", res, err)
	}
	if n := liveCount(t, l); n != 2 {
		t.Fatalf("%d live files, want 2 (b and the replacement of a)", n)
	}
	// Replaced files are gone from the head, so a retried plan cannot replace them again.
	if _, err := l.CommitReplace(ctx, "events", a.Files, batch(t, l, 4).Files, nil, nil); !errors.Is(err, ErrInputsGone) {
		t.Fatalf("replacing the already replaced files: %v, want ErrInputsGone", err)
	}
}

// TestRESTThrottleWaitsRetryAfter: a 429 is waited out as its Retry-After says and the commit is
// sent again, below CommitAppend (one attempt), and lands once.
func TestRESTThrottleWaitsRetryAfter(t *testing.T) {
	l, srv := openRESTLake(t)
	if _, err := l.CommitAppend(context.Background(), batch(t, l, 1), quickRetry); err != nil {
		t.Fatal(err)
	}
	srv.SetFaults(restcat.Faults{RetryAfter: time.Second})
	srv.Inject(restcat.Throttle429, 1)
	before := srv.Requests()["updateTable"]
	begin := time.Now()
	res, err := l.CommitAppend(context.Background(), batch(t, l, 2), quickRetry)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(begin)
	if res.Outcome != Committed || res.Attempts != 1 {
		t.Fatalf("%+v, want committed on CommitAppend's first attempt", res)
	}
	if srv.Fired()[restcat.Throttle429] != 1 || srv.Requests()["updateTable"]-before != 2 {
		t.Fatalf("429s %d, commit requests %d; want one 429 and the commit sent twice",
			srv.Fired()[restcat.Throttle429], srv.Requests()["updateTable"]-before)
	}
	if took < time.Second {
		t.Fatalf("the commit after a 429 with Retry-After: 1 came %v later", took)
	}
	if n := liveCount(t, l); n != 2 {
		t.Fatalf("%d live files, want 2", n)
	}
}
