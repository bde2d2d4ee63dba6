// Package density finds where a batch or a bin of rows changes from dense to
// sparse in time (Cuts), from the rows themselves (BatchCuts) or from the
// time-bucket footers of the inputs (FooterHistogram), so a writer can put a
// sparse tail of late rows in files of its own (docs/compaction.md, "Late
// rows"). Pure: no I/O.
package density
