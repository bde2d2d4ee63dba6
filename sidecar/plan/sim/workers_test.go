package sim

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/plan/level"
)

// shortOfOne is short() with a rewriter too slow for it alone: at 2 MB/s for 5 MB/s of ingest
// one worker falls behind, and several have room.
func shortOfOne() Scenario {
	s := short()
	s.Name = "short-of-one"
	s.MergeBytesPerSec = 2e6
	s.PassTimeLimit = true
	return s
}

// TestWorkersNeverShareAFile: with several workers, no two bins over one file are queued or
// running at once (the lease book's promise: a file in flight is not planned again until its
// bin ends), bins do run in parallel on every worker, and the simulator records no impossible
// event.
func TestWorkersNeverShareAFile(t *testing.T) {
	s := shortOfOne()
	s.Workers = 4
	type span struct{ start, done int64 }
	bins := map[string]int{} // file: bins dealt over it
	used := map[int]bool{}
	var spans []span
	w := run(s, func(w *world) {
		w.dealt = func(worker int, start, done int64, b level.Bin) {
			used[worker] = true
			spans = append(spans, span{start, done})
			for _, f := range b.Files {
				bins[f.Path]++
			}
		}
	})
	if len(w.res.Errors) > 0 {
		t.Fatalf("impossible events: %v", w.res.Errors)
	}
	// A bin's inputs are rewritten away when it ends, so a second bin over a file could only
	// have been dealt while the first was queued or running.
	for path, n := range bins {
		if n > 1 {
			t.Errorf("file %s is in %d bins", path, n)
		}
	}
	if len(used) != s.Workers {
		t.Errorf("bins ran on %d of %d workers", len(used), s.Workers)
	}
	parallel := false
	for i := 1; i < len(spans) && !parallel; i++ {
		for j := range i {
			if spans[j].start < spans[i].done && spans[i].start < spans[j].done {
				parallel = true
				break
			}
		}
	}
	if !parallel {
		t.Errorf("no two of %d bins ran at once on 4 workers", len(spans))
	}
}

// TestWorkersTakeOffersOfEachPass: with several workers the owner plans a pass every tick, busy
// workers or not (the maintainer offers each cycle's bins), a worker that frees up takes the
// next bin on offer in the pass's order, and a bin no worker took before the next pass is withdrawn, never run
// later from an old pass (the lease book replaces unleased offers with the next pass's).
func TestWorkersTakeOffersOfEachPass(t *testing.T) {
	s := shortOfOne()
	s.Workers = 4
	tick := s.Tick.Microseconds()
	var late []string
	last := map[int64]int{} // pass: the place in it of the bin taken last from it
	w := run(s, func(w *world) {
		w.dealt = func(worker int, start, done int64, b level.Bin) {
			if start >= w.lastPass+tick {
				late = append(late, fmt.Sprintf("a bin of the pass at %ds started at %ds", w.lastPass/1e6, start/1e6))
			}
			at := slices.IndexFunc(w.offered, func(o level.Bin) bool { return o.Files[0].Path == b.Files[0].Path })
			prev, ok := last[w.lastPass]
			if !ok {
				prev = -1
			}
			if at < 0 || at != prev+1 {
				t.Errorf("pass at %ds: its bin %d (of %d) taken after its bin %d: not in the pass's order", w.lastPass/1e6, at, len(w.offered), prev)
			}
			last[w.lastPass] = at
		}
	})
	if len(w.res.Errors) > 0 {
		t.Fatalf("impossible events: %v", w.res.Errors)
	}
	passes := 0
	for _, n := range w.res.Decisions {
		passes += n
	}
	if ticks := int(s.Duration.Microseconds()/tick) + 1; passes != ticks {
		t.Errorf("%d passes in %d ticks: want a pass every tick", passes, ticks)
	}
	if len(late) > 0 {
		t.Errorf("%d bins ran after the next pass withdrew them, e.g. %s", len(late), late[0])
	}
}

