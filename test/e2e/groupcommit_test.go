package e2e

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/rowsum"
)

// Group commit through the real binary (issue 33, docs/group-commit.md): keyed members hand their
// batches to the table's owner, which commits them together; every sealed row lands once, the
// table takes fewer commits than the pods made batches, and a committer killed mid-stream loses
// nothing.

// groupCluster starts n keyed members with group commit on and a walgen feeding each member's WAL
// at rate rows a second for secs seconds; it returns the members and a channel of what walgen
// sealed (one result per member).
func groupCluster(t *testing.T, s *site, n, rate, secs int) ([]*member, chan walgenResult) {
	t.Helper()
	var ms []*member
	for i := 0; i < n; i++ {
		ms = append(ms, newMember(t, s, fmt.Sprintf("gc-%d", i), i))
	}
	key := gossipKey(7)
	for i, m := range ms {
		kf := filepath.Join(filepath.Dir(m.wal), m.name+".keys")
		writeKeys(t, kf, key)
		var join []string
		for j, o := range ms {
			if j != i {
				join = append(join, o.gossip)
			}
		}
		startMember(t, s, m, join, "--gossip-key-file", kf, "--group-commit-interval", "200ms")
	}
	sealed := make(chan walgenResult, n)
	for i, m := range ms {
		go func(i int, m *member) {
			out, err := exec.Command(bin, "walgen", "--wal-dir", m.wal, "--stream", m.name, "--rows", fmt.Sprint(rate*secs),
				"--seed", fmt.Sprint(60+i), "--batch-rows", "250", "--segment-mb", "0.05", "--late-fraction", "0.05",
				"--rate", fmt.Sprint(rate), "--json").Output()
			var w walgenResult
			if err == nil {
				err = json.Unmarshal(out, &w)
			}
			if err != nil {
				t.Errorf("walgen %s: %v", m.name, err)
			}
			sealed <- w
		}(i, m)
	}
	return ms, sealed
}

// drained waits until every member in ms shows an empty backlog.
func drained(t *testing.T, ms []*member, timeout time.Duration) {
	t.Helper()
	waitUntil(t, "every member to drain its WAL", timeout, func() (bool, string) {
		for _, m := range ms {
			r, err := status(m.httpAddr)
			if err != nil {
				return false, err.Error()
			}
			if r.Backlog.Segments != 0 {
				return false, fmt.Sprintf("%s: %d segments", m.name, r.Backlog.Segments)
			}
		}
		return true, ""
	})
}

// snapshots counts the table's snapshots (expiry keeps far more than these tests make).
func (s *site) snapshots(name string) int {
	tbl, _ := s.table(name)
	return len(tbl.Metadata().Snapshots())
}

func TestGroupCommitCluster(t *testing.T) {
	s := newSite(t)
	ms, sealed := groupCluster(t, s, 3, 800, 12)
	var want rowsum.Sum
	for range ms {
		w := <-sealed
		want.Merge(w.Fingerprint)
	}
	drained(t, ms, 90*time.Second)
	var grouped, direct, batches, commits, owner float64
	for _, m := range ms {
		mm, err := scrapeMember(m.httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		grouped += mm.sum("siglake_group_commit_requests_total", `outcome="committed"`) +
			mm.sum("siglake_group_commit_requests_total", `outcome="already_committed"`)
		direct += mm.sum("siglake_group_commit_requests_total", `outcome="direct"`)
		batches += mm.sum("siglake_drain_commits_total", `outcome="committed"`)
		c := mm.sum("siglake_group_commit_commits_total", `outcome="committed"`)
		commits += c
		if c > 0 {
			owner++
		}
		r, err := status(m.httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		if r.GroupCommit == nil || !r.GroupCommit.Enabled {
			t.Errorf("%s: group commit not on in /debug/status: %+v", m.name, r.GroupCommit)
		}
	}
	for _, m := range ms {
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		_ = m.cmd.Wait()
	}
	snaps := s.snapshots("events")
	t.Logf("%v batches: %v through a committer, %v direct; %v group commits by %v committer(s); %d snapshots", batches, grouped, direct, commits, owner, snaps)
	if grouped == 0 || commits == 0 {
		t.Fatalf("no batch went through a committer (%v grouped, %v group commits)", grouped, commits)
	}
	if float64(snaps) >= batches {
		t.Fatalf("%d snapshots for %v batches: group commit did not batch the pods' commits", snaps, batches)
	}
	if got := s.tableSum("events"); got != want {
		t.Fatalf("table holds %d rows (sum %d), walgen sealed %d (sum %d)", got.Rows, got.Sum, want.Rows, want.Sum)
	}
	s.checkDuckDB("events")
}

// TestGroupCommitCommitterSIGKILL: the committer is killed with SIGKILL while the pods keep
// handing batches to it; they fall back or move to the new owner, and every row lands once.
func TestGroupCommitCommitterSIGKILL(t *testing.T) {
	s := newSite(t)
	ms, sealed := groupCluster(t, s, 3, 600, 14)
	var victim *member
	waitUntil(t, "a committer to commit a group", 60*time.Second, func() (bool, string) {
		for _, m := range ms {
			mm, err := scrapeMember(m.httpAddr)
			if err == nil && mm.sum("siglake_group_commit_commits_total", `outcome="committed"`) > 0 {
				victim = m
				return true, ""
			}
		}
		return false, "no group commit yet"
	})
	_ = victim.cmd.Process.Signal(syscall.SIGKILL)
	_ = victim.cmd.Wait()
	var rest []*member
	for _, m := range ms {
		if m != victim {
			rest = append(rest, m)
		}
	}
	var want rowsum.Sum
	for range ms {
		w := <-sealed
		want.Merge(w.Fingerprint)
	}
	drained(t, rest, 120*time.Second)
	for _, m := range rest {
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		_ = m.cmd.Wait()
	}
	// The killed member's WAL holds what it had not committed: drain it now.
	(&site{t: t, wal: victim.wal, catalog: s.catalog, warehouse: s.warehouse}).drainOnce()
	if got := s.tableSum("events"); got != want {
		t.Fatalf("table holds %d rows (sum %d), walgen sealed %d (sum %d)", got.Rows, got.Sum, want.Rows, want.Sum)
	}
	s.checkDuckDB("events")
}
