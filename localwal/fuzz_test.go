package localwal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// FuzzReadSegment feeds arbitrary bytes to the decoder as the content of
// testName. The reader must never panic, and must either return rows or a
// *SegmentError with a known reason. Seeds: testdata/fuzz/FuzzReadSegment
// (written by TestWriteFuzzCorpus) plus segments generated here.
func FuzzReadSegment(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The head alone (the WAL buffer's first look) must not panic either, and whatever
		// ReadAll accepts it accepts with the same header.
		hdr, _, herr := ReadHead(testName, bytes.NewReader(data))
		var hse *SegmentError
		if herr != nil && (!errors.As(herr, &hse) || !slices.Contains(Reasons, hse.Reason) || hse.Reason == ReasonIO) {
			t.Fatalf("head: unexpected error %T: %v", herr, herr)
		}
		// A small budget keeps the fuzzer fast; the logic is the same.
		seg, err := Decode(testName, data, ReadOptions{MaxDecodedBytes: 16 << 20})
		// Decoding in place must accept exactly what Arrow's copying
		// reader accepts, with the same rows.
		checkSameAsCopying(t, data, seg, err)
		if err == nil && (herr != nil || hdr != seg.Header) {
			t.Fatalf("ReadAll accepts a segment whose head fails (%v) or differs (%+v, %+v)", herr, hdr, seg.Header)
		}
		if err == nil {
			defer seg.Release()
			if seg.Rows <= 0 || len(seg.Records) == 0 {
				t.Fatalf("accepted a segment with %d rows", seg.Rows)
			}
			if CheckSchema(seg.Schema) != nil || seg.Header.Table != "logs" || seg.Header.Seq != 1 {
				t.Fatalf("accepted a segment with a bad schema or header: %+v", seg.Header)
			}
			var rows int64
			for _, r := range seg.Records {
				rows += r.NumRows()
				// Touch every value: validated records must be safe to read.
				for _, c := range r.Columns() {
					for i := 0; i < c.Len(); i++ {
						_ = c.ValueStr(i)
					}
				}
			}
			if rows != seg.Rows {
				t.Fatalf("Rows %d, records hold %d", seg.Rows, rows)
			}
			return
		}
		var se *SegmentError
		if !errors.As(err, &se) {
			t.Fatalf("untyped error %T: %v", err, err)
		}
		if !slices.Contains(Reasons, se.Reason) || se.Reason == ReasonIO {
			t.Fatalf("unexpected reason %q: %v", se.Reason, err)
		}
	})
}

// fuzzSeeds returns valid segments for testName (header incarnation 1,
// seq 1) and a few mutations of them.
func fuzzSeeds(tb testing.TB) [][]byte {
	mem := memory.DefaultAllocator
	gen := newLogGen(11, t0)
	var seeds [][]byte
	for _, n := range []int{1, 7} {
		rec := gen.batch(mem, n)
		seeds = append(seeds, rawSegment(tb, logSchema, nil, rec))
		rec.Release()
	}
	// Two batches, zstd-compressed, as the Writer makes them.
	_, zstd := validSegmentAs(tb, CompressionZstd, 2, 5)
	_, plain := validSegmentAs(tb, CompressionNone, 1, 3)
	seeds = append(seeds, zstd, plain)
	base := seeds[0]
	seeds = append(seeds,
		base[:len(base)-8], // no end-of-stream marker
		base[:len(base)/2], // cut mid-batch
		append(slices.Clone(base), 1, 2, 3, 4, 5, 6, 7, 8), // trailing bytes
		rawSegment(tb, logSchema, map[string]string{KeyVersion: "2"}),
	)
	return seeds
}

// validSegmentAs is validSegment renamed to testName: the Writer's clock
// is set so its incarnation is 1.
func validSegmentAs(tb testing.TB, comp Compression, batches, rows int) (string, []byte) {
	name, data := validSegment(tb, comp, batches, rows)
	if name != SegmentName("logs", uint64(t0.UnixNano()), 1) {
		tb.Fatalf("unexpected writer segment name %s", name)
	}
	// Rewrite the header to incarnation 1 by re-encoding the records.
	seg, err := Decode(name, data, ReadOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	defer seg.Release()
	var opts []ipc.Option
	if comp == CompressionZstd {
		opts = append(opts, ipc.WithZstd())
	}
	return testName, rawSegmentWith(tb, opts, logSchema, nil, seg.Records...)
}

// TestWriteFuzzCorpus regenerates testdata/fuzz/FuzzReadSegment when
// SIGLAKE_WRITE_FUZZ_CORPUS=1; otherwise it checks the committed seeds
// still decode the way they did.
func TestWriteFuzzCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzReadSegment")
	if os.Getenv("SIGLAKE_WRITE_FUZZ_CORPUS") == "1" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, seed := range fuzzSeeds(t) {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", seed)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		t.Fatalf("no fuzz corpus in %s (%v); run with SIGLAKE_WRITE_FUZZ_CORPUS=1", dir, err)
	}
}

// copyingMessages is Arrow's own stream reader over the segment's bytes
// (bodies copied into allocated buffers), the reference the in-place reader
// is checked against.
type copyingMessages struct {
	ipc.MessageReader
	src *countingReader
}

func (c copyingMessages) offset() int64 { return c.src.n }

func newCopyingMessages(data []byte, mem memory.Allocator) messageSource {
	src := &countingReader{r: bytes.NewReader(data)}
	return copyingMessages{src: src, MessageReader: ipc.NewMessageReader(src, ipc.WithAllocator(mem),
		ipc.WithMetadataSizeLimit(MaxMetadataBytes))}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// checkSameAsCopying decodes data again through Arrow's copying reader and
// fails unless both accept it with equal records or both reject it. (The
// reasons may differ in one place: a body longer than the file is
// truncation to the in-place reader, while the copying one may trip the
// decode budget first allocating it.)
func checkSameAsCopying(t *testing.T, data []byte, seg *Segment, err error) {
	t.Helper()
	ref, _, rerr := decodeFrom(testName, data, ReadOptions{MaxDecodedBytes: 16 << 20}, false, newCopyingMessages)
	switch {
	case (err == nil) != (rerr == nil):
		t.Fatalf("in place: %v; copying reader: %v", err, rerr)
	case err != nil:
		return
	}
	defer ref.Release()
	if seg.Header != ref.Header || seg.Rows != ref.Rows || len(seg.Records) != len(ref.Records) {
		t.Fatalf("in place decoded %+v (%d rows in %d records), copying reader %+v (%d rows in %d records)",
			seg.Header, seg.Rows, len(seg.Records), ref.Header, ref.Rows, len(ref.Records))
	}
	for i := range seg.Records {
		if !array.RecordEqual(seg.Records[i], ref.Records[i]) {
			t.Fatalf("record %d differs between in-place and copying decoding", i)
		}
	}
}
