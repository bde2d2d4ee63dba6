package maintain

import (
	"testing"

	"github.com/siglake/siglake/sidecar/plan"
)

// TestSplitSparseFor: a bin that asks for size cuts only (a closing merge, the restricted
// backpressure pass) is rewritten without density cuts; every other bin with the configured ones.
func TestSplitSparseFor(t *testing.T) {
	if got := splitSparseFor(plan.Bin{}, 0.05); got != 0.05 {
		t.Fatalf("plain bin: %v, want 0.05", got)
	}
	if got := splitSparseFor(plan.Bin{SizeCutsOnly: true}, 0.05); got != 0 {
		t.Fatalf("size cuts only: %v, want 0", got)
	}
}
