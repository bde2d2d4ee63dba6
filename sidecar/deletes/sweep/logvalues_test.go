package sweep_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/rows"
	"github.com/siglake/siglake/sidecar/walgen"
)

// TestSweepLogsNoPredicateValues: a sweep that executes a deletion request logs its id, columns
// and counts at info, never the values it deletes: logs are kept and shipped, and the values are
// what an erasure exists to remove (issue 31).
func TestSweepLogsNoPredicateValues(t *testing.T) {
	e := testlake.New(t)
	e.DeleteTable(1)
	const secret = "alice.smith@example.com"
	r := testlake.Record(t, e.Lake, deletes.Request{Where: []rows.Condition{{Column: "host", Values: []string{secret}}}})
	core, logs := observer.New(zapcore.InfoLevel)
	s, _ := sweeper(e)
	s.Log = zap.New(core)
	done := false
	for i := 0; i < 3 && !done; i++ {
		rep, err := s.Sweep(context.Background(), "events", sweep.Options{Apply: true})
		if err != nil {
			t.Fatal(err)
		}
		done = len(rep.Done) == 1 && rep.Done[0] == r.ID
	}
	if !done {
		t.Fatal("the request was not done after 3 sweeps")
	}
	logged := false
	for _, l := range logs.All() {
		b, _ := json.Marshal(l.ContextMap())
		if strings.Contains(l.Message+string(b), "alice") {
			t.Errorf("log line at %s carries a predicate value: %s %s", l.Level, l.Message, b)
		}
		if l.Message == "deletion request done" {
			logged = true
			if !strings.Contains(string(b), `"columns":["host"]`) {
				t.Errorf("done line lacks the request's columns: %s", b)
			}
		}
	}
	if !logged {
		t.Fatal("no \"deletion request done\" line")
	}
}

// TestInvalidRequestLogsNoValue: a stored request whose value does not parse as its column's
// type (written by another tool) is ignored; the warning and the status name its property, and
// only the sweep report (siglake delete-sweep) quotes the cause with the value.
func TestInvalidRequestLogsNoValue(t *testing.T) {
	e := testlake.New(t)
	rec := walgen.New(walgen.Options{Seed: 7}).Batch(memory.DefaultAllocator, testlake.DeleteBase, 500, time.Second)
	roll := walgen.Rollup(memory.DefaultAllocator, rec)
	rec.Release()
	e.Seal(walgen.RollupTable, roll)
	roll.Release()
	e.DrainAll()
	const secret = "alice.smith@example.com"
	r := deletes.Request{Version: deletes.Version, ID: "20261129T000000Z-abcdef", Where: []rows.Condition{{Column: "events", Values: []string{secret}}},
		CreatedAt: testlake.DeleteBase, State: deletes.Pending}
	v, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	tbl := e.Table(walgen.RollupTable)
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{deletes.Key(r.ID): v}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.InfoLevel)
	s, _ := sweeper(e)
	s.Log = zap.New(core)
	pub := &lastState{}
	s.Publish = pub
	rep, err := s.Sweep(context.Background(), walgen.RollupTable, sweep.Options{Apply: true})
	if err != nil || len(rep.Invalid) != 1 || !strings.Contains(rep.Invalid[0], secret) {
		t.Fatalf("sweep: %v, invalid %q; want the request refused with its cause in the report", err, rep.Invalid)
	}
	if st := pub.st; st == nil || len(st.Invalid) != 1 || strings.Contains(st.Invalid[0], "alice") || !strings.Contains(st.Invalid[0], deletes.Key(r.ID)) {
		t.Fatalf("published state %+v: want the property named, no value", pub.st)
	}
	warned := false
	for _, l := range logs.All() {
		b, _ := json.Marshal(l.ContextMap())
		if strings.Contains(l.Message+string(b), "alice") {
			t.Errorf("log line at %s carries a predicate value: %s %s", l.Level, l.Message, b)
		}
		warned = warned || (l.Level == zapcore.WarnLevel && strings.Contains(l.Message, deletes.Key(r.ID)))
	}
	if !warned {
		t.Fatal("no warning names the invalid request's property")
	}
}

// lastState keeps the last state a sweeper published.
type lastState struct{ st *sweep.State }

func (p *lastState) Deletes(_ string, st *sweep.State) { p.st = st }
