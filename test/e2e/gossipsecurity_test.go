package e2e

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Gossip membership against a real adversary (DESIGN.md promise 14, docs/gossip.md): the real
// binary, three keyed members of one cluster label, and processes on the same network and catalog
// that lack the key, carry another label, or claim a member's name.

var securityTables = []string{"events", "audit", "metrics_raw", "traces"}

func gossipKey(b byte) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32)) }

func writeKeys(t *testing.T, path string, keys ...string) {
	t.Helper()
	// Written beside and renamed, as a Secret volume swaps its files: never half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func scrapeMember(addr string) (metrics, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return metrics(b), err
}

// keyedView checks that every keyed member sees exactly the keyed members alive, that they agree
// on one owner among themselves for every table, and that the union of what they own covers every
// table once.
func keyedView(keyed []*member) (bool, string) {
	var names []string
	for _, m := range keyed {
		names = append(names, m.name)
	}
	sort.Strings(names)
	owned := map[string][]string{}
	for _, m := range keyed {
		r, err := status(m.httpAddr)
		if err != nil {
			return false, err.Error()
		}
		var alive []string
		for _, mm := range r.Members {
			if mm.State == "alive" {
				alive = append(alive, mm.Name)
			}
		}
		sort.Strings(alive)
		if !slices.Equal(alive, names) {
			return false, fmt.Sprintf("%s sees alive %v, want %v", m.name, alive, names)
		}
		for _, tb := range securityTables {
			tr := r.Tables[tb]
			if tr == nil || !slices.Contains(names, tr.Owner) {
				return false, fmt.Sprintf("%s: owner of %s is %v", m.name, tb, tr)
			}
			for _, o := range keyed {
				if ro, err := status(o.httpAddr); err == nil && ro.Tables[tb] != nil && ro.Tables[tb].Owner != tr.Owner {
					return false, fmt.Sprintf("%s and %s disagree on the owner of %s", m.name, o.name, tb)
				}
			}
		}
		for _, tb := range r.Owned {
			owned[tb] = append(owned[tb], m.name)
		}
	}
	for _, tb := range securityTables {
		if len(owned[tb]) != 1 {
			return false, fmt.Sprintf("%s is maintained by %v", tb, owned[tb])
		}
	}
	return true, ""
}

// transitions sums siglake_gossip_lease_transitions_total over the members.
func transitions(t *testing.T, ms []*member) float64 {
	t.Helper()
	total := 0.0
	for _, m := range ms {
		mt, err := scrapeMember(m.httpAddr)
		if err != nil {
			t.Fatalf("%s /metrics: %v", m.name, err)
		}
		total += mt.sum("siglake_gossip_lease_transitions_total", "")
	}
	return total
}

