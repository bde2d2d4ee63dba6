package statustext

import (
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/claim"
	"github.com/siglake/siglake/sidecar/commit"
)

// TestStatusShowsGroupCommit: the GROUP COMMIT block gives each table's committer, and for the
// tables this process commits their queue, last commit, watermark and live streams; then this
// pod's hand-offs waiting for an answer and its fallbacks. Off, it says why.
func TestStatusShowsGroupCommit(t *testing.T) {
	now := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	r := sidecar.StatusReport{Node: "pod-a", StartedAt: now, Now: now, CatalogReady: true,
		Tables: map[string]*sidecar.TableReport{"events": {Owner: "pod-a"}, "audit": {Owner: "pod-b"}},
		GroupCommit: &sidecar.GroupCommitReport{Enabled: true, IntervalSeconds: 1,
			Committer: &commit.CommitterStatus{Tables: []commit.CommitterTable{{Table: "events", QueueRequests: 3, QueueBytes: 2048,
				BehindIntervals: 2.5, LiveStreams: 12, CompleteThrough: now.Add(-20 * time.Second),
				LastCommit: &commit.LastCommit{Time: now.Add(-2 * time.Second), Requests: 5, Streams: 4, Files: 9, SnapshotID: 77, Seconds: 0.25, Outcome: "committed"}}}},
			Pod: &commit.ClientStatus{Fallbacks: map[string]int64{"timeout": 2, "no_committer": 1},
				Outstanding: []commit.Outstanding{{ID: "9f2c", Table: "audit", Stream: "s1", First: "1:4", Last: "1:9", To: "pod-b",
					Since: now.Add(-3 * time.Second), Sends: 2, LastAnswer: "ack"}}}}}
	var b strings.Builder
	Write(&b, r)
	out := b.String()
	for _, want := range []string{
		"GROUP COMMIT  on, interval 1s",
		"TABLE   COMMITTER",
		"audit   pod-b ",
		"events  pod-a (this process)  3 req, 2.0 KiB, 2.5 intervals behind  2s ago (committed): 5 req, 4 streams, 9 files in 0.25s, snapshot 77  2026-12-04T02:59:40Z (20s ago)  12",
		"this pod committed directly since start: no_committer 1, timeout 2",
		"this pod's hand-offs waiting for an answer:",
		"9f2c  audit  s1      1:4..1:9  pod-b  3s       2      ack",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}

	r.GroupCommit = &sidecar.GroupCommitReport{DisabledReason: "no gossip: --gossip-bind / SIGLAKE_GOSSIP_BIND is empty"}
	b.Reset()
	Write(&b, r)
	if !strings.Contains(b.String(), "GROUP COMMIT  off: no gossip: --gossip-bind / SIGLAKE_GOSSIP_BIND is empty") || strings.Contains(b.String(), "COMPLETE THROUGH") {
		t.Fatalf("off:\n%s", b.String())
	}
	r.GroupCommit = nil
	b.Reset()
	Write(&b, r)
	if strings.Contains(b.String(), "GROUP COMMIT") {
		t.Fatalf("no report, yet a block:\n%s", b.String())
	}
}

// TestStatusShowsClaimElectedCommitters: without gossip the committer of each table is the
// holder of its committer claim, as this process last read the claims.
func TestStatusShowsClaimElectedCommitters(t *testing.T) {
	now := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	r := sidecar.StatusReport{Node: "pod-a", StartedAt: now, Now: now, CatalogReady: true,
		Tables:          map[string]*sidecar.TableReport{"events": {}, "audit": {}, "spans": {}},
		CommitterClaims: &claim.Report{Holder: "pod-a", Held: []claim.HeldReport{{Stream: "events", Epoch: 3}}, Others: map[string]string{"audit": "pod-b"}},
		GroupCommit:     &sidecar.GroupCommitReport{Enabled: true, Election: "catalog_claim", IntervalSeconds: 1}}
	var b strings.Builder
	Write(&b, r)
	out := b.String()
	for _, want := range []string{"GROUP COMMIT  on, interval 1s, committers by catalog claim", "audit   pod-b ", "events  pod-a ", "spans   - "} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}
