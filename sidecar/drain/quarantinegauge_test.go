package drain

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/siglake/siglake/localwal"
)

// backlogCapture keeps the last backlog a drain published.
type backlogCapture struct {
	nopPublisher
	last Backlog
}

func (b *backlogCapture) Backlog(v Backlog) { b.last = v }

// TestInQuarantineGaugeSurvivesRestart: siglake_wal_segments_in_quarantine and the status show
// the segments in quarantine/ after a restart (a new Drain), not only those this run moved, and
// fall once an operator clears them.
func TestInQuarantineGaugeSurvivesRestart(t *testing.T) {
	e := newEnv(t, nil)
	run := e.writeEach(4, 200, 5, time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	for _, i := range []int{1, 2} {
		p := run.segs[i].Path
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data[:len(data)/2], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.drain.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if v := testutil.ToFloat64(e.drain.Metrics.InQuarantine); v != 2 {
		t.Fatalf("in quarantine after the cycle: %v, want 2", v)
	}

	// A restart: a new drain with fresh metrics, whose first cycle has nothing to drain.
	now := time.Now()
	pub := &backlogCapture{}
	d := &Drain{Cfg: e.drain.Cfg, Lake: e.lake, Metrics: newMetrics(), Publish: pub, Log: e.drain.Log,
		Now: func() time.Time { return now }, Mem: e.drain.Mem, Retry: e.drain.Retry}
	if res, err := d.Cycle(context.Background(), true); err != nil || res.Batches != 0 {
		t.Fatalf("cycle after restart %+v %v", res, err)
	}
	if v := testutil.ToFloat64(d.Metrics.InQuarantine); v != 2 || pub.last.InQuarantine != 2 {
		t.Fatalf("after a restart: gauge %v, status %d in quarantine, want 2", v, pub.last.InQuarantine)
	}

	// The operator removes one (and its reason file); the next listing shows it.
	q := filepath.Join(e.cfg.WALDir, localwal.QuarantineDir, run.segs[1].Name)
	if err := os.Remove(q); err != nil {
		t.Fatal(err)
	}
	os.Remove(q + localwal.ReasonSuffix)
	now = now.Add(quarantineRelist)
	if _, err := d.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if v := testutil.ToFloat64(d.Metrics.InQuarantine); v != 1 || pub.last.InQuarantine != 1 {
		t.Fatalf("after clearing one: gauge %v, status %d, want 1", v, pub.last.InQuarantine)
	}
}
