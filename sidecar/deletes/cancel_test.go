package deletes_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/filtered"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/rewrite"
	"github.com/siglake/siglake/sidecar/rows"
)

// TestCancelAfterSweepCommitSeesProgress: a cancel that read the request before a sweep committed
// rows of it (--skip-cancel-period runs a waiting request) and commits after would overwrite the
// progress as cancelled with 0 rows. Its commit pins the snapshot it read, so it retries, reads
// the progress and refuses. (iceberg-go v0.7 also adds a branch requirement of its own to every
// transaction; the explicit pin keeps this true should its commit retries rebase that one.)
func TestCancelAfterSweepCommitSeesProgress(t *testing.T) {
	e := testlake.New(t)
	e.DeleteTable(2)
	r, err := deletes.RecordWith(context.Background(), e.Lake, "events", deletes.Request{Where: []rows.Condition{{Column: "service", Values: []string{"billing"}}}}, time.Now(),
		deletes.RecordOptions{CancelPeriod: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	s := &sweep.Sweeper{Lake: e.Lake, Metrics: sweep.NewMetrics(prometheus.NewRegistry()), Now: time.Now,
		Cfg:      sweep.Config{MaxFiles: 8, MaxBytes: 1024 << 20, TargetFileBytes: 256 << 20},
		Rewriter: filtered.Rewriter{Executor: &rewrite.Executor{Lake: e.Lake, Now: time.Now}, RewriteMetrics: rewrite.NewMetrics(prometheus.NewRegistry()), Log: e.Log}}
	var once sync.Once
	deletes.SetCancelStaged(func() {
		once.Do(func() {
			if _, err := s.SweepTablesWith(context.Background(), nil, sweep.Options{Apply: true, SkipCancelPeriod: true}); err != nil {
				t.Error(err)
			}
		})
	})
	defer deletes.SetCancelStaged(nil)
	_, cerr := deletes.Cancel(context.Background(), e.Lake, "events", r.ID, time.Now(), time.Hour)
	st := testlake.StoredRequests(t, e.Lake)[r.ID]
	if cerr == nil {
		t.Fatalf("cancel after the sweep deleted rows reported success; stored %s with %d rows deleted", st.State, st.RowsDeleted)
	}
	if st.State == deletes.Cancelled || st.RowsDeleted == 0 {
		t.Fatalf("stored %+v (cancel: %v)", st, cerr)
	}
}
