package localwal

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// testName is the file name the hand-made segments below are valid for.
var testName = SegmentName("logs", 1, 1)

// rawSegment encodes recs as an Arrow IPC stream with a valid header for
// testName, changed by over (an empty value deletes the key). It bypasses
// the Writer so tests can build files the Writer would refuse to write.
func rawSegment(t testing.TB, schema *arrow.Schema, over map[string]string, recs ...arrow.RecordBatch) []byte {
	t.Helper()
	return rawSegmentWith(t, nil, schema, over, recs...)
}

// rawSegmentWith is rawSegment with extra IPC writer options.
func rawSegmentWith(t testing.TB, opts []ipc.Option, schema *arrow.Schema, over map[string]string, recs ...arrow.RecordBatch) []byte {
	t.Helper()
	hdr := map[string]string{
		KeyVersion: "1", KeyTable: "logs", KeyStream: "ingest-0",
		KeyIncarnation: "1", KeySeq: "1", KeyCreated: strconv.FormatInt(t0.UnixMilli(), 10),
	}
	for k, v := range over {
		if v == "" {
			delete(hdr, k)
		} else {
			hdr[k] = v
		}
	}
	var keys, vals []string
	for _, k := range slices.Sorted(maps.Keys(hdr)) {
		keys, vals = append(keys, k), append(vals, hdr[k])
	}
	md := arrow.NewMetadata(keys, vals)
	schema = arrow.NewSchema(schema.Fields(), &md)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, append([]ipc.Option{ipc.WithSchema(schema)}, opts...)...)
	for _, r := range recs {
		r2 := array.NewRecordBatch(schema, r.Columns(), r.NumRows())
		if err := w.Write(r2); err != nil {
			t.Fatal(err)
		}
		r2.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func jsonBatch(t testing.TB, schema *arrow.Schema, js string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// compression is the body compression of a test segment.
type compression string

const (
	compressionNone compression = "none"
	compressionZstd compression = "zstd"
)

// validSegment is a segment as the Writer writes it (walwriter's tests read
// what it really writes) and its file name: the Writer's header for a fresh
// directory with its clock at t0, one batch per Append, the checksum trailer.
func validSegment(t testing.TB, comp compression, batches, rows int) (string, []byte) {
	t.Helper()
	hdr := Header{Table: "logs", Stream: "ingest-0", Incarnation: uint64(t0.UnixNano()), Seq: 1, Created: t0, Version: 2}
	md := hdr.Metadata()
	schema := arrow.NewSchema(logSchema.Fields(), &md)
	opts := []ipc.Option{ipc.WithSchema(schema), ipc.WithAllocator(memory.DefaultAllocator)}
	if comp == compressionZstd {
		opts = append(opts, ipc.WithZstd())
	}
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, opts...)
	gen := newLogGen(7, t0)
	for i := 0; i < batches; i++ {
		rec := gen.Batch(memory.DefaultAllocator, rows)
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return SegmentName(hdr.Table, hdr.Incarnation, hdr.Seq), AppendChecksum(buf.Bytes())
}

// wantReason decodes data as name and checks the rejection, including
// that no decoded buffer leaked on the error path.
func wantReason(t *testing.T, name string, data []byte, opts ReadOptions, reasons ...string) *SegmentError {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	opts.Mem = mem
	seg, err := Decode(name, data, opts)
	if err == nil {
		seg.Release()
		t.Fatalf("accepted; want %v", reasons)
	}
	var se *SegmentError
	if !errors.As(err, &se) {
		t.Fatalf("error %T %v is not a *SegmentError", err, err)
	}
	if !slices.Contains(reasons, se.Reason) {
		t.Fatalf("reason %q (%v), want one of %v", se.Reason, err, reasons)
	}
	if !strings.Contains(err.Error(), name) {
		t.Errorf("error %q does not name the file", err)
	}
	if !arrowRecovered(err) {
		mem.AssertSize(t, 0)
	}
	return se
}

// arrowRecovered reports an error Arrow's reader made from a panic in its
// own decoding. Buffers it had taken a reference to at that moment are
// never released; with the Go allocator the GC reclaims them, but a
// checked allocator counts them, so leak checks skip these errors.
func arrowRecovered(err error) bool {
	return err != nil && strings.Contains(err.Error(), "unknown error while reading")
}

func TestDecodeValid(t *testing.T) {
	for _, comp := range []compression{compressionZstd, compressionNone} {
		name, data := validSegment(t, comp, 3, 200)
		seg, err := Decode(name, data, ReadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", comp, err)
		}
		if seg.Rows != 600 || len(seg.Records) != 3 || seg.Header.Table != "logs" {
			t.Fatalf("%s: rows %d batches %d header %+v", comp, seg.Rows, len(seg.Records), seg.Header)
		}
		seg.Release()
	}
}

func TestRejectTruncated(t *testing.T) {
	for _, comp := range []compression{compressionZstd, compressionNone} {
		name, data := validSegment(t, comp, 3, 5)
		// Every cut, including those at message boundaries, where Arrow's
		// stream reader alone would report a clean end.
		for n := 1; n < len(data); n++ {
			if _, err := Decode(name, data[:n], ReadOptions{}); !isReason(err, ReasonTruncated) {
				t.Fatalf("%s cut at %d of %d bytes: %v", comp, n, len(data), err)
			}
		}
		wantReason(t, name, data[:0], ReadOptions{}, ReasonEmpty)
		// Leak checks on a sample of the error paths.
		for _, n := range []int{1, 7, len(data) / 3, len(data) / 2, len(data) - 9, len(data) - 1} {
			wantReason(t, name, data[:n], ReadOptions{}, ReasonTruncated)
		}
	}
}

func TestRejectRandomBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		data := make([]byte, 1+rng.IntN(4096))
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		if i%2 == 0 { // also look like an Arrow message start
			copy(data, []byte{0xff, 0xff, 0xff, 0xff})
		}
		wantReason(t, testName, data, ReadOptions{}, ReasonCorrupt, ReasonTruncated)
	}
	// Flipped bytes inside a real segment: rejected or, when the flip hit
	// padding or a value, read; never a panic or a leak.
	name, data := validSegment(t, compressionNone, 2, 30)
	for i := 0; i < len(data); i += 7 {
		bad := slices.Clone(data)
		bad[i] ^= 0x5a
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		seg, err := Decode(name, bad, ReadOptions{Mem: mem})
		var se *SegmentError
		switch {
		case err == nil:
			seg.Release()
		case !errors.As(err, &se):
			t.Fatalf("flip at %d: untyped error %v", i, err)
		}
		if mem.CurrentAlloc() != 0 && !arrowRecovered(err) {
			t.Errorf("flip at %d leaked %d bytes (err %v)", i, mem.CurrentAlloc(), err)
		}
	}
}

