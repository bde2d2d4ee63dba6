package plan

import (
	"math"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/plan/level"
)

// rateOf is a rewriter that took fixed plus bytes at perSec for rewrites
// of 10 MB to 1 GB.
func rateOf(fixed time.Duration, perSec float64) RewriteRate {
	var r RewriteRate
	for _, mb := range []int64{10, 100, 1000, 30, 300} {
		r.Add(mb*1e6, fixed+time.Duration(float64(mb*1e6)/perSec*float64(time.Second)))
	}
	return r
}

// timeLimitCase is a partition of fresh small files, which score high, and
// one of overlapping terminal files, whose depth rewrite takes a 100 MB/s
// rewriter far longer than one L0 check interval (10 s).
func timeLimitCase() []level.File {
	files := stacked("a", 0, 20, 1024, 0)
	return append(files, stacked("b", 100, 14, 300*1024, 1)...)
}

func binBytes(p Pass, part string) int64 {
	var n int64
	for _, b := range p.Bins {
		if b.Partition == part {
			n += b.EstimatedBytes
		}
	}
	return n
}

func TestPassTimeLimit(t *testing.T) {
	cfg := DefaultConfig()
	files := timeLimitCase()

	// Without a measured speed, or with a rewriter mostly idle, the pass
	// takes both, as before.
	for _, in := range []Input{{Files: files, Now: t0}, {Files: files, Now: t0, Rewriter: rateOf(time.Second, 100e6), RewriterBusy: busyForTimeLimit - 0.01}} {
		if p := Plan(cfg, in); binBytes(p, "a") == 0 || binBytes(p, "b") == 0 || p.TimeLimit != 0 {
			t.Fatalf("speed known %v, busy %.2f: want both partitions' bins and no limit:\n%v", in.Rewriter.Known(), in.RewriterBusy, p)
		}
	}

	// With it, the large bin waits largeBinWait passes, then runs past the
	// limit; the small files' bin runs every pass.
	var st State
	rate := rateOf(time.Second, 100e6)
	ranAt := -1
	for i := range largeBinWait + 2 {
		p := Plan(cfg, Input{Files: files, Now: t0.Add(time.Duration(i) * 10 * time.Second), State: st, Rewriter: rate, RewriterBusy: 1})
		if p.TimeLimit != cfg.CheckInterval[level.L0] {
			t.Fatalf("pass %d: time limit %v, want the L0 check interval", i, p.TimeLimit)
		}
		if binBytes(p, "a") == 0 {
			t.Fatalf("pass %d: the fresh files' bin was not taken:\n%v", i, p)
		}
		if binBytes(p, "b") > 0 {
			ranAt = i
			break
		}
		if len(p.Deferred) == 0 || p.Next.TimeLimitedPasses != i+1 {
			t.Fatalf("pass %d: want the large bin deferred and %d limited passes, got %d:\n%v", i, i+1, p.Next.TimeLimitedPasses, p)
		}
		st = p.Next
	}
	if ranAt != largeBinWait {
		t.Fatalf("large bin ran in pass %d, want %d (after %d limited passes)", ranAt, largeBinWait, largeBinWait)
	}
}

// The first bin of a pass is taken whatever its size, so a rewriter slower
// than its largest bin still makes progress.
func TestPassTimeLimitTakesFirstBin(t *testing.T) {
	rate := rateOf(time.Second, 1e6)
	p := Plan(DefaultConfig(), Input{Files: stacked("b", 0, 14, 300*1024, 1), Now: t0, Rewriter: rate, RewriterBusy: 1})
	if len(p.Bins) != 1 || rate.Estimate(p.Bins[0].EstimatedBytes) <= p.TimeLimit {
		t.Fatalf("want the one large bin past the %v limit:\n%v", p.TimeLimit, p)
	}
}