// TestMoreWorkersNoDeeper: over a few seeds, where one worker is short, 2 and 4 workers settle
// shallower than one (settled depth p50 and live files p50). The ingest edge may be a little
// deeper than with one worker (at most edgeWait more): passes planned while bins run leave the
// files overlapping them for a later pass (plan.Input.InFlight), and a short pool of workers keeps
// the edge's bins in flight most of the time (seed 2: edge depth p50 300 on one worker, 348 on 2,
// 244 on 4).
func TestMoreWorkersNoDeeper(t *testing.T) {
	const edgeWait = 1.2
	for seed := uint64(1); seed <= 3; seed++ {
		s := shortOfOne()
		s.Seed = seed
		var one, two Result
		for _, n := range []int{1, 2, 4} {
			s.Workers = n
			r := Run(s)
			if len(r.Errors) > 0 {
				t.Fatalf("seed %d, %d workers: %v", seed, n, r.Errors)
			}
			t.Logf("seed %d, %d workers: WA %.2f, settled depth p50 %d, depth p50 %d, files p50 %d, busy %.0f%%",
				seed, n, r.WriteAmp, r.SettledDepthP50, r.DepthP50, r.FilesP50, 100*r.BusyFraction)
			if n == 1 {
				one = r
				continue
			}
			if n == 2 {
				two = r
			} else if r.SettledDepthP50 >= two.SettledDepthP50 {
				// Leasing in the pass's order: largest first let the big bins hold 4 workers
				// while the edge's small ones were withdrawn, and 4 settled no shallower than 2.
				t.Errorf("seed %d: 4 workers settle at %d, 2 at %d: not shallower", seed, r.SettledDepthP50, two.SettledDepthP50)
			}
			if r.SettledDepthP50 >= one.SettledDepthP50 || r.FilesP50 >= one.FilesP50 {
				t.Errorf("seed %d: %d workers settle at %d (files %d), one worker at %d (files %d): not shallower where one is short",
					seed, n, r.SettledDepthP50, r.FilesP50, one.SettledDepthP50, one.FilesP50)
			}
			if float64(r.DepthP50) > edgeWait*float64(one.DepthP50) {
				t.Errorf("seed %d: %d workers' edge depth p50 %d, one worker's %d: more than %.2fx", seed, n, r.DepthP50, one.DepthP50, edgeWait)
			}
		}
	}
}

// TestOneWorkerUnchanged: one worker (the zero value's default) reproduces exactly what the
// simulator measured before workers existed: `siglake simulate --duration 2h --json`'s leveled
// run, recorded at the commit before Scenario.Workers.
func TestOneWorkerUnchanged(t *testing.T) {
	s := Base()
	s.Name = "custom"
	s.Duration = 2 * time.Hour
	s.SplitSparse, s.DrainSplitSparse, s.LateStream, s.PassTimeLimit = 0.05, 0.05, true, true
	const want = `{"RewrittenBytes":677400361493,"WriteAmp":1.8829098682964456,"DepthMax":186,"DepthP50":28,` +
		`"SettledDepthP50":6,"FilesP50":451,"FilesFinal":1011,"BacklogMaxSeconds":81.361478,"BusyFraction":0.699022305,` +
		`"Decisions":{"run":596},"BinsByKind":{"depth":1418,"l0":54,"l1":100}}`
	if n := (Scenario{}).withDefaults().Workers; n != 1 {
		t.Fatalf("the zero value runs %d workers, want 1", n)
	}
	s.Workers = 1
	r := Run(s)
	got, err := json.Marshal(struct {
		RewrittenBytes                      float64
		WriteAmp                            float64
		DepthMax, DepthP50, SettledDepthP50 int
		FilesP50, FilesFinal                int
		BacklogMaxSeconds, BusyFraction     float64
		Decisions, BinsByKind               map[string]int
	}{r.RewrittenBytes, r.WriteAmp, r.DepthMax, r.DepthP50, r.SettledDepthP50, r.FilesP50, r.FilesFinal,
		r.BacklogMaxSeconds, r.BusyFraction, r.Decisions, r.BinsByKind})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("one worker:\n got %s\nwant %s", got, want)
	}
}
