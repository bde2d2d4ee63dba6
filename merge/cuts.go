package merge

import (
	"github.com/siglake/siglake/merge/density"
	"github.com/siglake/siglake/merge/index"
	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/writer"
)

// SplitSparseMinBinRows: a rewrite of fewer rows (two default row groups) is
// cut by size only: its output is merged again at the next level anyway, and
// cutting it costs a quiet table files (the simulator's measurements:
// docs/compaction.md, "Late rows").
const SplitSparseMinBinRows = 2 * writer.DefaultRowGroupRows

// binCuts derives a rewrite's density cuts from its inputs' time-bucket
// footers: where the rows are, not where the file bounds say they might be.
func binCuts(inputs []*input.File, frac float64) density.Cuts {
	footers := make([]*index.Footer, len(inputs))
	for i, in := range inputs {
		f, err := writer.DecodeFooter(in.Parquet.MetaData())
		if err != nil {
			return density.Cuts{} // a malformed entry: cut by size only
		}
		footers[i] = f
	}
	h, ok := density.FooterHistogram(footers)
	if !ok {
		return density.Cuts{}
	}
	return density.CutsOfHistogram(h, frac)
}