func TestRejectTrailingBytes(t *testing.T) {
	name, data := validSegment(t, compressionZstd, 1, 10)
	wantReason(t, name, append(slices.Clone(data), 0, 0, 0, 0, 0, 0, 0, 0), ReadOptions{}, ReasonCorrupt)
}

func TestRejectEmpty(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, testName)
	os.WriteFile(path, nil, 0o644)
	if _, err := ReadAll(path, ReadOptions{}); !isReason(err, ReasonEmpty) {
		t.Fatalf("zero-byte file: %v", err)
	}
	// A well-formed stream with no batches, and one with a zero-row batch.
	wantReason(t, testName, rawSegment(t, logSchema, nil), ReadOptions{}, ReasonEmpty)
	zero := newLogGen(1, t0).Batch(memory.DefaultAllocator, 0)
	defer zero.Release()
	wantReason(t, testName, rawSegment(t, logSchema, nil, zero, zero), ReadOptions{}, ReasonEmpty)
}

func isReason(err error, reason string) bool {
	var se *SegmentError
	return errors.As(err, &se) && se.Reason == reason
}

func TestRejectHeader(t *testing.T) {
	rec := newLogGen(1, t0).Batch(memory.DefaultAllocator, 5)
	defer rec.Release()
	cases := []struct {
		name   string
		file   string
		over   map[string]string
		reason string
	}{
		{"ok", testName, nil, ""},
		{"no version", testName, map[string]string{KeyVersion: ""}, ReasonBadHeader},
		{"future version", testName, map[string]string{KeyVersion: "3"}, ReasonBadHeader},
		{"no table", testName, map[string]string{KeyTable: ""}, ReasonBadHeader},
		{"no stream", testName, map[string]string{KeyStream: ""}, ReasonBadHeader},
		{"bad stream", testName, map[string]string{KeyStream: "-pod"}, ReasonBadHeader},
		{"no incarnation", testName, map[string]string{KeyIncarnation: ""}, ReasonBadHeader},
		{"hex incarnation", testName, map[string]string{KeyIncarnation: "0x1"}, ReasonBadHeader},
		{"no seq", testName, map[string]string{KeySeq: ""}, ReasonBadHeader},
		{"negative seq", testName, map[string]string{KeySeq: "-1"}, ReasonBadHeader},
		{"no created", testName, map[string]string{KeyCreated: ""}, ReasonBadHeader},
		{"bad created", testName, map[string]string{KeyCreated: "yesterday"}, ReasonBadHeader},
		{"bad header table", testName, map[string]string{KeyTable: "Logs"}, ReasonBadTableName},
		{"bad file table", SegmentName("Logs", 1, 1), nil, ReasonBadTableName},
		{"long file table", SegmentName("a"+strings.Repeat("b", 128), 1, 1), nil, ReasonBadTableName},
		{"table mismatch", testName, map[string]string{KeyTable: "events"}, ReasonCorrupt},
		{"incarnation mismatch", testName, map[string]string{KeyIncarnation: "2"}, ReasonCorrupt},
		{"seq mismatch", testName, map[string]string{KeySeq: "2"}, ReasonCorrupt},
		{"not a segment name", "logs.wal", nil, ReasonCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := rawSegment(t, logSchema, c.over, rec)
			if c.reason == "" {
				seg, err := Decode(c.file, data, ReadOptions{})
				if err != nil {
					t.Fatal(err)
				}
				seg.Release()
				return
			}
			wantReason(t, c.file, data, ReadOptions{}, c.reason)
		})
	}
}

