package output

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/siglake/siglake/sidecar/walgen"
)

// TestTableStreams: the table format prints while rows come, not all at Close, and keeps the
// first block's alignment after it.
func TestTableStreams(t *testing.T) {
	g := walgen.New(walgen.Options{Seed: 6})
	rec := g.Batch(memory.DefaultAllocator, time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), 10_000, time.Millisecond)
	defer rec.Release()
	var out bytes.Buffer
	cols := []string{"timestamp", "service", "severity"}
	w, err := NewWriter(&out, "table", cols)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		if _, err := w.Row(rec, i); err != nil {
			t.Fatal(err)
		}
	}
	before := out.Len()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if before == 0 || before < out.Len()/2 {
		t.Fatalf("%d of %d bytes written before Close", before, out.Len())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 10_001 {
		t.Fatalf("%d lines, want a header and 10000 rows", len(lines))
	}
	col := strings.Index(lines[0], "service")
	for _, l := range []string{lines[1], lines[5000], lines[10_000]} {
		if l[col-2:col] != "  " || l[col] == ' ' {
			t.Fatalf("line %q: service not at column %d of the header %q", l, col, lines[0])
		}
	}
}
