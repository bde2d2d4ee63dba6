package deletes_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/internal/testlake"
)

// TestSweepLogsNoPredicateValues: a sweep that executes a deletion request logs its id, columns
// and counts at info, never the values it deletes: logs are kept and shipped, and the values are
// what an erasure exists to remove (issue 31).
func TestSweepLogsNoPredicateValues(t *testing.T) {
	e := testlake.New(t)
	e.DeleteTable(1)
	const secret = "alice.smith@example.com"
	r := testlake.Record(t, e.Lake, deletes.Request{Where: []deletes.Condition{{Column: "host", Values: []string{secret}}}})
	core, logs := observer.New(zapcore.InfoLevel)
	s, _ := sweeper(e)
	s.Log = zap.New(core)
	done := false
	for i := 0; i < 3 && !done; i++ {
		rep, err := s.Sweep(context.Background(), "events", deletes.SweepOptions{Apply: true})
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
