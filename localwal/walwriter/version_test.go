package walwriter

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/siglake/siglake/localwal"
)

// TestWriterVersion1: FormatVersion 1 writes what a drain older than version 2 reads: the header
// says version 1 and the stream ends at its end-of-stream marker, with no trailer; sealed by
// Close and by crash recovery alike. Other versions are refused.
func TestWriterVersion1(t *testing.T) {
	for _, crash := range []bool{false, true} {
		dir := t.TempDir()
		w, err := New(dir, Options{Stream: "ingest-0", FormatVersion: 1})
		if err != nil {
			t.Fatal(err)
		}
		rec := newLogGen(7, t0).Batch(memory.DefaultAllocator, 20)
		if err := w.Append("logs", rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		if crash {
			w.mu.Lock()
			for _, seg := range w.open {
				if err := seg.flush(); err != nil {
					t.Fatal(err)
				}
				seg.f.Close()
			}
			w.mu.Unlock()
			w.unlock()
			if w, err = New(dir, Options{Stream: "ingest-0", FormatVersion: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		segs, err := localwal.Scan(dir)
		if err != nil || len(segs) != 1 {
			t.Fatalf("crash %v: %v %v", crash, segs, err)
		}
		seg, err := localwal.ReadAll(segs[0].Path, localwal.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if seg.Header.Version != 1 || seg.Rows != 20 || seg.Schema.Metadata().Values()[seg.Schema.Metadata().FindKey(localwal.KeyVersion)] != localwal.FormatVersion1 {
			t.Fatalf("crash %v: version %d, %d rows", crash, seg.Header.Version, seg.Rows)
		}
		seg.Release()
		data, _ := os.ReadFile(segs[0].Path)
		if !bytes.HasSuffix(data, []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}) {
			t.Fatalf("crash %v: a version 1 segment ends with %x, want the end-of-stream marker", crash, data[len(data)-12:])
		}
	}
	if _, err := New(t.TempDir(), Options{Stream: "ingest-0", FormatVersion: 3}); err == nil || !strings.Contains(err.Error(), "accepted: 1 or 2") {
		t.Fatalf("version 3: %v", err)
	}
}

// TestRecoverOversize: crash recovery does not read an .open file above its limit (it is read
// whole): it quarantines it as oversize, and a normal one beside it is still sealed.
func TestRecoverOversize(t *testing.T) {
	dir := t.TempDir()
	w, err := New(dir, Options{Stream: "ingest-0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, openName("logs", 1, 1))
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil { // sparse
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rs, err := localwal.RecoverLimit(dir, 64<<20)
	runtime.ReadMemStats(&after)
	if err != nil || len(rs) != 1 || rs[0].Action != "quarantined" || rs[0].Reason != localwal.ReasonOversize {
		t.Fatalf("recovered %+v %v, want the 1 GiB file quarantined as oversize", rs, err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("recovery allocated %d bytes: the oversize file was read", n)
	}
	if _, err := os.Stat(filepath.Join(dir, localwal.QuarantineDir, filepath.Base(big))); err != nil {
		t.Fatalf("not in quarantine: %v", err)
	}
}
