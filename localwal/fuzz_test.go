package localwal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/siglake/siglake/localwal/internal/ipcmsg"
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
		rec := gen.Batch(mem, n)
		seeds = append(seeds, rawSegment(tb, logSchema, nil, rec))
		rec.Release()
	}
	// Two batches, zstd-compressed, as the Writer makes them.
	_, zstd := validSegmentAs(tb, compressionZstd, 2, 5)
	_, plain := validSegmentAs(tb, compressionNone, 1, 3)
	seeds = append(seeds, zstd, plain)
	// Version 2 (with the checksum trailer), and the same with a flipped bit.
	rec := gen.Batch(mem, 4)
	v2 := AppendChecksum(rawSegment(tb, logSchema, map[string]string{KeyVersion: FormatVersion}, rec))
	rec.Release()
	flipped := slices.Clone(v2)
	flipped[len(flipped)/2] ^= 0x10
	seeds = append(seeds, v2, flipped)
	base := seeds[0]
	seeds = append(seeds,
		base[:len(base)-8], // no end-of-stream marker
		base[:len(base)/2], // cut mid-batch
		append(slices.Clone(base), 1, 2, 3, 4, 5, 6, 7, 8), // trailing bytes
		rawSegment(tb, logSchema, map[string]string{KeyVersion: "3"}),
		dictSegment(tb),
		// A buffer running 8 bytes past its body: the in-place reader
		// rejects it, the copying one accepts it (see sameAsCopying).
		shortenLastBody(tb, plain, 8),
	)
	return seeds
}

// validSegmentAs is validSegment renamed to testName: the Writer's clock
// is set so its incarnation is 1.
func validSegmentAs(tb testing.TB, comp compression, batches, rows int) (string, []byte) {
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
	if comp == compressionZstd {
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

func (c copyingMessages) Offset() int64 { return c.src.n }

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

// arrowValidate is Arrow's own full validation, the oracle recordcheck.Full
// must agree with (a panic inside it is a rejection, as in recordcheck.Full).
func arrowValidate(rec arrow.RecordBatch) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("arrow validation panicked: %v", p)
		}
	}()
	return array.ValidateRecordFull(rec)
}

// checkSameAsCopying decodes data again through Arrow's copying reader and
// Arrow's own full validation, and fails unless both accept it with equal
// records or both reject it.
func checkSameAsCopying(t *testing.T, data []byte, seg *Segment, err error) {
	t.Helper()
	if e := sameAsCopying(data, seg, err); e != nil {
		t.Fatal(e)
	}
}

// sameAsCopying is the oracle behind checkSameAsCopying. The reasons may
// differ in one place: a body longer than the file is truncation to the in-place
// reader, while the copying one may trip the decode budget first allocating it.
// And the verdicts may differ in one: the copying reader allocates bodies
// rounded up to 64 bytes, so it accepts a buffer that runs past the end of its
// body into that slack, while the in-place reader caps each body at its length
// and rightly rejects it.
func sameAsCopying(data []byte, seg *Segment, err error) error {
	ref, _, rerr := decodeFrom(testName, data, ReadOptions{MaxDecodedBytes: 16 << 20}, false, newCopyingMessages, arrowValidate)
	if rerr == nil {
		defer ref.Release()
	}
	switch {
	case err != nil && rerr == nil && bufferPastBody(data):
		return nil
	case (err == nil) != (rerr == nil):
		return fmt.Errorf("in place: %v; copying reader: %v", err, rerr)
	case err != nil:
		return nil
	}
	if seg.Header != ref.Header || seg.Rows != ref.Rows || len(seg.Records) != len(ref.Records) {
		return fmt.Errorf("in place decoded %+v (%d rows in %d records), copying reader %+v (%d rows in %d records)",
			seg.Header, seg.Rows, len(seg.Records), ref.Header, ref.Rows, len(ref.Records))
	}
	for i := range seg.Records {
		if !array.RecordEqual(seg.Records[i], ref.Records[i]) {
			return fmt.Errorf("record %d differs between in-place and copying decoding", i)
		}
	}
	return nil
}

// ipcMessage is one framed message of a stream: where its metadata and
// body lie in the data.
type ipcMessage struct {
	metaPos, metaLen int
	bodyPos          int
	bodyLen          int64
}

// ipcMessages walks the framing of data up to the end-of-stream marker or
// the first message that does not fit.
func ipcMessages(data []byte) []ipcMessage {
	var out []ipcMessage
	pos := 0
	for len(data)-pos >= 4 {
		n := binary.LittleEndian.Uint32(data[pos:])
		pos += 4
		if n == 0xFFFFFFFF {
			if len(data)-pos < 4 {
				break
			}
			n = binary.LittleEndian.Uint32(data[pos:])
			pos += 4
		}
		if n == 0 || int32(n) < 0 || uint64(len(data)-pos) < uint64(n) {
			break
		}
		bodyLen, err := ipcmsg.CheckMessage(data[pos : pos+int(n)])
		if err != nil {
			break
		}
		m := ipcMessage{metaPos: pos, metaLen: int(n), bodyPos: pos + int(n), bodyLen: bodyLen}
		out = append(out, m)
		if bodyLen < 0 || uint64(bodyLen) > uint64(len(data)-m.bodyPos) {
			break
		}
		pos = m.bodyPos + int(bodyLen)
	}
	return out
}

