package main

import (
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar"
)

// TestStatusShowsCatalogNotWritable: a catalog that answers reads but refused the last commit is
// not shown as ready.
func TestStatusShowsCatalogNotWritable(t *testing.T) {
	var b strings.Builder
	now := time.Now()
	printStatus(&b, sidecar.StatusReport{Node: "n", StartedAt: now, Now: now, CatalogReady: true,
		CatalogWriteError: "catalog refuses commits: database or disk is full"})
	if !strings.Contains(b.String(), "catalog  NOT WRITABLE: catalog refuses commits: database or disk is full") {
		t.Fatalf("status:\n%s", b.String())
	}
}
