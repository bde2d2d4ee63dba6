package drain

import (
	"fmt"

	"github.com/siglake/siglake/localwal"
)

// batchMemoryFactor is what a batch holds at its peak per byte of decoded segments: the segments
// decoded (in place for uncompressed ones: about their file size), the write's sort order,
// gathered chunk and encoded row group on top. The drain benchmark's batches peaked at 1.7 times
// their size in live heap.
const batchMemoryFactor = 2

// BatchMemory is the share of the process memory budget a batch of segBytes takes, whose
// compressed bodies decode to extra more bytes (localwal.DecodedSize): a compressed segment's
// records are allocated beside its file bytes, so sizing by the file alone under-reserves it.
func BatchMemory(segBytes, extra int64) int64 { return batchMemoryFactor * (segBytes + extra) }

// fitBudget cuts the batch to what the memory budget holds and sets its share (BatchMemory of its
// segments, from their IPC metadata; a segment whose metadata cannot be read counts by its file
// size, and the read reports it). The reservation is capped at the budget, so a segment whose
// share alone is above it would be decoded past the budget (a small zstd segment of repeated
// values can decode to gigabytes): it is quarantined as oversize without reading its body. The
// segments after the first that does not fit beside the others wait for a later batch.
func (d *Drain) fitBudget(c *batchCommit) {
	b, limit := c.b, d.MemoryLimit
	var share, bytes int64
	kept := b.Segs[:0:0]
	for _, s := range b.Segs {
		extra, err := localwal.DecodedSize(s.Path)
		if err != nil {
			extra = 0
		}
		need := BatchMemory(s.Size, extra)
		if limit > 0 && need > limit {
			c.quarantine(d, s, localwal.ReasonOversize, fmt.Errorf(
				"%d bytes on disk decode to %d more, a batch share of %d bytes, above the process memory budget of %d bytes (--memory-budget-bytes / SIGLAKE_MEMORY_BUDGET_BYTES); not read",
				s.Size, extra, need, limit))
			continue
		}
		if limit > 0 && len(kept) > 0 && share+need > limit {
			break // in order: a later segment must not commit (move the mark) before this one
		}
		kept = append(kept, s)
		share += need
		bytes += s.Size
	}
	c.b.Segs, c.b.Bytes, c.share = kept, bytes, share
}
