package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/claim"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/rowsum"
)

// TestClaimsTakeoverExactlyOnce runs three `siglake compactor --role drain` processes with
// catalog claims over one WAL root of six streams, SIGKILLs one while walgen keeps feeding, and
// checks that the other two take its streams once its claims expire and that every sealed row
// ends in the table exactly once (iceberg-go and DuckDB).
func TestClaimsTakeoverExactlyOnce(t *testing.T) {
	r := claimsTakeover(t, newSite(t))
	t.Logf("%s", r)
}

// TestBackendsClaimsTakeover is TestClaimsTakeoverExactlyOnce on PostgreSQL + S3.
func TestBackendsClaimsTakeover(t *testing.T) {
	r := claimsTakeover(t, newBackendSite(t, "", ""))
	t.Logf("%s", r)
}

type claimsResult struct {
	TTL              time.Duration
	Takeover         time.Duration // SIGKILL -> every stream of the victim held by a survivor
	ClaimCommits     float64       // committed claim commits of the survivors
	Conflicts        float64
	Seconds          float64 // survivors' run time
	Rows             int64
	SurvivorsStreams int
}

func (r claimsResult) String() string {
	return fmt.Sprintf("ttl %v: takeover %.2f s after SIGKILL; survivors: %.0f claim commits in %.1f s (%.2f/s per process), %.0f conflicts; %d rows exactly once",
		r.TTL, r.Takeover.Seconds(), r.ClaimCommits, r.Seconds, r.ClaimCommits/r.Seconds/2, r.Conflicts, r.Rows)
}

const claimStreams = 6

func claimsTakeover(t *testing.T, s *site) claimsResult {
	const ttl = 3 * time.Second
	res := claimsResult{TTL: ttl}
	var want rowsum.Sum
	feed := podFeed(t, s, &want, 10)
	for i := 0; i < claimStreams; i++ {
		feed(i, 3000)
	}

	cs := *s
	cs.extraEnv = append(append([]string(nil), s.extraEnv...), "SIGLAKE_CATALOG_CLAIM=true", "SIGLAKE_CATALOG_CLAIM_TTL="+ttl.String())
	start := time.Now()
	procs := make([]*running, 3)
	for i := range procs {
		procs[i] = cs.start(nil, "--role", "drain", "--node-name", fmt.Sprintf("drain-%d", i))
	}

	l, err := lake.Open(context.Background(), s.lakeConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	claims := func() claim.State {
		tbl, ok, err := l.LoadClaimsTable(context.Background())
		if err != nil || !ok {
			return claim.State{}
		}
		st, err := claim.Parse(tbl.Properties())
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	holders := func(now time.Time) map[string][]string {
		out := map[string][]string{}
		for stream, c := range claims().Claims {
			if now.Before(c.Expires) {
				out[c.Holder] = append(out[c.Holder], stream)
			}
		}
		return out
	}
	waitFor(t, 30*time.Second, "two claims per drain process", func() bool {
		h := holders(time.Now())
		return len(h["drain-0"]) == 2 && len(h["drain-1"]) == 2 && len(h["drain-2"]) == 2
	})
	victim := holders(time.Now())["drain-0"]

	// Feed every stream again and SIGKILL drain-0 while that happens (its batches in flight).
	var killedAt time.Time
	var mu sync.Mutex
	kill := time.AfterFunc(300*time.Millisecond, func() {
		mu.Lock()
		defer mu.Unlock()
		_ = procs[0].cmd.Process.Signal(syscall.SIGKILL)
		killedAt = time.Now()
	})
	for i := 0; i < claimStreams; i++ {
		feed(i, 3000)
	}
	kill.Stop()
	mu.Lock()
	if killedAt.IsZero() {
		_ = procs[0].cmd.Process.Signal(syscall.SIGKILL)
		killedAt = time.Now()
	}
	mu.Unlock()
	_ = procs[0].cmd.Wait()

	waitFor(t, 10*ttl, "the survivors to take the victim's streams", func() bool {
		st := claims()
		for _, v := range victim {
			c, ok := st.Claims[v]
			if !ok || c.Holder == "drain-0" {
				return false
			}
		}
		return true
	})
	res.Takeover = time.Since(killedAt)
	if res.Takeover < ttl-ttl/3 {
		t.Fatalf("streams of the killed process taken after %v, before its claims could expire (TTL %v)", res.Takeover, ttl)
	}
	for _, v := range victim { // work for the new holders
		var i int
		fmt.Sscanf(v, "pod-%d", &i)
		feed(i, 2000)
	}
	waitFor(t, 3*time.Minute, "every stream to drain", func() bool {
		for i := 0; i < claimStreams; i++ {
			segs, err := localwal.Scan(filepath.Join(s.wal, fmt.Sprintf("pod-%d", i)))
			if err != nil || len(segs) > 0 {
				return false
			}
		}
		return true
	})
	res.Seconds = time.Since(start).Seconds()
	for _, p := range procs[1:] {
		m := p.scrape()
		res.ClaimCommits += m.sum("siglake_claim_commits_total", `outcome="committed"`)
		res.Conflicts += m.sum("siglake_claim_commits_total", `outcome="conflict"`)
		res.SurvivorsStreams += int(m.sum("siglake_claim_streams_held", ""))
	}
	if res.SurvivorsStreams != claimStreams {
		t.Fatalf("survivors hold %d streams, want all %d", res.SurvivorsStreams, claimStreams)
	}
	takeovers := procs[1].scrape().sum("siglake_claim_takeovers_total", "") + procs[2].scrape().sum("siglake_claim_takeovers_total", "")
	if takeovers != float64(len(victim)) {
		t.Fatalf("survivors counted %v takeovers, want %d", takeovers, len(victim))
	}
	for _, p := range procs[1:] {
		p.stop()
	}
	if left := claims().Claims; len(left) != 0 {
		t.Fatalf("claims left after SIGTERM of the survivors: %v", left)
	}

	got := s.tableSum("events")
	if got != want {
		t.Fatalf("table holds %d rows (sum %d); walgen sealed %d rows (sum %d)", got.Rows, got.Sum, want.Rows, want.Sum)
	}
	res.Rows = int64(want.Rows)
	s.checkDuckDB("events")
	return res
}

// podFeed returns a feed that writes rows more walgen rows into pod i's WAL directory under
// s.wal (stream pod-i, a fresh seed from seed on each call) and adds them to want.
func podFeed(t *testing.T, s *site, want *rowsum.Sum, seed int) func(i, rows int) {
	return func(i, rows int) {
		sub := *s
		sub.wal = filepath.Join(s.wal, fmt.Sprintf("pod-%d", i))
		if err := os.MkdirAll(sub.wal, 0o755); err != nil {
			t.Fatal(err)
		}
		want.Merge(sub.walgen(fmt.Sprintf("pod-%d", i), rows, seed).Fingerprint)
		seed++
	}
}
