package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/rowsum"
)

// member is one `siglake compactor` of a cluster test: its own WAL, a shared catalog and warehouse.
type member struct {
	name     string
	wal      string
	httpAddr string
	gossip   string
	cmd      *exec.Cmd
}

// newMember gives member i of a cluster test its own WAL dir beside the site's and free ports.
func newMember(t *testing.T, s *site, name string, i int) *member {
	m := &member{name: name, wal: filepath.Join(filepath.Dir(s.wal), fmt.Sprintf("wal-%d", i)),
		httpAddr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), gossip: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	if err := os.MkdirAll(m.wal, 0o755); err != nil {
		t.Fatal(err)
	}
	return m
}

func startMember(t *testing.T, s *site, m *member, join []string, extra ...string) {
	t.Helper()
	args := []string{"compactor", "--wal-dir", m.wal, "--catalog", s.catalog, "--warehouse", s.warehouse,
		"--http-addr", m.httpAddr, "--log-format", "json", "--node-name", m.name,
		"--drain-poll-interval", "50ms", "--commit-batch-target-mb", "0", "--commit-batch-max-age-secs", "0",
		"--recluster-interval-secs", "1", "--max-overlap-depth", "4",
		"--gossip-bind", m.gossip, "--gossip-join", strings.Join(join, ","), "--gossip-settle-secs", "2",
		"--gossip-probe-interval", "200ms", "--gossip-probe-timeout", "100ms", "--gossip-rejoin-secs", "1"}
	m.cmd = exec.Command(bin, append(args, extra...)...)
	m.cmd.Env = append(os.Environ(), s.extraEnv...) // S3 credentials of a backend site
	logf, err := os.Create(filepath.Join(filepath.Dir(m.wal), m.name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	m.cmd.Stderr = logf
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if m.cmd.ProcessState == nil {
			_ = m.cmd.Process.Kill()
			_ = m.cmd.Wait()
		}
		logf.Close()
	})
}

func status(addr string) (sidecar.StatusReport, error) {
	var r sidecar.StatusReport
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/debug/status")
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	return r, json.NewDecoder(resp.Body).Decode(&r)
}

// waitUntil polls cond every 100 ms until it holds or the timeout passes.
func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	last := ""
	for time.Since(start) < timeout {
		ok, detail := cond()
		if ok {
			return time.Since(start)
		}
		last = detail
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s (last: %s)", timeout, what, last)
	return 0
}

// owners returns each live member's view of the owner of table.
func owners(ms []*member, table string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		r, err := status(m.httpAddr)
		if err != nil {
			continue
		}
		if tr := r.Tables[table]; tr != nil {
			out[m.name] = tr.Owner
		}
	}
	return out
}

// converged reports whether the owner's last metadata walk shows no work the planner would do
// (depth within the trigger, fewer L0 files than the level trigger).
func converged(m *member, table string) (bool, string) {
	r, err := status(m.httpAddr)
	if err != nil {
		return false, err.Error()
	}
	tr := r.Tables[table]
	if tr == nil || tr.Maintenance == nil {
		return false, "no maintenance state yet"
	}
	ms := tr.Maintenance
	return ms.OverlapDepth <= 4 && ms.FilesPerLevel["L0"] < 8 && r.Backlog.Segments == 0,
		fmt.Sprintf("depth %d, files per level %v, backlog %d", ms.OverlapDepth, ms.FilesPerLevel, r.Backlog.Segments)
}

// TestClusterFailover: three sidecars share a catalog; the owner of `events` is killed with
// SIGKILL while the table has work pending; another member takes over and the table converges,
// with every sealed row exactly once.
func TestClusterFailover(t *testing.T) {
	s := newSite(t)
	var ms []*member
	var want rowsum.Sum
	for i := 0; i < 3; i++ {
		m := newMember(t, s, fmt.Sprintf("sidecar-%d", i), i)
		want.Merge((&site{t: t, wal: m.wal}).walgen(m.name, 12000, 10+i).Fingerprint)
		ms = append(ms, m)
	}
	for i, m := range ms {
		var join []string
		for j, o := range ms {
			if j != i {
				join = append(join, o.gossip)
			}
		}
		startMember(t, s, m, join)
	}
	var owner string
	waitUntil(t, "all members to agree on one owner of events", 60*time.Second, func() (bool, string) {
		o := owners(ms, "events")
		if len(o) != 3 {
			return false, fmt.Sprint(o)
		}
		for _, v := range o {
			if v == "" || v != o[ms[0].name] {
				return false, fmt.Sprint(o)
			}
		}
		owner = o[ms[0].name]
		return true, ""
	})
	var victim *member
	var rest []*member
	for _, m := range ms {
		if m.name == owner {
			victim = m
		} else {
			rest = append(rest, m)
		}
	}
	// Work is pending: the drains just wrote dozens of small overlapping files.
	_ = victim.cmd.Process.Signal(syscall.SIGKILL)
	_ = victim.cmd.Wait()
	took := waitUntil(t, "a surviving member to own events", 60*time.Second, func() (bool, string) {
		o := owners(rest, "events")
		for _, m := range rest {
			if o[m.name] == "" || o[m.name] == victim.name || o[m.name] != o[rest[0].name] {
				return false, fmt.Sprint(o)
			}
		}
		return true, ""
	})
	t.Logf("owner %s killed; ownership moved in %s", victim.name, took)
	newOwner := owners(rest, "events")[rest[0].name]
	var ownerMember *member
	for _, m := range rest {
		if m.name == newOwner {
			ownerMember = m
		}
	}
	waitUntil(t, "events to converge under the new owner", 120*time.Second, func() (bool, string) { return converged(ownerMember, "events") })
	for _, m := range rest {
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		_ = m.cmd.Wait()
	}
	// The killed member's WAL may hold segments it had not drained: drain them now.
	(&site{t: t, wal: victim.wal, catalog: s.catalog, warehouse: s.warehouse}).drainOnce()
	if got := s.tableSum("events"); got != want {
		t.Fatalf("table holds %d rows (sum %d), walgen sealed %d (sum %d)", got.Rows, got.Sum, want.Rows, want.Sum)
	}
	s.checkDuckDB("events")
}

