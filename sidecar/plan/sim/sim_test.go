package sim

import (
	"bytes"
	"encoding/xml"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/siglake/siglake/merge"
	mergedensity "github.com/siglake/siglake/merge/density"
	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/plan/level"
)

// short is a one-hour scenario small enough for every test run.
func short() Scenario {
	s := Base()
	s.Name = "short"
	s.Pods = 8
	s.IngestBytesPerSec = 5e6
	s.Duration = time.Hour
	return s
}

func TestRunConservesBytesAndIsDeterministic(t *testing.T) {
	s := short()
	a := Run(s)
	if len(a.Errors) > 0 {
		t.Fatalf("impossible events: %v", a.Errors)
	}
	want := s.IngestBytesPerSec * s.Duration.Seconds()
	if math.Abs(a.IngestedBytes-want)/want > 0.01 {
		t.Errorf("ingested %.0f bytes, want about %.0f", a.IngestedBytes, want)
	}
	if a.RewrittenBytes <= 0 || a.WriteAmp <= 0 {
		t.Errorf("no rewrites happened: %v", a)
	}
	b := Run(s)
	if a.String() != b.String() {
		t.Errorf("same seed, different results:\n%v\n%v", a, b)
	}
	s.Seed++
	if c := Run(s); c.String() == a.String() {
		t.Errorf("the seed changes nothing")
	}
}

func TestCutKeepsBytesAndDisjointness(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for iter := range 2000 {
		var ins []piece
		var total float64
		for range 1 + r.IntN(20) {
			lo := r.Int64N(1e6)
			p := piece{lo, lo + r.Int64N(1e5), 1 + r.Float64()*1e6}
			ins = append(ins, p)
			total += p.bytes
		}
		target := total / float64(1+r.IntN(6))
		sparse := []float64{0, 0.05, 0.5}[r.IntN(3)]
		outs, _ := cut(ins, target, sparse, 0)
		if n := int(math.Ceil(total / target)); sparse == 0 && len(outs) > n {
			t.Fatalf("iter %d: %d outputs, want at most %d", iter, len(outs), n)
		}
		var sum float64
		prevHi := int64(math.MinInt64)
		for _, o := range outs {
			if len(o) > maxPieces {
				t.Fatalf("iter %d: %d pieces", iter, len(o))
			}
			for _, p := range o {
				if p.lo <= prevHi || p.hi < p.lo {
					t.Fatalf("iter %d: outputs overlap or pieces out of order: %v", iter, outs)
				}
				prevHi = p.hi
				sum += p.bytes
			}
		}
		if math.Abs(sum-total) > 1e-6*total {
			t.Fatalf("iter %d: outputs hold %.3f bytes, inputs %.3f", iter, sum, total)
		}
	}
}

func TestLiveBytesEqualIngested(t *testing.T) {
	s := short()
	s.Duration = 30 * time.Minute
	w := run(s)
	res := w.res
	var live float64
	for _, f := range w.files {
		for _, p := range f.pieces {
			live += p.bytes
		}
	}
	if math.Abs(live-res.IngestedBytes)/res.IngestedBytes > 1e-6 {
		t.Fatalf("live %.0f bytes, ingested %.0f: a rewrite lost or made data", live, res.IngestedBytes)
	}
}

func TestLeveledBeatsLegacyOnAQuietTable(t *testing.T) {
	s := short()
	s.Pods = 2
	s.IngestBytesPerSec = 200e3
	s.Duration = 6 * time.Hour
	lev, leg := Compare(s)
	t.Logf("\n%v\n%v", lev, leg)
	// Legacy rewrites the whole current partition every minute.
	if 3*lev.WriteAmp >= leg.WriteAmp {
		t.Errorf("leveled WA %.2f not a third of legacy %.2f", lev.WriteAmp, leg.WriteAmp)
	}
	// Behind the ingest edge, late stragglers wait for the hourly L2
	// sweep; the layout stays shallow.
	if lev.SettledDepthMax > 6 {
		t.Errorf("leveled settled depth max %d > 6", lev.SettledDepthMax)
	}
}

func TestLeveledBeatsLegacyOnABusyTable(t *testing.T) {
	s := short()
	s.Duration = 2 * time.Hour
	lev, leg := Compare(s)
	t.Logf("\n%v\n%v", lev, leg)
	// Legacy buys a flat settled layout with far more rewriting and lets
	// the ingest edge pile up while it rewrites whole partitions.
	if lev.DepthP50 >= leg.DepthP50 || lev.FilesP50 >= leg.FilesP50 || lev.WriteAmp >= leg.WriteAmp {
		t.Errorf("leveled does not beat legacy on depth, file count and write amplification")
	}
}

