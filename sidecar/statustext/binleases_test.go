package statustext

import (
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/binleases"
)

// TestStatusShowsBinLeases: the BIN LEASES block gives per owned table its bins on offer and
// leased with its lease ends, then each offer (age on offer) and lease (worker, age, time to its
// deadline, or lapsing past it), saying how many are not listed; then this process's worker with
// its bins running (merging since, or waiting on the owner's answer since their result) and waiting for merge memory (since granted), and its ends. Off, it says why; without a report, no block.
func TestStatusShowsBinLeases(t *testing.T) {
	now := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	r := sidecar.StatusReport{Node: "pod-a", StartedAt: now, Now: now, CatalogReady: true,
		BinLeases: &binleases.Status{Enabled: true,
			Tables: []binleases.Table{
				{Table: "audit", LeasedBins: 1, LeasedBytes: 2048, Ends: map[string]int64{"lapsed": 2, "committed": 7},
					Leases: []binleases.Lease{{ID: "0badf00d", Worker: "pod-a", Local: true, Kind: "l1", Partition: "2026-12-03",
						Files: 8, Bytes: 2048, Taken: now.Add(-3 * time.Minute), Deadline: now.Add(-time.Second)}}},
				{Table: "events", OfferedBins: 3, OfferedBytes: 300, LeasedBins: 1, LeasedBytes: 100,
					Offers: []binleases.Offer{{Kind: "l0", Partition: "2026-12-04", Files: 2, Bytes: 100, Offered: now.Add(-12 * time.Second)}},
					Leases: []binleases.Lease{{ID: "c4f5a586", Worker: "pod-b", Kind: "depth", Partition: "2026-12-04", Files: 3,
						Bytes: 100, Taken: now.Add(-30 * time.Second), Deadline: now.Add(90 * time.Second)}}},
			},
			Worker: &binleases.Worker{RunningBins: 2, WaitingBins: 1, Done: map[string]int64{"committed": 4, "lost": 1},
				Running: []binleases.Running{{ID: "aaaaaaaa", Owner: "pod-c", Table: "logs", Kind: "fold", Partition: "2026-12-01",
					Files: 5, Bytes: 1 << 20, Started: now.Add(-50 * time.Second), Merging: now.Add(-5 * time.Second), LeaseSeconds: 120},
					{ID: "cccccccc", Owner: "pod-c", Table: "logs", Kind: "l1", Partition: "2026-12-01", Files: 3, Bytes: 1 << 20,
						Started: now.Add(-50 * time.Second), Merging: now.Add(-45 * time.Second), Merged: now.Add(-2 * time.Second), LeaseSeconds: 120}},
				Waiting: []binleases.Running{{ID: "bbbbbbbb", Owner: "pod-c", Table: "logs", Kind: "l0", Partition: "2026-12-02",
					Files: 2, Bytes: 1 << 10, Started: now.Add(-40 * time.Second), LeaseSeconds: 120}}}}}
	var b strings.Builder
	Write(&b, r)
	out := b.String()
	for _, want := range []string{
		"\nBIN LEASES  on\n",
		"TABLE   OFFERED        LEASED          LEASE ENDS",
		"audit   0 bins, 0 B    1 bin, 2.0 KiB  committed 7, lapsed 2",
		"events  3 bins, 300 B  1 bin, 100 B    -",
		"bins on offer (1 of 3 listed):",
		"  events  l0    2026-12-04  2      100 B  12s",
		"leases:",
		"  audit   0badf00d  pod-a (owner's own)  l1     2026-12-03  8      2.0 KiB  3m0s  lapsing",
		"  events  c4f5a586  pod-b                depth  2026-12-04  3      100 B    30s   1m30s",
		"this process's worker: 2 bins running, 1 waiting for merge memory; since start: committed 4, lost 1",
		"  aaaaaaaa  pod-c  logs   fold  2026-12-01  5      1.0 MiB  running  5s   120s",
		"  cccccccc  pod-c  logs   l1    2026-12-01  3      1.0 MiB  answer   2s   120s",
		"  bbbbbbbb  pod-c  logs   l0    2026-12-02  2      1.0 KiB  waiting  40s  120s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}

	r.BinLeases = &binleases.Status{DisabledReason: "off: --bin-leases / SIGLAKE_BIN_LEASES is false"}
	b.Reset()
	Write(&b, r)
	if !strings.Contains(b.String(), "BIN LEASES  off: off: --bin-leases / SIGLAKE_BIN_LEASES is false") || strings.Contains(b.String(), "OFFERED") {
		t.Fatalf("off:\n%s", b.String())
	}
	r.BinLeases = &binleases.Status{Enabled: true}
	b.Reset()
	Write(&b, r)
	if !strings.Contains(b.String(), "BIN LEASES  on\nthis process offers no bins\n") || strings.Contains(b.String(), "worker") {
		t.Fatalf("on, idle, no worker:\n%s", b.String())
	}
	r.BinLeases = nil
	b.Reset()
	Write(&b, r)
	if strings.Contains(b.String(), "BIN LEASES") {
		t.Fatalf("no report, yet a block:\n%s", b.String())
	}
}
