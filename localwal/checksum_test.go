package localwal

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// TestChecksumCatchesFlippedBit flips one bit inside a string value of a
// Writer-made segment. Arrow's validation cannot see it (the value stays
// valid UTF-8), so without the trailer the segment would decode and its
// changed row be committed.
func TestChecksumCatchesFlippedBit(t *testing.T) {
	for _, comp := range []compression{compressionNone, compressionZstd} {
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
		if comp == compressionNone {
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
	name, data := validSegment(t, compressionNone, 1, 50)
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
	name, data := validSegment(t, compressionNone, 3, 10)
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
