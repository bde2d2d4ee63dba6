package merge

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/siglake/siglake/merge/kmerge"
)

// endSink is a kmerge.RunSink with work to do once the merge order is complete (a fold's last bucket).
type endSink struct {
	kmerge.RunSink
	end func() error
}

// folded wraps out in the rewrite's fold, if it has one: the records the assembler builds go
// through the folder (merge/folding). end writes the last bucket; it is nil without a fold.
func (o *RewriteOptions) folded(out func(arrow.RecordBatch) error, schema *arrow.Schema) (func(arrow.RecordBatch) error, func() error) {
	if o.folder == nil {
		return out, nil
	}
	o.folder.SetOut(out)
	return o.folder.Write, o.folder.Flush
}

// withEnd gives rs the end step of a fold (none: rs itself).
func withEnd(rs kmerge.RunSink, end func() error) kmerge.RunSink {
	if end == nil {
		return rs
	}
	return endSink{RunSink: rs, end: end}
}
