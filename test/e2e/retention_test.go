package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestBackendsRetention: on PostgreSQL + S3, with the real binary. Days D-40..D-31 and D-29..D-20
// are drained without retention; then a compactor with a 30-day default period drops the old
// days (metadata only) and is SIGKILLed before the delete delay; a second compactor (the new
// owner) deletes their objects from the bucket once the delay has passed, and drops, counts and
// never commits rows replayed from an old WAL for an expired day. The table ends with exactly
// the newer days' rows.
func TestBackendsRetention(t *testing.T) { retentionScenario(t, newBackendSite(t, "", "")) }

// TestRESTRetention is the same on the REST catalog (test/restcat) with the S3 warehouse.
func TestRESTRetention(t *testing.T) {
	s, _ := newRESTSite(t)
	retentionScenario(t, s)
}

func retentionScenario(t *testing.T, s *site) {
	now := time.Now().UTC()
	day := 24 * time.Hour
	step := "86400ms" // 1,000 rows a day
	gen := func(seed, rows int, start time.Time) walgenResult {
		return s.walgen("pod-0", rows, seed, "--start", start.Format(time.RFC3339), "--step", step, "--late-fraction", "0")
	}
	old := gen(1, 9000, now.Add(-40*day))  // D-40 .. D-31
	keep := gen(2, 9000, now.Add(-29*day)) // D-29 .. D-20: a day's gap around the cutoff
	s.drainOnce()
	_, files := s.table("events")
	var expired []string
	for _, f := range files {
		if time.UnixMicro(f.MaxTime).Before(now.Add(-30 * day)) {
			expired = append(expired, s.localPath(f.Path))
		}
	}
	if len(expired) == 0 || s.tableSum("events").Rows != old.Rows+keep.Rows {
		t.Fatalf("setup: %d expired files, %d rows", len(expired), s.tableSum("events").Rows)
	}
	args := []string{"--retention-period", "30d", "--retention-interval-secs", "1", "--recluster-interval-secs", "0",
		"--snapshot-expire-interval-secs", "1", "--snapshot-retain", "1"}

	// The first owner drops the days and dies before the delay.
	a := s.start(nil, append(args, "--retention-delete-delay", "12s")...)
	waitFor(t, 60*time.Second, "the first compactor's retention drop", func() bool {
		return a.scrape().sum("siglake_retention_files_dropped_total", `table="events"`) >= float64(len(expired))
	})
	a.kill()
	dropped := time.Now()
	if got := s.tableSum("events"); got != keep.Fingerprint {
		t.Fatalf("after the drop the table holds %+v, want exactly the newer days %+v", got, keep.Fingerprint)
	}
	present := func() int {
		n := 0
		for _, p := range expired {
			if _, err := os.Stat(p); err == nil {
				n++
			}
		}
		return n
	}
	if n := present(); n != len(expired) {
		t.Fatalf("%d of %d dropped objects are gone before the delete delay", len(expired)-n, len(expired))
	}
	// gc deletes none of them before the delay, although no retained snapshot references them.
	gcStart := time.Now()
	cmd := exec.Command(bin, "gc", "--catalog", s.catalog, "--warehouse", s.warehouse, "--older-than", "1s", "--apply",
		"--commit-timeout", "1ms", "--min-age-floor", "12ms") // the floor lowered explicitly: the objects are seconds old
	cmd.Env = append(os.Environ(), s.extraEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gc: %v\n%s", err, out)
	}

	if gcStart.Sub(dropped) >= 10*time.Second {
		t.Fatalf("gc started %s after the drop: too late to check it against the 12 s delay", gcStart.Sub(dropped))
	}
	if n := present(); n != len(expired) {
		t.Fatalf("gc deleted %d objects retention holds for the delete delay", len(expired)-n)
	}

	// Rows of an expired day replayed from an old WAL, and the second owner.
	replay := gen(3, 500, now.Add(-35*day))
	b := s.start(nil, append(args, "--retention-delete-delay", "12s")...)
	b.waitDrained(60 * time.Second)
	// The counter moves once the run that deleted the objects has removed its pending entry.
	waitFor(t, 90*time.Second, "the new owner to free the dropped objects", func() bool {
		return b.scrape().sum("siglake_retention_freed_files_total", `table="events"`) >= float64(len(expired))
	})
	m := b.scrape()
	st, err := exec.Command(bin, "status", "--addr", b.addr).CombinedOutput()
	if err != nil || !strings.Contains(string(st), "RETENTION") || !strings.Contains(string(st), "events: period 30d (process default)") {
		t.Errorf("siglake status does not show the table's retention (%v):\n%s", err, st)
	}
	b.stop()
	if n := present(); n != 0 {
		t.Fatalf("%d dropped objects still in the bucket after the new owner freed them", n)
	}
	if time.Since(dropped) < 12*time.Second {
		t.Fatalf("objects freed %s after the drop, before the 12 s delay", time.Since(dropped))
	}
	if got := m.sum("siglake_drain_rows_past_retention_total", `table="events"`); got != float64(replay.Rows) {
		t.Fatalf("siglake_drain_rows_past_retention_total = %v, want the %d replayed rows", got, replay.Rows)
	}
	if got := s.tableSum("events"); got != keep.Fingerprint {
		t.Fatalf("at the end the table holds %+v, want exactly the newer days %+v", got, keep.Fingerprint)
	}
	s.checkDuckDB("events")
	tbl, _ := s.table("events")
	for k := range tbl.Properties() {
		if strings.HasPrefix(k, "siglake.retention.pending.") {
			t.Fatalf("pending deletion %s left after every object was freed", k)
		}
	}
}
