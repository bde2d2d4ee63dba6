package sidecar

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/binleases"
	"github.com/siglake/siglake/sidecar/config"
)

// TestBinLeasesReport: what the process publishes is /debug/status's bin_leases object, and a
// later publish replaces it without touching the copy a reader holds.
func TestBinLeasesReport(t *testing.T) {
	p := &Process{Status: NewStatus("node-a", config.RoleAll, "v", time.Now())}
	if js, _ := json.Marshal(p.Status.Snapshot(time.Now())); strings.Contains(string(js), "bin_leases") {
		t.Fatalf("bin_leases before any publish: %s", js)
	}
	at := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	p.publishBinLeases(binleases.Status{Enabled: true,
		Tables: []binleases.Table{{Table: "events", OfferedBins: 1, OfferedBytes: 50, LeasedBins: 1, LeasedBytes: 300,
			Offers: []binleases.Offer{{Kind: "l0", Partition: "2026-12-04", Files: 1, Bytes: 50, Offered: at}},
			Leases: []binleases.Lease{{ID: "c4f5a586", Worker: "pod-b", Kind: "l0", Partition: "2026-12-04", Files: 3, Bytes: 300,
				Taken: at, Deadline: at.Add(time.Minute)}},
			Ends: map[string]int64{"lapsed": 2}}},
		Worker: &binleases.Worker{RunningBins: 1, WaitingBins: 1,
			Running: []binleases.Running{{ID: "aaaaaaaa", Owner: "pod-c", Table: "audit", Kind: "depth",
				Partition: "2026-12-03", Files: 4, Bytes: 1 << 20, Started: at, Merging: at.Add(2 * time.Second), LeaseSeconds: 120}},
			Waiting: []binleases.Running{{ID: "bbbbbbbb", Owner: "pod-c", Table: "audit", Kind: "l0",
				Partition: "2026-12-03", Files: 2, Bytes: 1 << 10, Started: at, LeaseSeconds: 120}}}})
	held := p.Status.Snapshot(time.Now())
	js, err := json.Marshal(held)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"bin_leases":{"enabled":true,"tables":[{"table":"events","offered_bins":1,"offered_bytes":50,"leased_bins":1,"leased_bytes":300,`,
		`"offers":[{"kind":"l0","partition":"2026-12-04","files":1,"bytes":50,"offered":"2026-12-04T03:00:00Z"}]`,
		`"leases":[{"id":"c4f5a586","worker":"pod-b","kind":"l0","partition":"2026-12-04","files":3,"bytes":300,"taken":"2026-12-04T03:00:00Z","deadline":"2026-12-04T03:01:00Z"}]`,
		`"ends":{"lapsed":2}`,
		`"worker":{"running_bins":1,"waiting_bins":1,"running":[{"id":"aaaaaaaa","owner":"pod-c","table":"audit","kind":"depth","partition":"2026-12-03","files":4,"bytes":1048576,"started":"2026-12-04T03:00:00Z","merging":"2026-12-04T03:00:02Z","lease_seconds":120}],` +
			`"waiting":[{"id":"bbbbbbbb","owner":"pod-c","table":"audit","kind":"l0","partition":"2026-12-03","files":2,"bytes":1024,"started":"2026-12-04T03:00:00Z","lease_seconds":120}]}`,
	} {
		if !strings.Contains(string(js), want) {
			t.Errorf("/debug/status lacks %s:\n%s", want, js)
		}
	}
	p.publishBinLeases(binleases.Status{DisabledReason: "off"})
	if b := p.Status.Snapshot(time.Now()).BinLeases; b.Enabled || b.DisabledReason != "off" || b.Tables != nil {
		t.Fatalf("second publish: %+v", b)
	}
	if !held.BinLeases.Enabled || len(held.BinLeases.Tables) != 1 {
		t.Fatalf("the copy held was changed: %+v", held.BinLeases)
	}
}
