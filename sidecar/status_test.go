package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/drain"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/maintain"
)

// TestStatusPublishedValuesAreNotMutated: the loops publish into Status while /debug/status
// encodes a snapshot outside the lock. Run under -race (make test does): a Status that handed out
// a value it later writes is a data race the detector reports.
func TestStatusPublishedValuesAreNotMutated(t *testing.T) {
	st := NewStatus("n", config.RoleAll, "test", time.Now())
	srv := httptest.NewServer(Handler(NewMetrics(), st, &Readiness{}, time.Now))
	defer srv.Close()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			st.Maintenance("events", &maintain.State{SampledAt: time.Now(), OverlapDepth: i, FilesPerLevel: map[string]int{"L0": i},
				LastPass: &maintain.PassReport{Time: time.Now(), Decision: "run"}})
			st.Owned([]string{"events"})
			st.Committed("events", &drain.CommitReport{Time: time.Now(), Rows: int64(i)})
			st.Backlog(drain.Backlog{Segments: i})
			st.Deletes("events", &sweep.State{CheckedAt: time.Now()})
			st.Error(time.Now(), "test", "events", fmt.Errorf("error %d", i))
		}
	}()
	for i := 0; i < 200; i++ {
		resp, err := srv.Client().Get(srv.URL + "/debug/status")
		if err != nil {
			t.Fatal(err)
		}
		var r StatusReport
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("decode status: %v\n%s", err, body)
		}
	}
	close(stop)
	wg.Wait()
}

// TestCatalogIdentityFailureKeepsReadiness: an identity the catalog will not keep (here: its
// namespace exists without the property) is shown in /debug/status, and the pod stays ready, since
// the drain still commits; once it can be read, status shows it and the error is gone.
func TestCatalogIdentityFailureKeepsReadiness(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	ns := table.Identifier{lake.IdentityNamespace(e.cfg.Namespace)}
	if err := e.lake.Catalog().CreateNamespace(ctx, ns, iceberg.Properties{"other": "x"}); err != nil {
		t.Fatal(err)
	}
	p := NewProcess(e.cfg, zap.NewNop(), "test")
	p.checkCatalog(ctx, e.lake)
	r := p.Status.Snapshot(time.Now())
	if !p.Ready.ready.Load() || !r.CatalogReady || r.CatalogIDError == "" || r.CatalogID != "" {
		t.Fatalf("ready %v, catalog ready %v, id %q, id error %q; want ready with the error shown", p.Ready.ready.Load(), r.CatalogReady, r.CatalogID, r.CatalogIDError)
	}
	if err := e.lake.Catalog().DropNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	p.checkCatalog(ctx, e.lake)
	if r := p.Status.Snapshot(time.Now()); r.CatalogID == "" || r.CatalogIDError != "" {
		t.Fatalf("after the repair: id %q, error %q", r.CatalogID, r.CatalogIDError)
	}
}