func TestRejectSchema(t *testing.T) {
	ts := func(unit arrow.TimeUnit, tz string) arrow.DataType {
		return &arrow.TimestampType{Unit: unit, TimeZone: tz}
	}
	cases := []struct {
		name string
		typ  arrow.DataType // of the "timestamp" column; nil = no such column
		ok   bool
	}{
		{"seconds no tz", ts(arrow.Second, ""), true},
		{"nanos UTC", ts(arrow.Nanosecond, "UTC"), true},
		{"no timestamp column", nil, false},
		{"int64 timestamp", arrow.PrimitiveTypes.Int64, false},
		{"string timestamp", arrow.BinaryTypes.String, false},
		{"local time zone", ts(arrow.Millisecond, "Europe/Berlin"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fields := []arrow.Field{{Name: "msg", Type: arrow.BinaryTypes.String}}
			js := `[{"msg":"a"}]`
			if c.typ != nil {
				fields = append(fields, arrow.Field{Name: "timestamp", Type: c.typ})
				js = `[{"msg":"a","timestamp":1}]`
				if c.typ.ID() == arrow.STRING {
					js = `[{"msg":"a","timestamp":"1"}]`
				}
			}
			schema := arrow.NewSchema(fields, nil)
			rec := jsonBatch(t, schema, js)
			defer rec.Release()
			data := rawSegment(t, schema, nil, rec)
			if c.ok {
				seg, err := Decode(testName, data, ReadOptions{})
				if err != nil {
					t.Fatal(err)
				}
				seg.Release()
				return
			}
			wantReason(t, testName, data, ReadOptions{}, ReasonBadSchema)
		})
	}
	// Two timestamp columns are ambiguous.
	schema := arrow.NewSchema([]arrow.Field{{Name: "timestamp", Type: ts(arrow.Second, "")}, {Name: "timestamp", Type: ts(arrow.Second, "")}}, nil)
	rec := jsonBatch(t, schema, `[]`)
	defer rec.Release()
	wantReason(t, testName, rawSegment(t, schema, nil, rec), ReadOptions{}, ReasonBadSchema)
}

