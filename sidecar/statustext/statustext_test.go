package statustext

import (
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/drain"
)

// TestStatusShowsCatalogNotWritable: a catalog that answers reads but refused the last commit is
// not shown as ready.
func TestStatusShowsCatalogNotWritable(t *testing.T) {
	var b strings.Builder
	now := time.Now()
	Write(&b, sidecar.StatusReport{Node: "n", StartedAt: now, Now: now, CatalogReady: true,
		CatalogWriteError: "catalog refuses commits: database or disk is full"})
	if !strings.Contains(b.String(), "catalog  NOT WRITABLE: catalog refuses commits: database or disk is full") {
		t.Fatalf("status:\n%s", b.String())
	}
}

// TestStatusShowsUncleanStop: a start that found batches the previous run left in flight says so
// in `siglake status`, not only in the log and /debug/status.
func TestStatusShowsUncleanStop(t *testing.T) {
	var b strings.Builder
	now := time.Now()
	Write(&b, sidecar.StatusReport{Node: "n", StartedAt: now, Now: now, CatalogReady: true,
		UncleanStop: &drain.UncleanStop{DetectedAt: now, LeftForGC: 3, Batches: []drain.InterruptedBatch{{Table: "events", FilesWritten: 3, LeftForGC: 3}}}})
	if !strings.Contains(b.String(), "UNCLEAN STOP  the previous run was killed mid-batch") || !strings.Contains(b.String(), "1 batch(es) in flight (events)") ||
		!strings.Contains(b.String(), "3 uncommitted data file(s) left for siglake gc") {
		t.Fatalf("status:\n%s", b.String())
	}
}
