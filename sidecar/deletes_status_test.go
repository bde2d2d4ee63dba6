package sidecar

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/maintain"
	"github.com/siglake/siglake/sidecar/rows"
)

// TestStatusShowsNoPredicateValues: /debug/status lists a pending deletion request with its id,
// table, state and times, never the values it deletes: they are what an erasure exists to remove,
// and the page is served to anyone who reaches the metrics port (issue 31).
func TestStatusShowsNoPredicateValues(t *testing.T) {
	e := testlake.New(t)
	e.DeleteTable(1)
	const secret = "alice.smith@example.com"
	r := testlake.Record(t, e.Lake, deletes.Request{Where: []rows.Condition{{Column: "host", Values: []string{secret}}}})
	cfg, err := config.Load(nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	st := NewStatus("n", config.RoleAll, "test", time.Now())
	m := &maintain.Maintainer{Cfg: MaintainConfig(cfg), Lake: e.Lake, Metrics: NewMetrics().Maintain, Log: e.Log, Now: time.Now, Publish: st}
	// The idle cycle's sweep: inside the default cancel period it only publishes the request.
	rep, err := m.Deletes().Sweep(context.Background(), "events", sweep.Options{Apply: true})
	if err != nil || len(rep.Waiting) != 1 {
		t.Fatalf("sweep: waiting %v, %v", rep.Waiting, err)
	}
	srv := httptest.NewServer(Handler(NewMetrics(), st, &Readiness{}, time.Now))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/debug/status")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), secret) || strings.Contains(string(body), "alice") {
		t.Fatalf("/debug/status publishes a predicate value:\n%s", body)
	}
	for _, want := range []string{r.ID, `"state": "waiting"`, `"execute_at"`, `"table": "events"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/debug/status lacks %s:\n%s", want, body)
		}
	}
}
