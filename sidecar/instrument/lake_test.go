package instrument

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/siglake/siglake/sidecar/lake/objstore"
)

// TestObjectStoreCollector: lake's counters become the siglake_objstore_* series, errors only
// by the classes that happened.
func TestObjectStoreCollector(t *testing.T) {
	c := objStoreCollector{counts: func() []objstore.Count {
		return []objstore.Count{
			{Table: "events", Op: objstore.OpRangedGet, Requests: 7, BytesRead: 700},
			{Table: "events", Op: objstore.OpHead, Requests: 2, Err4xx: 1},
		}
	}}
	want := `
# HELP siglake_objstore_request_errors_total Object-store requests that failed, by kind, table and class (network, 4xx, 5xx).
# TYPE siglake_objstore_request_errors_total counter
siglake_objstore_request_errors_total{class="4xx",op="head",table="events"} 1
# HELP siglake_objstore_requests_total Object-store requests by kind (get, ranged_get, head, put, multipart, list, delete, other) and table; SDK retries count.
# TYPE siglake_objstore_requests_total counter
siglake_objstore_requests_total{op="head",table="events"} 2
siglake_objstore_requests_total{op="ranged_get",table="events"} 7
# HELP siglake_objstore_read_bytes_total Response body bytes read from the object store, by kind and table.
# TYPE siglake_objstore_read_bytes_total counter
siglake_objstore_read_bytes_total{op="head",table="events"} 0
siglake_objstore_read_bytes_total{op="ranged_get",table="events"} 700
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "siglake_objstore_requests_total",
		"siglake_objstore_request_errors_total", "siglake_objstore_read_bytes_total"); err != nil {
		t.Fatal(err)
	}
	if err := testutil.CollectAndCompare(ObjectStoreCollector(), strings.NewReader(""), "siglake_objstore_nothing"); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Fatalf("promlint: %v %v", problems, err)
	}
}

// TestCostField: a cost logs as totals plus requests per kind, and no requests log nothing.
func TestCostField(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	log := zap.New(core)
	log.Info("with", CostField(objstore.Cost{objstore.OpGet: {Requests: 3, BytesRead: 30}, objstore.OpPut: {Requests: 1, Errors: 1, BytesWritten: 5}}))
	log.Info("without", CostField(objstore.Cost{}))
	e := logs.All()
	got := e[0].ContextMap()["objstore"].(map[string]any)
	want := map[string]int64{"requests": 4, "errors": 1, "bytes_read": 30, "bytes_written": 5, "get": 3, "put": 1}
	if len(got) != len(want) {
		t.Fatalf("objstore field %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("objstore.%s = %v, want %d", k, got[k], v)
		}
	}
	if _, ok := e[1].ContextMap()["objstore"]; ok {
		t.Errorf("a cost without requests logged %v", e[1].ContextMap())
	}
}
