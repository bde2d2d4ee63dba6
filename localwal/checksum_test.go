package localwal

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestChecksumCatchesFlippedBit flips one bit inside a string value of a
// Writer-made segment. Arrow's validation cannot see it (the value stays
// valid UTF-8), so without the trailer the segment would decode and its
// changed row be committed.
func TestChecksumCatchesFlippedBit(t *testing.T) {
	for _, comp := range []Compression{CompressionNone, CompressionZstd} {
		name, data := validSegment(t, comp, 2, 20)
		if !bytes.HasSuffix(data, []byte(TrailerMagic)) {
			t.Fatalf("%s: the Writer wrote no checksum trailer", comp)
		}
		seg, err := Decode(name, data, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if seg.Header.Version != 2 {
			t.Fatalf("%s: header version %d, want 2", comp, seg.Header.Version)
		}
		seg.Release()
		var bad []byte
		if comp == CompressionNone {
			// A message word is lower-case ASCII: flipping bit 5 makes it upper case, still UTF-8.
			bad = bytes.Clone(data)
			i := bytes.Index(bad, []byte("request"))
			if i < 0 {
				t.Fatal("no string value to flip")
			}
			bad[i] ^= 0x20
			// With a CRC recomputed over the flipped bytes the segment decodes: Arrow's
			// validation alone cannot tell, only the checksum can.
			body, _, _ := splitTrailer(bad)
			if seg, err := Decode(name, AppendChecksum(bytes.Clone(body)), ReadOptions{}); err != nil {
				t.Fatalf("the flipped value should be valid Arrow: %v", err)
			} else {
				seg.Release()
			}
		} else {
			bad = bytes.Clone(data)
			bad[len(bad)/2] ^= 0x01
		}
		wantReason(t, name, bad, ReadOptions{}, ReasonChecksum)
		// A flipped bit in the trailer's CRC is a mismatch too.
		bad = bytes.Clone(data)
		bad[len(bad)-TrailerSize] ^= 0x80
		wantReason(t, name, bad, ReadOptions{}, ReasonChecksum)
	}
}

// TestReadsVersion1Segments reads a segment the Writer wrote before version 2
// (testdata/v1, kept as it was): producers of version 1 keep working.
func TestReadsVersion1Segments(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "v1", "*.wal"))
	if len(paths) == 0 {
		t.Fatal("no version 1 segments in testdata/v1")
	}
	for _, p := range paths {
		seg, err := ReadAll(p, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if seg.Header.Version != 1 || seg.Rows != 10 || seg.Header.Stream != "ingest-0" {
			t.Fatalf("%s: version %d, %d rows, stream %q", p, seg.Header.Version, seg.Rows, seg.Header.Stream)
		}
		seg.Release()
		data, _ := os.ReadFile(p)
		// A version 1 segment with a trailer appended is not a valid anything.
		wantReason(t, filepath.Base(p), AppendChecksum(data), ReadOptions{}, ReasonCorrupt)
	}
}

