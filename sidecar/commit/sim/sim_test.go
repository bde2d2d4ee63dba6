package sim

import (
	"encoding/json"
	"math"
	"os"
	"reflect"
	"testing"
	"time"
)

// measuredRun is one run of docs/benchmarks.md's "Concurrent drainers on one table".
type measuredRun struct {
	Drainers          int     `json:"drainers"`
	CommitsPerSec     float64 `json:"commits_per_sec"`
	FirstRoundSuccess float64 `json:"first_round_success"`
	CallMean          float64 `json:"call_mean_s"`
	CallP50           float64 `json:"call_p50_le_s"`
	CallP99           float64 `json:"call_p99_le_s"`
	MetadataReadPerGB float64 `json:"metadata_read_mb_per_gb"`
}

// measured reproduces the benchmark's shape: every drainer has 8 one-segment batches ready and
// commits them one by one, no maintenance, no manifest merging.
func measured(drainers int, bytes float64, seed uint64) Scenario {
	s := Base(drainers, Direct)
	s.Name = "measured"
	s.Batches, s.BytesPerRequest, s.FilesPerRequest = 8, bytes, 1
	s.MaintenanceCommitsPerSec, s.MergeMinCount = 0, 0
	s.Seed = seed
	return s
}

// TestFitsMeasured: the fitted service reproduces the measured direct runs within the tolerance
// recorded in testdata/measured.json (averages over its seeds: one measured run of 32 or 128
// commits is itself one sample).
func TestFitsMeasured(t *testing.T) {
	b, err := os.ReadFile("testdata/measured.json")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Bytes     float64       `json:"bytes_per_batch"`
		Runs      []measuredRun `json:"runs"`
		Tolerance struct {
			Seeds        int     `json:"seeds"`
			Commits      float64 `json:"commits_per_sec_rel"`
			FirstRound   float64 `json:"first_round_success_abs"`
			MeanFactor   float64 `json:"call_mean_factor"`
			MetadataRead float64 `json:"metadata_read_rel"`
		} `json:"tolerance"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	tol := m.Tolerance
	for _, want := range m.Runs {
		var got Result
		for seed := range tol.Seeds {
			r := Run(measured(want.Drainers, m.Bytes, uint64(seed)))
			n := float64(tol.Seeds)
			got.CommitsPerSec += r.CommitsPerSec / n
			got.FirstRoundSuccess += r.FirstRoundSuccess / n
			got.CallMean += r.CallMean / n
			got.CallP50 += r.CallP50 / n
			got.CallP99 += r.CallP99 / n
			got.MetadataReadPerGB += r.MetadataReadPerGB / n
		}
		t.Logf("%d drainers: %.2f commits/s, %.0f%% first round, calls p50 %.2fs p99 %.2fs mean %.2fs, metadata read %.0f MB/GB",
			want.Drainers, got.CommitsPerSec, 100*got.FirstRoundSuccess, got.CallP50, got.CallP99, got.CallMean, got.MetadataReadPerGB)
		if math.Abs(got.CommitsPerSec-want.CommitsPerSec) > tol.Commits*want.CommitsPerSec {
			t.Errorf("%d drainers: %.2f commits/s, measured %.1f", want.Drainers, got.CommitsPerSec, want.CommitsPerSec)
		}
		if math.Abs(got.FirstRoundSuccess-want.FirstRoundSuccess) > tol.FirstRound {
			t.Errorf("%d drainers: %.2f first-round success, measured %.2f", want.Drainers, got.FirstRoundSuccess, want.FirstRoundSuccess)
		}
		if got.CallP50 > want.CallP50 || got.CallP99 > 2*want.CallP99 {
			t.Errorf("%d drainers: calls p50 %.2fs p99 %.2fs, measured p50 <= %.2fs p99 <= %.2fs", want.Drainers, got.CallP50, got.CallP99, want.CallP50, want.CallP99)
		}
		if got.CallMean > tol.MeanFactor*want.CallMean || got.CallMean < want.CallMean/tol.MeanFactor {
			t.Errorf("%d drainers: calls mean %.2fs, measured %.2fs", want.Drainers, got.CallMean, want.CallMean)
		}
		if want.MetadataReadPerGB > 0 && math.Abs(got.MetadataReadPerGB-want.MetadataReadPerGB) > tol.MetadataRead*want.MetadataReadPerGB {
			t.Errorf("%d drainers: metadata read %.0f MB/GB, measured %.0f", want.Drainers, got.MetadataReadPerGB, want.MetadataReadPerGB)
		}
	}
}

func TestDeterministic(t *testing.T) {
	for _, mode := range []Mode{Direct, Group} {
		s := Base(50, mode)
		s.Duration = 2 * time.Minute
		s.MaintenanceCommitsPerSec = 0.2
		a, b := Run(s), Run(s)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: same seed, different results:\n%v\n%v", mode, a, b)
		}
		s.Seed++
		if c := Run(s); reflect.DeepEqual(a, c) {
			t.Errorf("%s: the seed changes nothing: %v", mode, a)
		}
	}
}

// TestDirectSaturates: direct commits stop scaling with the pods; conflicts and lag explode.
func TestDirectSaturates(t *testing.T) {
	small, large := Run(Base(16, Direct)), Run(Base(100, Direct))
	t.Logf("%v\n%v", small, large)
	demand := 100 * 0.1
	if large.CommitsPerSec > demand/3 {
		t.Errorf("100 direct pods landed %.2f commits/s of the %.0f asked: no saturation", large.CommitsPerSec, demand)
	}
	if large.ConflictFraction < 2*small.ConflictFraction || large.ConflictFraction < 0.5 {
		t.Errorf("conflicts %.0f%% at 100 pods, %.0f%% at 16: want them to dominate", 100*large.ConflictFraction, 100*small.ConflictFraction)
	}
	if large.LagP99 < 10*small.LagP99 || large.Waiting == 0 {
		t.Errorf("lag p99 %.1fs at 100 pods (%d batches waiting), %.1fs at 16", large.LagP99, large.Waiting, small.LagP99)
	}
}

// TestGroupCommitsAtTheInterval: group commit serves every N at most 2 commits/s on the table,
// with p99 lag inside the 15 s and no group commit lost to conflicts.
func TestGroupCommitsAtTheInterval(t *testing.T) {
	for _, n := range []int{16, 100, 1000} {
		r := Run(Base(n, Group))
		t.Log(r)
		if r.CommitsPerSec > 2 || r.LagP99 > 15 || r.GroupFailed > 0 || r.Fallbacks > 0 {
			t.Errorf("%d pods: %.2f commits/s, lag p99 %.1fs, %d failed, %d fallbacks", n, r.CommitsPerSec, r.LagP99, r.GroupFailed, r.Fallbacks)
		}
		if r.Requests < r.Batches*9/10 {
			t.Errorf("%d pods: %d requests for %d batches", n, r.Requests, r.Batches)
		}
	}
	if r := Run(Base(1000, Group)); r.ObjectsPerGB > 3 {
		t.Errorf("1000 pods: %.1f metadata objects per GB, want at most 3", r.ObjectsPerGB)
	}
}

// TestFailoverBoundsP99: a committer lost with its queue costs the pods one answer timeout and
// the lease gap, inside the 30 s; a gap past the fallback bound sends them direct.
func TestFailoverBoundsP99(t *testing.T) {
	steady := Run(Base(100, Group))
	s := Base(100, Group)
	s.FailoverAt = 5 * time.Minute
	r := Run(s)
	t.Logf("%v\n%v", steady, r)
	if r.LagP99 > 30 || r.LagP99 < s.FailoverGap.Seconds() || r.Fallbacks > 0 {
		t.Errorf("failover: lag p99 %.1fs (steady %.1fs), %d fallbacks; want between the gap %v and 30 s, none", r.LagP99, steady.LagP99, r.Fallbacks, s.FailoverGap)
	}
	s.FailoverGap = 3 * time.Minute
	long := Run(s)
	t.Log(long)
	// The pods do not wait for the new owner; their direct commits all at once conflict heavily
	// (docs/benchmarks.md "Group commit (simulated)"), yet land before the gap ends.
	if long.Fallbacks == 0 || long.LagP99 > s.FailoverGap.Seconds() {
		t.Errorf("gap past the fallback bound: %d fallbacks, lag p99 %.1fs; want fallbacks and lag under the gap %v", long.Fallbacks, long.LagP99, s.FailoverGap)
	}
}

// TestLong (SIGLAKE_LONG=1): 1,000 pods at 10 GB/s (100 MB batches every 10 s) for an hour.
func TestLong(t *testing.T) {
	if os.Getenv("SIGLAKE_LONG") == "" {
		t.Skip("SIGLAKE_LONG=1 runs 1,000 pods at 10 GB/s")
	}
	for _, mode := range []Mode{Direct, Group} {
		s := Base(1000, mode)
		s.BytesPerRequest, s.Duration = 100e6, time.Hour
		s.FailoverAt = 30 * time.Minute
		r := Run(s)
		t.Log(r)
		if mode == Group && (r.CommitsPerSec > 2 || r.LagP99 > 30 || r.ObjectsPerGB > 3) {
			t.Errorf("group: %.2f commits/s, lag p99 %.1fs, %.2f objects/GB", r.CommitsPerSec, r.LagP99, r.ObjectsPerGB)
		}
		if mode == Direct && r.Waiting == 0 {
			t.Errorf("direct at 1,000 pods kept up: %v", r)
		}
	}
}

// TestFailoverAccountsEveryBatch: across failovers at many instants (some with a commit in
// flight that lands with its answers lost, found by the pods' mark re-read), every batch that
// came due is visible exactly once or still waiting.
func TestFailoverAccountsEveryBatch(t *testing.T) {
	found := 0
	for i := range 40 {
		s := Base(100, Group)
		s.Duration = 3 * time.Minute
		s.FailoverAt = time.Minute + time.Duration(i)*97*time.Millisecond
		s.Seed = uint64(i)
		r := Run(s)
		if r.Visible+r.Waiting != r.Batches {
			t.Errorf("failover at %v: %d visible + %d waiting != %d batches", s.FailoverAt, r.Visible, r.Waiting, r.Batches)
		}
		found += r.AlreadyCommitted
	}
	if found == 0 {
		t.Errorf("no failover hit a commit in flight that landed: the lost-answer path went untested")
	}
}