func TestRejectIO(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadAll(filepath.Join(dir, testName), ReadOptions{}); !isReason(err, ReasonIO) {
		t.Fatalf("missing file: %v", err)
	}
	os.Mkdir(filepath.Join(dir, SegmentName("logs", 1, 2)), 0o755)
	if _, err := ReadAll(filepath.Join(dir, SegmentName("logs", 1, 2)), ReadOptions{}); !isReason(err, ReasonIO) {
		t.Fatalf("directory: %v", err)
	}
}

func TestDecodeBudget(t *testing.T) {
	name, data := validSegment(t, compressionZstd, 2, 2000)
	wantReason(t, name, data, ReadOptions{MaxDecodedBytes: 64 << 10}, ReasonCorrupt)
	seg, err := Decode(name, data, ReadOptions{MaxDecodedBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	seg.Release()
}

func TestScan(t *testing.T) {
	dir := t.TempDir()
	touch := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		SegmentName("logs", 5, 9),
		SegmentName("events", 5, 10),
		SegmentName("logs", 5, 100),
		SegmentName("Bad-Table", 6, 1), // listed: the reader quarantines it
		SegmentName("logs", 7, 2),
	}
	for _, n := range []int{3, 0, 4, 2, 1} {
		touch(want[n])
	}
	for _, n := range []string{
		segmentStem("logs", 5, 11) + OpenSuffix,
		"." + SegmentName("logs", 5, 12),
		"logs.5.13.wal",
		SegmentName("logs", 5, 14) + ".tmp",
		"logs.00000000000000000005.0000000000000000001x.wal",
		"a.b." + SegmentName("logs", 5, 15),
		StreamFile, "LOCK", "README",
	} {
		touch(n)
	}
	os.MkdirAll(filepath.Join(dir, QuarantineDir), 0o755)
	os.WriteFile(filepath.Join(dir, QuarantineDir, SegmentName("logs", 1, 1)), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(dir, SegmentName("logs", 5, 16)), 0o755)

	segs, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range segs {
		got = append(got, s.Name)
		if s.Size != 1 || s.ModTime.IsZero() || s.Path != filepath.Join(dir, s.Name) {
			t.Errorf("%s: bad info %+v", s.Name, s)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Scan order\n got %v\nwant %v", got, want)
	}
	if segs[0].Table != "logs" || segs[0].Incarnation != 5 || segs[0].Seq != 9 {
		t.Fatalf("parsed %+v", segs[0])
	}
	n, bytes, oldest := Backlog(segs)
	if n != 5 || bytes != 5 || oldest.IsZero() {
		t.Fatalf("Backlog = %d, %d, %v", n, bytes, oldest)
	}
	if n, b, o := Backlog(nil); n != 0 || b != 0 || !o.IsZero() {
		t.Fatalf("Backlog(nil) = %d, %d, %v", n, b, o)
	}

	missing := filepath.Join(dir, "nope")
	if _, err := Scan(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Scan of a missing dir: %v", err)
	}
}

func TestBacklogOldest(t *testing.T) {
	old := time.Unix(100, 0)
	segs := []SegmentInfo{{Size: 10, ModTime: time.Unix(300, 0)}, {Size: 5, ModTime: old}, {Size: 1, ModTime: time.Unix(200, 0)}}
	if n, b, o := Backlog(segs); n != 3 || b != 16 || !o.Equal(old) {
		t.Fatalf("Backlog = %d, %d, %v", n, b, o)
	}
}

func TestQuarantine(t *testing.T) {
	dir := t.TempDir()
	name, data := validSegment(t, compressionZstd, 1, 10)
	path := filepath.Join(dir, name)
	os.WriteFile(path, data[:len(data)/2], 0o644)
	segs, _ := Scan(dir)
	if len(segs) != 1 {
		t.Fatalf("scan: %v", segs)
	}
	_, err := ReadAll(segs[0].Path, ReadOptions{})
	var se *SegmentError
	if !errors.As(err, &se) {
		t.Fatalf("want a SegmentError, got %v", err)
	}
	before := time.Now().Add(-time.Second)
	moved, err := Quarantine(dir, segs[0], se.Reason, se.Error())
	if err != nil {
		t.Fatal(err)
	}
	if moved != filepath.Join(dir, QuarantineDir, name) {
		t.Fatalf("moved to %s", moved)
	}
	if got, _ := os.ReadFile(moved); !bytes.Equal(got, data[:len(data)/2]) {
		t.Fatal("quarantined bytes differ")
	}
	var rf ReasonFile
	raw, err := os.ReadFile(moved + ReasonSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &rf); err != nil {
		t.Fatal(err)
	}
	if rf.Reason != ReasonTruncated || rf.Segment != name || !strings.Contains(rf.Detail, "end-of-stream") && !strings.Contains(rf.Detail, "EOF") || rf.Time.Before(before) {
		t.Fatalf("reason file %+v", rf)
	}
	if segs, _ := Scan(dir); len(segs) != 0 {
		t.Fatalf("quarantined segment still scanned: %v", segs)
	}
	// The same name again is kept beside the first, never over it.
	os.WriteFile(path, []byte("second"), 0o644)
	moved2, err := Quarantine(dir, SegmentInfo{Path: path}, ReasonCorrupt, "again")
	if err != nil {
		t.Fatal(err)
	}
	if moved2 == moved {
		t.Fatal("second quarantine overwrote the first")
	}
	if got, _ := os.ReadFile(moved); !bytes.Equal(got, data[:len(data)/2]) {
		t.Fatal("first quarantined file changed")
	}
	if _, err := os.Stat(moved2 + ReasonSuffix); err != nil {
		t.Fatal(err)
	}
}

// Segments from other Arrow producers may use LZ4 bodies or dictionary
// columns; the format doc promises both are readable.
func TestDecodeForeignEncodings(t *testing.T) {
	mem := memory.DefaultAllocator
	rec := newLogGen(9, t0).Batch(mem, 50)
	defer rec.Release()
	seg, err := Decode(testName, rawSegmentWith(t, []ipc.Option{ipc.WithLZ4()}, logSchema, nil, rec), ReadOptions{})
	if err != nil {
		t.Fatalf("lz4: %v", err)
	}
	if !array.RecordEqual(seg.Records[0], rec) {
		t.Fatal("lz4 round trip differs")
	}
	seg.Release()

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
			t.Fatal(err)
		}
	}
	drec := b.NewRecordBatch()
	defer drec.Release()
	seg, err = Decode(testName, rawSegment(t, schema, nil, drec, drec), ReadOptions{})
	if err != nil {
		t.Fatalf("dictionary: %v", err)
	}
	defer seg.Release()
	if seg.Rows != 8 || !array.RecordEqual(seg.Records[1], drec) {
		t.Fatalf("dictionary round trip: %d rows", seg.Rows)
	}
}