// TestVersion2WithoutTrailer: a version 2 stream cut right after its
// end-of-stream marker, or inside its trailer, is truncated.
func TestVersion2WithoutTrailer(t *testing.T) {
	rec := jsonBatch(t, logSchema, `[{"timestamp": 1, "level": "info", "service": "api", "host": "h", "message": "m"}]`)
	defer rec.Release()
	stream := rawSegment(t, logSchema, map[string]string{KeyVersion: FormatVersion}, rec)
	full := AppendChecksum(bytes.Clone(stream))
	seg, err := Decode(testName, full, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := seg.Records[0].Column(7).(*array.String).Value(0); got != "m" {
		t.Fatalf("message %q", got)
	}
	seg.Release()
	for n := len(stream); n < len(full); n++ {
		se := wantReason(t, testName, full[:n], ReadOptions{}, ReasonTruncated)
		if !strings.Contains(se.Error(), "trailer") {
			t.Fatalf("cut at %d: %v", n, se)
		}
	}
}

// TestReadAllOversize: a file above MaxFileBytes is refused as oversize
// from its size, before it is read.
func TestReadAllOversize(t *testing.T) {
	name, data := validSegment(t, CompressionNone, 1, 50)
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if seg, err := ReadAll(path, ReadOptions{MaxFileBytes: int64(len(data))}); err != nil {
		t.Fatalf("a file at the limit: %v", err)
	} else {
		seg.Release()
	}
	// A sparse file of 1 GiB: reading it whole would allocate 1 GiB.
	big := filepath.Join(t.TempDir(), name)
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Refused from its size, before a byte is read or a buffer sized for it is allocated.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = ReadAll(big, ReadOptions{MaxFileBytes: 64 << 20})
	runtime.ReadMemStats(&after)
	if !isReason(err, ReasonOversize) {
		t.Fatalf("1 GiB file: %v, want oversize", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("refusing the 1 GiB file allocated %d bytes: it was read", n)
	}
}

// TestRecoverChecksum: crash recovery seals a version 2 .open segment with a
// trailer that verifies, both when it cuts a torn batch and when the writer
// died after the trailer but before the rename.
func TestRecoverChecksum(t *testing.T) {
	name, data := validSegment(t, CompressionNone, 3, 10)
	open := strings.TrimSuffix(name, SealedSuffix) + OpenSuffix
	for _, c := range []struct {
		what  string
		bytes []byte
		rows  int64
	}{
		{"whole, trailer written", data, 30},
		{"torn last batch", data[:len(data)-TrailerSize-8-5], 20},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, open), c.bytes, 0o644); err != nil {
			t.Fatal(err)
		}
		rs, err := Recover(dir)
		if err != nil || len(rs) != 1 || rs[0].Action != "sealed" {
			t.Fatalf("%s: %+v %v", c.what, rs, err)
		}
		seg, err := ReadAll(rs[0].NewPath, ReadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if seg.Rows != c.rows || seg.Header.Version != 2 {
			t.Fatalf("%s: %d rows, version %d", c.what, seg.Rows, seg.Header.Version)
		}
		seg.Release()
	}
}

// TestChecksumIsCRC32C pins the polynomial docs/wal-format.md names: the
// standard check value of CRC32C (Castagnoli).
func TestChecksumIsCRC32C(t *testing.T) {
	if got := Checksum([]byte("123456789")); got != 0xE3069283 {
		t.Fatalf("CRC of 123456789 is %08x, want e3069283 (CRC32C)", got)
	}
}

// TestWriterVersion1: FormatVersion 1 writes what a drain older than version 2 reads: the header
// says version 1 and the stream ends at its end-of-stream marker, with no trailer; sealed by
// Close and by crash recovery alike. Other versions are refused.
func TestWriterVersion1(t *testing.T) {
	for _, crash := range []bool{false, true} {
		dir := t.TempDir()
		w, err := NewWriter(dir, WriterOptions{Stream: "ingest-0", FormatVersion: 1})
		if err != nil {
			t.Fatal(err)
		}
		rec := newLogGen(7, t0).batch(memory.DefaultAllocator, 20)
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
			if w, err = NewWriter(dir, WriterOptions{Stream: "ingest-0", FormatVersion: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		segs, err := Scan(dir)
		if err != nil || len(segs) != 1 {
			t.Fatalf("crash %v: %v %v", crash, segs, err)
		}
		seg, err := ReadAll(segs[0].Path, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if seg.Header.Version != 1 || seg.Rows != 20 || seg.Schema.Metadata().Values()[seg.Schema.Metadata().FindKey(KeyVersion)] != FormatVersion1 {
			t.Fatalf("crash %v: version %d, %d rows", crash, seg.Header.Version, seg.Rows)
		}
		seg.Release()
		data, _ := os.ReadFile(segs[0].Path)
		if !bytes.HasSuffix(data, endOfStream) {
			t.Fatalf("crash %v: a version 1 segment ends with %x, want the end-of-stream marker", crash, data[len(data)-12:])
		}
	}
	if _, err := NewWriter(t.TempDir(), WriterOptions{Stream: "ingest-0", FormatVersion: 3}); err == nil || !strings.Contains(err.Error(), "accepted: 1 or 2") {
		t.Fatalf("version 3: %v", err)
	}
}

// TestRecoverOversize: crash recovery does not read an .open file above its limit (it is read
// whole): it quarantines it as oversize, and a normal one beside it is still sealed.
func TestRecoverOversize(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, WriterOptions{Stream: "ingest-0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, segmentStem("logs", 1, 1)+OpenSuffix)
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
	rs, err := RecoverLimit(dir, 64<<20)
	runtime.ReadMemStats(&after)
	if err != nil || len(rs) != 1 || rs[0].Action != "quarantined" || rs[0].Reason != ReasonOversize {
		t.Fatalf("recovered %+v %v, want the 1 GiB file quarantined as oversize", rs, err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("recovery allocated %d bytes: the oversize file was read", n)
	}
	if _, err := os.Stat(filepath.Join(dir, QuarantineDir, filepath.Base(big))); err != nil {
		t.Fatalf("not in quarantine: %v", err)
	}
}