// TestDoubleOwner: two members that cannot see each other (no join) both own every table and
// rewrite the same files at once. The catalog lets one replace of the same files win; no row is
// lost or duplicated and the table still converges.
func TestDoubleOwner(t *testing.T) {
	s := newSite(t)
	var ms []*member
	var want rowsum.Sum
	for i := 0; i < 2; i++ {
		m := newMember(t, s, fmt.Sprintf("island-%d", i), i)
		want.Merge((&site{t: t, wal: m.wal}).walgen(m.name, 12000, 20+i).Fingerprint)
		ms = append(ms, m)
	}
	for _, m := range ms {
		startMember(t, s, m, nil)
	}
	for _, m := range ms {
		waitUntil(t, m.name+" to own events and converge", 180*time.Second, func() (bool, string) {
			r, err := status(m.httpAddr)
			if err != nil || r.Tables["events"] == nil || r.Tables["events"].Owner != m.name {
				return false, "not owner yet"
			}
			return converged(m, "events")
		})
	}
	for _, m := range ms {
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		_ = m.cmd.Wait()
	}
	if got := s.tableSum("events"); got != want {
		t.Fatalf("table holds %d rows (sum %d), walgen sealed %d (sum %d)", got.Rows, got.Sum, want.Rows, want.Sum)
	}
	s.checkDuckDB("events")
}

// TestPrivateCatalogsEachOwnTheirTables: the chart's single-pod default, scaled out by mistake or
// by design: three sidecars gossip with each other but each has its own embedded catalog. Each is
// a lake of its own, so each must own and maintain its own `events` (ownership by table name
// alone left two of the three never compacted), and each shows its catalog id and itself as the
// only candidate.
func TestPrivateCatalogsEachOwnTheirTables(t *testing.T) {
	var sites []*site
	var ms []*member
	for i := 0; i < 3; i++ {
		s := newSite(t)
		m := newMember(t, s, fmt.Sprintf("private-%d", i), i)
		(&site{t: t, wal: m.wal}).walgen(m.name, 6000, 30+i)
		sites, ms = append(sites, s), append(ms, m)
	}
	for i, m := range ms {
		var join []string
		for j, o := range ms {
			if j != i {
				join = append(join, o.gossip)
			}
		}
		startMember(t, sites[i], m, join)
	}
	ids := map[string]string{}
	for _, m := range ms {
		waitUntil(t, m.name+" to own and maintain its events among peers it sees", 90*time.Second, func() (bool, string) {
			r, err := status(m.httpAddr)
			if err != nil {
				return false, err.Error()
			}
			tr := r.Tables["events"]
			if r.CatalogID == "" || tr == nil || len(r.Members) < 3 {
				return false, fmt.Sprintf("catalog %q, %d members, table %v", r.CatalogID, len(r.Members), tr != nil)
			}
			for _, pm := range r.Members {
				if pm.Catalog == "" {
					return false, pm.Name + " advertises no catalog yet"
				}
			}
			if tr.Owner != m.name || len(tr.Candidates) != 1 || tr.Candidates[0] != m.name {
				return false, fmt.Sprintf("owner %q, candidates %v", tr.Owner, tr.Candidates)
			}
			if tr.Maintenance == nil || tr.Maintenance.LastPass == nil {
				return false, "no maintenance pass yet"
			}
			ids[m.name] = r.CatalogID
			return true, ""
		})
	}
	if len(map[string]bool{ids[ms[0].name]: true, ids[ms[1].name]: true, ids[ms[2].name]: true}) != 3 {
		t.Fatalf("three private catalogs, catalog ids %v", ids)
	}
	for _, m := range ms {
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		_ = m.cmd.Wait()
	}
}
