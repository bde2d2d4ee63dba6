package drain

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/siglake/siglake/sidecar/drain/marker"
)

// uncleanCapture keeps the unclean stops a drain publishes.
type uncleanCapture struct {
	nopPublisher
	last *UncleanStop
}

func (u *uncleanCapture) UncleanStop(v *UncleanStop) { u.last = v }

// TestTakenOverStreamReportsItsInterruptedBatch: with catalog claims a stream passes between
// processes. The process before was killed mid-batch in stream directory ingest-0 and left its
// in-flight marker there; this process did not hold that claim at its start, so the start's
// check did not see the marker. When it takes the claim over, the interrupted batch is reported
// (status, gauge) before a batch of its own could overwrite and remove the marker, and the
// stream's rows still land once.
func TestTakenOverStreamReportsItsInterruptedBatch(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CatalogClaim = true })
	root := e.cfg.WALDir
	dir := filepath.Join(root, "ingest-0")
	want := writeStreamDir(t, dir, "ingest-0", "events", 2, 500, 3, time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	left := marker.Marker{Table: "events", Node: "drain-1", Started: time.Now().Add(-time.Minute), PID: 1,
		Files: []string{filepath.Join(e.dir, "warehouse", "never-committed.parquet")}}
	if err := marker.Write(dir, left, os.WriteFile); err != nil {
		t.Fatal(err)
	}
	pub := &uncleanCapture{}
	e.drain.Publish = pub
	core, logs := observer.New(zap.WarnLevel)
	e.drain.Log = zap.New(core)
	m := testClaimManager(t, e.lake, root, "drain-0", nil)
	e.drain.Claims = m
	if u := e.drain.CheckUncleanStop(context.Background()); u != nil {
		t.Fatalf("start with no claim held reported %+v", u)
	}
	if err := m.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := m.Held(); len(got) != 1 {
		t.Fatalf("held %v, want ingest-0", got)
	}
	if _, err := e.drain.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	u := pub.last
	if u == nil || len(u.Batches) != 1 {
		raw, _ := json.Marshal(u)
		t.Fatalf("taking the claim over reported %s, want the batch drain-1 left in flight", raw)
	}
	if b := u.Batches[0]; b.Dir != dir || b.Table != "events" || b.Node != "drain-1" || b.LeftForGC != 1 {
		t.Fatalf("interrupted batch %+v", b)
	}
	if got := uncleanLines(logs); len(got) != 1 || got[0] != "node drain-1 stopped mid-batch in a stream whose claim this process took over"+uncleanAfter {
		t.Fatalf("unclean stop logged as %q, want one line naming drain-1 and the takeover", got)
	}
	if g := testutil.ToFloat64(e.drain.Metrics.InterruptedFiles); g != 1 {
		t.Fatalf("siglake_drain_interrupted_batch_files = %v, want 1", g)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, marker.Prefix+"*")); len(m) != 0 {
		t.Fatalf("markers left: %v", m)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table %+v, want %+v", got, want)
	}
	// Held on: not checked again, so this process's own batches are never reported.
	e.drain.Cycle(context.Background(), true)
	if len(pub.last.Batches) != 1 {
		t.Fatalf("a second cycle reported again: %+v", pub.last)
	}
}

// uncleanAfter ends every unclean-stop warn line.
const uncleanAfter = " (killed, not a clean stop): its segments are drained again; files it wrote but did not commit are left for siglake gc"

// uncleanLines are the messages of the unclean-stop warn lines logged so far.
func uncleanLines(logs *observer.ObservedLogs) []string {
	var out []string
	for _, e := range logs.All() {
		if strings.Contains(e.Message, "stopped mid-batch") {
			out = append(out, e.Message)
		}
	}
	return out
}

// TestUncleanStopSaysWhoLeftTheBatch: markers record the node that wrote them, so the warn line
// says whether this process's own previous run was killed or a run under another node name (here
// without claims: two markers in one WAL dir), one line each, own run first; with claims the other
// node's line says its stream was taken over (TestTakenOverStreamReportsItsInterruptedBatch).
func TestUncleanStopSaysWhoLeftTheBatch(t *testing.T) {
	e := newEnv(t, nil)
	core, logs := observer.New(zap.WarnLevel)
	e.drain.Log = zap.New(core)
	dir := e.cfg.WALDir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, m := range []marker.Marker{
		{Table: "audit", Node: "drain-1", Started: time.Now(), PID: 1},
		{Table: "events", Node: e.drain.Cfg.NodeName, Started: time.Now(), PID: 2},
	} {
		if err := marker.Write(dir, m, os.WriteFile); err != nil {
			t.Fatal(err)
		}
	}
	u := e.drain.CheckUncleanStop(context.Background())
	if u == nil || len(u.Batches) != 2 {
		t.Fatalf("unclean stop %+v, want two batches", u)
	}
	// Without catalog claims no stream passes between processes: another node name in this
	// process's own WAL dir is a run under an earlier --node-name, not a takeover (review).
	want := []string{
		"the previous run of this process stopped mid-batch" + uncleanAfter,
		"a previous run in this WAL dir, as node drain-1 (another --node-name), stopped mid-batch" + uncleanAfter,
	}
	if got := uncleanLines(logs); !slices.Equal(got, want) {
		t.Fatalf("unclean stop logged as\n%q\nwant\n%q", got, want)
	}
	if n := logs.FilterField(zap.String("node", "drain-1")).Len(); n != 1 {
		t.Fatalf("%d lines carry node=drain-1, want 1", n)
	}
}
