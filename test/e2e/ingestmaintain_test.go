package e2e

import (
	"encoding/json"
	"os/exec"
	"testing"
	"time"
)

// TestRewritesCommitWhileIngestContinues: the real binary drains a stream that walgen keeps
// writing (a commit every few hundred milliseconds) while its maintenance rewrites the same
// table. Rewrites must commit, not lose every race to the appends, and every row lands once.
func TestRewritesCommitWhileIngestContinues(t *testing.T) {
	s := newSite(t)
	r := s.start(nil, "--recluster-interval-secs", "1")
	type result struct {
		w   walgenResult
		err error
	}
	fed := make(chan result, 1)
	go func() {
		out, err := exec.Command(bin, "walgen", "--wal-dir", s.wal, "--stream", "pod-0", "--rows", "50000",
			"--seed", "21", "--batch-rows", "500", "--segment-mb", "0.05", "--late-fraction", "0.05",
			"--rate", "2500", "--json").Output()
		var w walgenResult
		if err == nil {
			err = json.Unmarshal(out, &w)
		}
		fed <- result{w, err}
	}()
	res := <-fed
	if res.err != nil {
		t.Fatalf("walgen: %v", res.err)
	}
	r.waitDrained(60 * time.Second)
	m := r.scrape()
	committed := m.sum("siglake_compactor_rewrites_total", `outcome="committed"`)
	conflicts := m.sum("siglake_compactor_rewrites_total", `outcome="conflict"`)
	drains := m.sum("siglake_drain_commits_total", `outcome="committed"`)
	t.Logf("while ingest ran: %v rewrites committed, %v lost to conflicts, %v drain commits", committed, conflicts, drains)
	if committed < 2 || conflicts > committed {
		t.Fatalf("%v rewrites committed and %v lost to conflicts over %v drain commits: the appends starve the rewrites", committed, conflicts, drains)
	}
	r.stop()
	if got := s.tableSum("events"); got != res.w.Fingerprint {
		t.Fatalf("table %+v, want the sealed rows %+v", got, res.w.Fingerprint)
	}
}
