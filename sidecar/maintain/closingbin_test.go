package maintain

import (
	"context"
	"path"
	"testing"
	"time"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/plan"
)

// binOfLive runs bin b, given the live files of the table "events" that keep accepts, through the
// maintainer's rewrite (the real executor and the embedded catalog), and returns the outputs.
func binOfLive(t *testing.T, e *env, m *Maintainer, b plan.Bin, keep func(lake.File) bool) []merge.Output {
	t.Helper()
	ctx := context.Background()
	tbl := e.te.Table("events")
	live, err := lake.LiveFiles(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]lake.File{}
	for _, f := range live {
		if keep(f) {
			byPath[f.Path] = f
			b.Files = append(b.Files, PlanFile(f))
			b.EstimatedBytes += f.Size
			b.Partition = f.Partition
		}
	}
	if len(b.Files) < 2 {
		t.Fatalf("bin of %d files", len(b.Files))
	}
	out, err := m.rewrite(ctx, tbl, b, byPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out.Merge.Outputs
}

// closingTable drains, in one hour, a dense burst of rows (enough for density cuts,
// merge.SplitSparseMinBinRows) and half an hour later a few rows, sparse beside it.
func closingTable(t *testing.T, e *env) {
	t.Helper()
	start := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	e.writeSegments("events", 7, 40000, 1, start)
	e.writeSegments("events", 1, 400, 2, start.Add(30*time.Minute))
	e.te.DrainAll()
}

// TestClosingBinWritesLateFiles: a closing merge (Bin.LateOutputs, SizeCutsOnly) of on-time and
// late files writes late files only, through the real executor, with density cuts configured.
func TestClosingBinWritesLateFiles(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.SplitSparse = 0.05 })
	closingTable(t, e)
	m := newMaintainer(t, e, e.lake, time.Now)
	closing := plan.Bin{Kind: plan.KindDepth, LateOutputs: true, SizeCutsOnly: true, TargetFileBytes: 512 << 20, Reason: "closed partition: test"}
	// First two on-time files into the late stream, then those late files with the other on-time ones.
	n := 0
	outs := binOfLive(t, e, m, closing, func(f lake.File) bool { n++; return !f.Late && n <= 2 })
	for _, o := range outs {
		if !merge.ParseLate(path.Base(o.Path)) {
			t.Fatalf("closing merge of on-time files wrote the on-time file %s", o.Path)
		}
	}
	outs = binOfLive(t, e, m, closing, func(lake.File) bool { return true })
	for _, o := range outs {
		if !merge.ParseLate(path.Base(o.Path)) {
			t.Fatalf("closing merge of on-time and late files wrote the on-time file %s", o.Path)
		}
	}
}

// TestSizeCutsOnlyBin: a bin that asks for size cuts only (the restricted backpressure pass) is
// cut by size only though SplitSparse is configured: one output for the burst and the sparse rows, where the
// same bin with density cuts writes more.
func TestSizeCutsOnlyBin(t *testing.T) {
	for _, sizeOnly := range []bool{true, false} {
		e := newEnv(t, func(c *testConfig) { c.SplitSparse = 0.05 })
		closingTable(t, e)
		m := newMaintainer(t, e, e.lake, time.Now)
		b := plan.Bin{Kind: plan.KindBackpressureL0, SizeCutsOnly: sizeOnly, TargetFileBytes: 512 << 20, Reason: "test"}
		outs := binOfLive(t, e, m, b, func(lake.File) bool { return true })
		if sizeOnly && len(outs) != 1 || !sizeOnly && len(outs) < 2 {
			t.Fatalf("size cuts only %v: %d outputs", sizeOnly, len(outs))
		}
	}
}
