package sidecar

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/siglake/siglake/sidecar/lake"
)

// TestObserveFull: every wait for a full catalog is counted by call; a herd of them logs one
// warning, not one per wait.
func TestObserveFull(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	p := NewProcess(newEnv(t, nil).cfg, zap.New(core), "test")
	full := errors.New("pq: sorry, too many clients already")
	for i := 0; i < 5; i++ {
		p.observeFull(lake.FullEvent{Op: "load", Err: full, Wait: 100 * time.Millisecond})
	}
	p.observeFull(lake.FullEvent{Op: "commit", Err: full, Wait: 100 * time.Millisecond})
	if n := testutil.ToFloat64(p.Metrics.CatalogFullWaits.WithLabelValues("load")); n != 5 {
		t.Fatalf("%v load waits counted, want 5", n)
	}
	if n := testutil.ToFloat64(p.Metrics.CatalogFullWaits.WithLabelValues("commit")); n != 1 {
		t.Fatalf("%v commit waits counted, want 1", n)
	}
	if n := logs.FilterMessageSnippet("no connection left").Len(); n != 1 {
		t.Fatalf("%d warnings for 6 waits, want 1", n)
	}
}