func TestRewriteRate(t *testing.T) {
	var r RewriteRate
	if r.Known() || r.Estimate(1e9) != 0 {
		t.Fatal("zero value must know no speed")
	}
	r.Add(0, time.Second) // ignored
	r.Add(100, 0)         // ignored
	r.Add(100e6, time.Second)
	if got := r.Estimate(200e6); got != 2*time.Second {
		t.Fatalf("one rewrite of 100 MB in 1 s: 200 MB estimated at %v, want 2 s (no fixed part from one size)", got)
	}
	// A fixed cost and a per-byte cost are told apart.
	r = rateOf(time.Second, 200e6)
	for _, c := range []struct {
		bytes int64
		want  float64
	}{{2e6, 1.01}, {512e6, 3.56}, {4e9, 21}} {
		if got := r.Estimate(c.bytes).Seconds(); math.Abs(got-c.want) > 0.01*c.want {
			t.Errorf("1 s + 200 MB/s: %d bytes estimated at %.2f s, want %.2f", c.bytes, got, c.want)
		}
	}
	// The old speed fades.
	for range 60 {
		r.Add(10e6, 2*time.Second)
		r.Add(20e6, 3*time.Second)
	}
	if got := r.Estimate(30e6).Seconds(); math.Abs(got-4) > 0.1 {
		t.Fatalf("after 120 rewrites at 1 s + 10 MB/s, 30 MB is estimated at %.2f s, want 4", got)
	}
}

func TestBusyShare(t *testing.T) {
	var s BusyShare
	if s.Share() != 0 {
		t.Fatal("zero value must be 0")
	}
	s.Add(time.Second, 0) // ignored
	for range 60 {        // 10 minutes at 80%
		s.Add(8*time.Second, 10*time.Second)
	}
	if got := s.Share(); math.Abs(got-0.8) > 1e-9 {
		t.Fatalf("steady 80%%: share %v", got)
	}
	s.Add(time.Hour, time.Second) // more busy than wall counts as the wall
	for range 180 {               // then 30 minutes idle
		s.Add(0, 10*time.Second)
	}
	if got := s.Share(); got > 0.05 {
		t.Fatalf("after 30 idle minutes the share is %v: the busy past must fade", got)
	}
}

// With more fresh work than fits one interval, the pass past the limit still
// goes to the large bin that keeps waiting, not to the next fresh bin, and
// the count of limited passes restarts once it ran.
func TestPassTimeLimitLargeBinRunsBehindFreshWork(t *testing.T) {
	files := append(timeLimitCase(), stacked("a2", 200, 20, 1024, 0)...)
	rate := rateOf(6*time.Second, 100e6) // each fresh bin about 6 s: two never fit in 10 s
	var st State
	for i := range largeBinWait + 1 {
		p := Plan(DefaultConfig(), Input{Files: files, Now: t0.Add(time.Duration(i) * 10 * time.Second), State: st, Rewriter: rate, RewriterBusy: 1})
		if binBytes(p, "b") > 0 {
			if i != largeBinWait || p.Next.TimeLimitedPasses != 0 {
				t.Fatalf("large bin ran in pass %d (want %d), limited passes next %d (want 0):\n%v", i, largeBinWait, p.Next.TimeLimitedPasses, p)
			}
			return
		}
		st = p.Next
	}
	t.Fatalf("the large bin did not run in %d passes", largeBinWait+1)
}

// Time the cycle spent before (other tables, fold bins) counts against the
// limit; the pass's first bin is still taken.
func TestPassTimeLimitCountsTimeSpent(t *testing.T) {
	rate := rateOf(time.Second, 100e6)
	in := Input{Files: stacked("a", 0, 20, 1024, 0), Now: t0, Rewriter: rate, RewriterBusy: 1}
	in.Files = append(in.Files, stacked("a2", 200, 20, 1024, 0)...)
	if p := Plan(DefaultConfig(), in); len(p.Bins) != 2 {
		t.Fatalf("nothing spent: want both fresh bins:\n%v", p)
	}
	in.TimeSpent = 9 * time.Second
	p := Plan(DefaultConfig(), in)
	if len(p.Bins) != 1 || len(p.Deferred) != 1 || p.Next.TimeLimitedPasses != 1 {
		t.Fatalf("9 s spent: want one bin taken and one deferred:\n%v", p)
	}
}