// bufferPastBody reports whether a record or dictionary batch of data has
// a buffer whose offset+length exceeds its message's body length.
func bufferPastBody(data []byte) bool {
	for _, m := range ipcMessages(data) {
		l, ok := ipcmsg.Describe(data[m.metaPos : m.metaPos+m.metaLen])
		if !ok {
			continue
		}
		for _, b := range l.Buffers {
			if b.Offset < 0 || b.Length < 0 || b.Offset > m.bodyLen || b.Length > m.bodyLen-b.Offset {
				return true
			}
		}
	}
	return false
}

// shortenLastBody is data with the last message's bodyLength lowered by k
// and the last k bytes of its body dropped, so its last buffers run past the
// body into what the copying reader's 64-byte rounding leaves as slack.
func shortenLastBody(tb testing.TB, data []byte, k int) []byte {
	tb.Helper()
	msgs := ipcMessages(data)
	if len(msgs) == 0 {
		tb.Fatal("no messages")
	}
	m := msgs[len(msgs)-1]
	l, ok := ipcmsg.Describe(data[m.metaPos : m.metaPos+m.metaLen])
	p := l.BodyLengthAt
	if !ok || p < 0 || m.bodyLen < int64(k) {
		tb.Fatalf("last message has no body of %d bytes", k)
	}
	out := slices.Clone(data)
	binary.LittleEndian.PutUint64(out[m.metaPos+p:], uint64(m.bodyLen-int64(k)))
	end := m.bodyPos + int(m.bodyLen)
	return append(out[:end-k], out[end:]...)
}

// dictSegment is a valid segment for testName whose level column is
// dictionary-encoded, as other Arrow producers may write it.
func dictSegment(tb testing.TB) []byte {
	tb.Helper()
	mem := memory.DefaultAllocator
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "level", Type: dictType},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i, lvl := range []string{"info", "warn", "info", "error"} {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(i))
		if err := b.Field(1).(*array.BinaryDictionaryBuilder).AppendString(lvl); err != nil {
			tb.Fatal(err)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return rawSegment(tb, schema, nil, rec, rec)
}

// TestOracleBufferPastBody is the reviewer's repro: the last batch's
// bodyLength shortened by 8 and 8 body bytes dropped. The in-place reader
// rejects it, Arrow's copying reader accepts it, and the oracle must call
// that agreement rather than a fuzz failure.
func TestOracleBufferPastBody(t *testing.T) {
	_, plain := validSegmentAs(t, compressionNone, 2, 3)
	data := shortenLastBody(t, plain, 8)
	if !bufferPastBody(data) {
		t.Fatal("repro has no buffer past its body")
	}
	if bufferPastBody(plain) {
		t.Fatal("valid segment reported as having a buffer past its body")
	}
	seg, err := Decode(testName, data, ReadOptions{MaxDecodedBytes: 16 << 20})
	if err == nil {
		seg.Release()
		t.Fatal("in-place reader accepted a buffer past its body")
	}
	if e := sameAsCopying(data, seg, err); e != nil {
		t.Fatalf("oracle reports a false failure: %v", e)
	}
}

// TestDecodeMisalignedBody covers the copy branch of ipcmsg.InPlace: a
// segment whose bytes start at an odd address decodes to the same records
// as an aligned copy, and none of its buffers alias the misaligned bytes.
func TestDecodeMisalignedBody(t *testing.T) {
	_, plain := validSegmentAs(t, compressionNone, 2, 20)
	buf := make([]byte, len(plain)+1)
	data := buf[1:]
	copy(data, plain)
	want, err := Decode(testName, plain, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer want.Release()
	got, err := Decode(testName, data, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if len(got.Records) != len(want.Records) {
		t.Fatalf("%d records, want %d", len(got.Records), len(want.Records))
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	hi := lo + uintptr(len(data))
	for i := range got.Records {
		if !array.RecordEqual(got.Records[i], want.Records[i]) {
			t.Fatalf("record %d differs from the aligned decoding", i)
		}
		for _, c := range got.Records[i].Columns() {
			for _, b := range c.Data().Buffers() {
				if b == nil || b.Len() == 0 {
					continue
				}
				p := uintptr(unsafe.Pointer(unsafe.SliceData(b.Bytes())))
				if p >= lo && p < hi {
					t.Fatalf("record %d has a buffer aliasing the misaligned bytes", i)
				}
				if p%8 != 0 {
					t.Fatalf("record %d has a misaligned buffer", i)
				}
			}
		}
	}
}