// holdFor fails the test if the keyed view is disturbed or a lease moves during d.
func holdFor(t *testing.T, keyed []*member, d time.Duration, what string) {
	t.Helper()
	before := transitions(t, keyed)
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if ok, why := keyedView(keyed); !ok {
			t.Fatalf("%s: %s", what, why)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if after := transitions(t, keyed); after != before {
		t.Fatalf("%s: leases moved (%v lease transitions, had %v)", what, after, before)
	}
}

// TestGossipOutsidersCannotJoin: three members with the cluster's key and label own every table
// while a process without the key, one with the key but another label, and one without the key
// under a member's own name keep trying to join all three: none gets in, none owns a table, no
// lease moves, and the members count what they refused. Then the key is rotated under the running
// cluster (new key added second on every member, made first, the old one removed, one member at a
// time) with no lease moving, and a process with only the old key is refused.
func TestGossipOutsidersCannotJoin(t *testing.T) {
	s := newSite(t)
	oldKey, newKey := gossipKey(1), gossipKey(2)
	var keyed []*member
	for i := 0; i < 3; i++ {
		m := newMember(t, s, fmt.Sprintf("sidecar-%d", i), i)
		(&site{t: t, wal: m.wal}).walgen(m.name, 4000, 30+i, "--tables", strings.Join(securityTables, ","))
		keyed = append(keyed, m)
	}
	keyFile := func(m *member) string { return filepath.Join(filepath.Dir(m.wal), m.name+".keys") }
	for _, m := range keyed {
		writeKeys(t, keyFile(m), oldKey)
	}
	for i, m := range keyed {
		var join []string
		for j, o := range keyed {
			if j != i {
				join = append(join, o.gossip)
			}
		}
		startMember(t, s, m, join, "--gossip-key-file", keyFile(m), "--gossip-cluster-label", "prod")
	}
	waitUntil(t, "the keyed members to agree on one owner of every table", 90*time.Second, func() (bool, string) { return keyedView(keyed) })

	var all []string
	for _, m := range keyed {
		all = append(all, m.gossip)
	}
	type outsider struct {
		m      *member
		args   []string
		reason string
	}
	otherLabelKeys := filepath.Join(t.TempDir(), "keys")
	writeKeys(t, otherLabelKeys, oldKey)
	outsiders := []outsider{
		{newMember(t, s, "rogue-nokey", 10), []string{"--gossip-cluster-label", "prod"}, "key"},
		{newMember(t, s, "rogue-label", 11), []string{"--gossip-key-file", otherLabelKeys, "--gossip-cluster-label", "staging"}, "label"},
		{newMember(t, s, keyed[1].name, 12), []string{"--gossip-cluster-label", "prod"}, "key"},
	}
	for _, o := range outsiders {
		startMember(t, s, o.m, all, o.args...)
	}
	for _, o := range outsiders {
		waitUntil(t, o.m.name+" to serve its status", 30*time.Second, func() (bool, string) {
			r, err := status(o.m.httpAddr)
			if err != nil {
				return false, err.Error()
			}
			return r.CatalogID != "", "no catalog yet"
		})
	}
	holdFor(t, keyed, 15*time.Second, "outsiders trying to join")
	for _, o := range outsiders {
		r, err := status(o.m.httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Owned) != 0 {
			t.Errorf("outsider %s (%v) owns %v", o.m.name, o.args, r.Owned)
		}
		for _, mm := range r.Members {
			if mm.Addr != o.m.gossip && mm.State == "alive" {
				t.Errorf("outsider %s sees %s alive", o.m.name, mm.Name)
			}
		}
	}
	refused := map[string]float64{}
	for _, m := range keyed {
		mt, err := scrapeMember(m.httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		for _, reason := range []string{"key", "label"} {
			refused[reason] += mt.sum("siglake_gossip_refused_total", `reason="`+reason+`"`)
		}
		if k := mt.sum("siglake_gossip_keys", ""); k != 1 {
			t.Errorf("%s: siglake_gossip_keys %v, want 1", m.name, k)
		}
	}
	if refused["key"] == 0 || refused["label"] == 0 {
		t.Errorf("refusals counted by the members: %v, want some for both reasons", refused)
	}
	logOf := func(m *member) string {
		b, _ := os.ReadFile(filepath.Join(filepath.Dir(m.wal), m.name+".log"))
		return string(b)
	}
	if l := logOf(outsiders[0].m); !strings.Contains(l, `"level":"warn"`) || !strings.Contains(l, "gossip runs without encryption") || !strings.Contains(l, "SIGLAKE_GOSSIP_KEY_FILE") {
		t.Errorf("the keyless member did not warn at start naming SIGLAKE_GOSSIP_KEY_FILE:\n%s", tail(l, 3000))
	}
	if l := logOf(keyed[0]); strings.Contains(l, "gossip runs without encryption") {
		t.Error("a keyed member warned that it runs without encryption")
	}
	for _, o := range outsiders {
		_ = o.m.cmd.Process.Signal(syscall.SIGTERM)
		_ = o.m.cmd.Wait()
	}

	// Rotation, one member at a time as pods see an updated Secret, each step on every member
	// before the next (the key file is re-read every 5 s), while ingest keeps writing (the drain
	// and the gossip share the process).
	var load []*exec.Cmd
	var loadErr []*bytes.Buffer
	for i, m := range keyed {
		c := exec.Command(bin, "walgen", "--wal-dir", m.wal, "--stream", m.name, "--rows", "6000", "--rate", "200",
			"--seed", fmt.Sprint(50+i), "--batch-rows", "200", "--segment-mb", "0.05", "--roll-age", "2s",
			"--tables", strings.Join(securityTables, ","), "--json")
		e := &bytes.Buffer{}
		c.Stderr = e
		loadErr = append(loadErr, e)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		load = append(load, c)
	}
	var primary []string // after each step, the one key every member sends with
	for si, step := range [][]string{{oldKey, newKey}, {newKey, oldKey}, {newKey}} {
		for _, m := range keyed {
			writeKeys(t, keyFile(m), step...)
			holdFor(t, keyed, 2*time.Second, fmt.Sprintf("rotation step %d keys on %s", len(step), m.name))
		}
		holdFor(t, keyed, 6*time.Second, fmt.Sprintf("after rotation step %v", len(step)))
		// siglake_gossip_keys is 2 both before and after the switch: the fingerprint tells.
		fps := map[string]int{}
		for _, m := range keyed {
			mt, err := scrapeMember(m.httpAddr)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(mt), "\n") {
				if strings.HasPrefix(line, "siglake_gossip_primary_key_info{") {
					fps[line]++
				}
			}
		}
		if len(fps) != 1 {
			t.Fatalf("after rotation step %d the members send with %d keys: %v", si+1, len(fps), fps)
		}
		for fp := range fps {
			primary = append(primary, fp)
		}
	}
	// Step 1 adds, step 2 switches (the fingerprint changes on every member), step 3 removes.
	if primary[1] == primary[0] || primary[2] != primary[1] {
		t.Fatalf("fingerprints sent with after each step: %v, want old, new, new", primary)
	}
	for i, c := range load {
		if err := c.Wait(); err != nil {
			t.Fatalf("walgen during the rotation: %v: %s", err, loadErr[i])
		}
	}
	for _, m := range keyed {
		mt, err := scrapeMember(m.httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		if k := mt.sum("siglake_gossip_keys", ""); k != 1 {
			t.Errorf("%s: siglake_gossip_keys %v after the rotation, want 1", m.name, k)
		}
		if l := logOf(m); strings.Count(l, "gossip keys reloaded") != 3 {
			t.Errorf("%s logged %d key reloads, want 3", m.name, strings.Count(l, "gossip keys reloaded"))
		}
	}
	stale := newMember(t, s, "stale-key", 13)
	staleKeys := filepath.Join(t.TempDir(), "keys")
	writeKeys(t, staleKeys, oldKey)
	startMember(t, s, stale, all, "--gossip-key-file", staleKeys, "--gossip-cluster-label", "prod")
	holdFor(t, keyed, 8*time.Second, "a member with only the old key trying to join")
	if r, err := status(stale.httpAddr); err != nil || len(r.Owned) != 0 {
		t.Errorf("member with the old key: owns %v (%v)", r.Owned, err)
	}
}

// TestGossipBadKeyFile: a key file that cannot work stops the process at start, naming the option
// and what the file may hold.
func TestGossipBadKeyFile(t *testing.T) {
	dir := t.TempDir()
	base := []string{"--wal-dir", dir, "--catalog", "sqlite:" + filepath.Join(dir, "catalog.db"), "--warehouse", filepath.Join(dir, "warehouse"),
		"--gossip-bind", "127.0.0.1:0"}
	short := filepath.Join(dir, "short")
	writeKeys(t, short, base64.StdEncoding.EncodeToString([]byte("only-ten-b")))
	garbage := filepath.Join(dir, "garbage")
	writeKeys(t, garbage, "this is not base64!")
	empty := filepath.Join(dir, "empty")
	writeKeys(t, empty)
	for name, c := range map[string]struct {
		env  []string
		args []string
		want []string
	}{
		"short key":     {nil, []string{"--gossip-key-file", short}, []string{"decodes to 10 bytes"}},
		"not base64":    {nil, []string{"--gossip-key-file", garbage}, []string{"line 1 is not base64"}},
		"empty by env":  {[]string{"SIGLAKE_GOSSIP_KEY_FILE=" + empty}, nil, []string{"no key in the file"}},
		"missing":       {nil, []string{"--gossip-key-file", filepath.Join(dir, "absent")}, []string{"no such file"}},
		"label too big": {nil, []string{"--gossip-cluster-label", strings.Repeat("x", 300)}, []string{"SIGLAKE_GOSSIP_CLUSTER_LABEL", "at most 255"}},
	} {
		t.Run(name, func(t *testing.T) {
			out := startFails(t, c.env, append(append([]string(nil), base...), c.args...)...)
			if name != "label too big" {
				mustContain(t, out, "--gossip-key-file / SIGLAKE_GOSSIP_KEY_FILE", "base64 keys of 16, 24 or 32 bytes")
			}
			mustContain(t, out, c.want...)
		})
	}
}