func TestRewritesDisabledRewritesNothing(t *testing.T) {
	s := short()
	s.Duration = 20 * time.Minute
	s.Config.ReclusterInterval = 0
	r := Run(s)
	if r.RewrittenBytes != 0 || r.Decisions["rewrites_disabled"] == 0 {
		t.Fatalf("%v", r)
	}
}

func TestStallCadence(t *testing.T) {
	s := short()
	s.Duration = 30 * time.Minute
	s.MergeBytesPerSec = 1e12 // the rewriter is always idle at a tick
	s.BinOverhead = 0
	s.Stalls = []Stall{{From: 10 * time.Minute, To: 20 * time.Minute, Sealed: 1000}}
	r := Run(s)
	// 60 ticks in the stall; every 4th runs the restricted pass.
	if r.Decisions["skipped_backpressure"] != 45 || r.Decisions["throttled_backpressure"] != 15 {
		t.Fatalf("decisions %v, want 45 skipped and 15 throttled", r.Decisions)
	}
}

func TestWriteSVG(t *testing.T) {
	s := short()
	s.Duration = 20 * time.Minute
	lev, leg := Compare(s)
	var buf bytes.Buffer
	if err := WriteSVG(&buf, lev, leg); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(&buf)
	polylines := 0
	for {
		tok, err := d.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not well-formed XML: %v", err)
			}
			break
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			polylines++
		}
	}
	if polylines != 6 {
		t.Fatalf("%d polylines, want 3 lines (depth, settled depth, files) x 2 results", polylines)
	}
}

func TestScenarioValidate(t *testing.T) {
	for _, s := range Documented() {
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
	bad := Base()
	bad.Duration = 0
	if bad.Validate() == nil {
		t.Error("zero duration validated")
	}
	bad = Base()
	bad.Config = plan.Config{}
	if bad.Validate() == nil {
		t.Error("zero planner config validated")
	}
}

// The simulator's writer model cuts by density from the same row count as
// the real one.
func TestSplitMinRowsMatchesMerge(t *testing.T) {
	if splitMinRows != mergedensity.SplitSparseMinRows || splitMinBinRows != merge.SplitSparseMinBinRows {
		t.Fatalf("sim floors %d and %d, mergedensity.SplitSparseMinRows %d and SplitSparseMinBinRows %d", splitMinRows, splitMinBinRows, mergedensity.SplitSparseMinRows, merge.SplitSparseMinBinRows)
	}
}

// TestSpliceCostModel: without a splice rate every byte is re-encoded; with
// one, disjoint parts of bins are copied, never more than the bin holds, and
// a bin of two disjoint files costs only its copy.
func TestSpliceCostModel(t *testing.T) {
	s := short()
	if r := Run(s); r.SplicedBytes != 0 || r.RewriteSeconds <= 0 {
		t.Fatalf("no splice rate: spliced %.0f bytes, rewrite seconds %.1f", r.SplicedBytes, r.RewriteSeconds)
	}
	s.SpliceBytesPerSec = 20 * s.MergeBytesPerSec
	r := Run(s)
	if len(r.Errors) > 0 {
		t.Fatalf("impossible events: %v", r.Errors)
	}
	if r.SplicedBytes <= 0 || r.SplicedBytes > r.RewrittenBytes {
		t.Fatalf("spliced %.0f of %.0f rewritten bytes", r.SplicedBytes, r.RewrittenBytes)
	}

	w := &world{s: Scenario{SpliceBytesPerSec: 1, RowBytes: 1}.withDefaults(), files: map[string]*simFile{}, parts: map[string]*partState{}}
	big := 10 * w.s.SpliceRowGroupBytes
	a := w.add(0, 1, false, []piece{{0, 999, big}})
	b := w.add(0, 1, false, []piece{{1000, 1999, big}})
	if got := w.spliceBytes(level.Bin{Files: []level.File{a.File, b.File}}); got != 2*big {
		t.Fatalf("two disjoint files: spliced %.0f, want %.0f", got, 2*big)
	}
	c := w.add(0, 0, false, []piece{{990, 995, 100}})
	got := w.spliceBytes(level.Bin{Files: []level.File{a.File, b.File, c.File}})
	if want := 2*big - 0.006*big - 2*w.s.SpliceRowGroupBytes; math.Abs(got-want) > 1 {
		t.Fatalf("a late sliver inside the first file: spliced %.0f, want %.0f", got, want)
	}
}