// TestDecodeInPlace checks that an uncompressed segment's records point
// into the bytes they were decoded from (no body copies), and that a
// compressed one, which cannot, still decodes.
func TestDecodeInPlace(t *testing.T) {
	for _, comp := range []compression{compressionNone, compressionZstd} {
		t.Run(string(comp), func(t *testing.T) {
			name, data := validSegment(t, comp, 3, 50)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			seg, err := Decode(name, data, ReadOptions{Mem: mem})
			if err != nil {
				t.Fatal(err)
			}
			defer seg.Release()
			lo := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
			hi := lo + uintptr(len(data))
			inside := 0
			for _, r := range seg.Records {
				for _, c := range r.Columns() {
					for _, b := range c.Data().Buffers() {
						if b == nil || b.Len() == 0 {
							continue
						}
						if p := uintptr(unsafe.Pointer(unsafe.SliceData(b.Bytes()))); p >= lo && p < hi {
							inside++
						}
					}
				}
			}
			switch {
			case comp == compressionNone && (inside == 0 || mem.CurrentAlloc() != 0):
				t.Fatalf("uncompressed: %d buffers point into the file bytes, %d bytes allocated; want all in place", inside, mem.CurrentAlloc())
			case comp == compressionZstd && inside != 0:
				t.Fatalf("compressed: %d buffers point into the compressed file bytes", inside)
			}
		})
	}
}
