package localwal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/siglake/siglake/localwal/internal/ipcmsg"
	"github.com/siglake/siglake/localwal/internal/recordcheck"
)

// ReadOptions tune the reader. The zero value is ready to use.
type ReadOptions struct {
	// Mem allocates the decoded buffers; nil means memory.DefaultAllocator.
	// When a corrupt batch makes Arrow's decoder panic (it recovers and
	// returns an error), buffers it held at that moment are never
	// released: the Go allocator lets the GC reclaim them, an allocator
	// that needs explicit frees would leak them.
	Mem memory.Allocator
	// MaxDecodedBytes caps the bytes allocated while decoding one segment.
	// A compressed Arrow buffer declares its own uncompressed length, so
	// without a cap a few corrupt bytes could demand terabytes and kill
	// the process instead of quarantining one file. 0 means
	// DefaultMaxDecoded(file size): 64 MiB + 64 × the file size, which is
	// far above what zstd achieves on log rows (see docs/wal-format.md).
	MaxDecodedBytes int64
	// MaxFileBytes, when above 0, makes ReadAll reject a larger file with
	// reason oversize from its size alone, before reading a byte of it:
	// a file far above the writer's roll size (a stray copy, a runaway
	// producer) would otherwise be read whole into memory and could take
	// the process down instead of one file being quarantined.
	MaxFileBytes int64
}

// MaxMetadataBytes caps one IPC message's flatbuffer metadata (the schema
// or a batch's buffer layout); a few hundred bytes per column in practice.
const MaxMetadataBytes = 4 << 20

// DefaultMaxDecoded is the decode budget for a file of n bytes when
// ReadOptions.MaxDecodedBytes is 0.
func DefaultMaxDecoded(n int64) int64 { return 64<<20 + 64*n }

// Segment is a decoded segment. The buffers of uncompressed records point
// into the bytes the segment was decoded from (compressed ones are
// decompressed into buffers of their own), so they stay valid after the
// file is closed until Release is called, and those bytes must not change
// meanwhile. Once nothing references a record, its memory is the garbage
// collector's.
type Segment struct {
	Header  Header
	Schema  *arrow.Schema
	Records []arrow.RecordBatch
	Rows    int64
}

// Release releases every record. The Segment must not be used afterwards.
func (s *Segment) Release() {
	for _, r := range s.Records {
		r.Release()
	}
	s.Records = nil
}

// ReadAll reads and validates one segment file. Every failure is a
// *SegmentError. Segments are bounded by the writer's RollBytes, so the
// file is read into memory in one go; that also lets the decoder check that
// the end-of-stream marker is the last thing in the file.
func ReadAll(path string, opts ReadOptions) (*Segment, error) {
	data, serr := readFile(path, opts.MaxFileBytes)
	if serr != nil {
		return nil, serr
	}
	seg, _, serr := decode(path, data, opts, false)
	if serr != nil {
		return nil, serr
	}
	return seg, nil
}

// readFile reads a segment file whole, refusing one above max bytes (0: no
// limit) from its size before reading it, and again if it grew meanwhile.
func readFile(path string, max int64) ([]byte, *SegmentError) {
	ioErr := func(err error) *SegmentError {
		return &SegmentError{Path: path, Reason: ReasonIO, Err: fmt.Errorf("reading segment: %w", err)}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, ioErr(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, ioErr(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, ioErr(fmt.Errorf("not a regular file (%s)", fi.Mode().Type()))
	}
	if max > 0 && fi.Size() > max {
		return nil, segErr(path, ReasonOversize, "%d bytes, above the limit of %d", fi.Size(), max)
	}
	r := io.Reader(f)
	if max > 0 {
		r = io.LimitReader(f, max+1)
	}
	data := make([]byte, 0, fi.Size()+512)
	for {
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, ioErr(err)
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
	if max > 0 && int64(len(data)) > max {
		return nil, segErr(path, ReasonOversize, "grew past the limit of %d bytes while read", max)
	}
	return data, nil
}

// Decode is the pure core of ReadAll: it validates data as the content of
// a segment file called name (a base name or a path; only the base name is
// parsed). The records point into data (see Segment): the caller must not
// modify it while they live.
func Decode(name string, data []byte, opts ReadOptions) (*Segment, error) {
	seg, _, serr := decode(name, data, opts, false)
	if serr != nil {
		return nil, serr
	}
	return seg, nil
}

// decode validates data. With salvage set (crash recovery of an .open
// segment) it stops at the first bad or missing record batch instead of
// failing, and returns the prefix read so far plus the file offset where
// that prefix ends; header and schema problems are still errors.
func decode(path string, data []byte, opts ReadOptions, salvage bool) (*Segment, int64, *SegmentError) {
	return decodeFrom(path, data, opts, salvage, func(data []byte, _ memory.Allocator) messageSource {
		return ipcmsg.NewInPlace(data, MaxMetadataBytes)
	}, recordcheck.Full)
}

// messageSource is an IPC message reader that knows how far into the
// segment it has read, so the decoder can tell where the last good batch
// ends (crash recovery keeps that prefix) and whether bytes trail the
// end-of-stream marker.
type messageSource interface {
	ipc.MessageReader
	Offset() int64
}

// decodeFrom is decode with the IPC message reader and the record validation
// as arguments: the fuzz target checks that decoding in place with
// recordcheck.Full accepts, rejects and returns exactly what Arrow's own
// copying reader and full validation do. Its steps: the file name, the
// checksum trailer, the flatbuffer guard, the schema message and header,
// then the record batches and what follows them.
func decodeFrom(path string, data []byte, opts ReadOptions, salvage bool, messages func([]byte, memory.Allocator) messageSource,
	validate func(arrow.RecordBatch) error) (*Segment, int64, *SegmentError) {
	np, serr := checkName(path, data)
	if serr != nil {
		return nil, 0, serr
	}
	data, trailer, serr := stripTrailer(path, data, salvage)
	if serr != nil {
		return nil, 0, serr
	}
	mem := opts.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	limit := opts.MaxDecodedBytes
	if limit <= 0 {
		limit = DefaultMaxDecoded(int64(len(data)))
	}
	if data, serr = guardMetadata(path, data, salvage); serr != nil {
		return nil, 0, serr
	}
	budget := ipcmsg.NewBudget(mem, limit)
	defer budget.Disarm()

	// Message bodies are read in place; what decoding allocates on top
	// (decompressed buffers) is charged to the budget.
	d := &batchDecode{path: path, salvage: salvage, budget: budget, size: int64(len(data)), src: messages(data, budget)}
	d.mr = &eosWatch{MessageReader: d.src}
	rd, err := ipc.NewReaderFromMessageReader(d.mr, ipc.WithAllocator(budget))
	if err != nil {
		return nil, 0, streamErr(path, d.mr, "reading schema", err)
	}
	defer rd.Release()
	hdr, serr := checkHeader(path, rd.Schema(), np, trailer)
	if serr != nil {
		return nil, 0, serr
	}
	d.seg = &Segment{Header: hdr, Schema: rd.Schema()}
	d.goodEnd = d.src.Offset() // end of the schema message
	return d.batches(rd, validate, trailer)
}

// checkName parses the segment's file name (only its base name) and refuses
// an empty file.
func checkName(path string, data []byte) (nameParts, *SegmentError) {
	np, serr := parseFileName(path)
	if serr == nil && len(data) == 0 {
		serr = segErr(path, ReasonEmpty, "zero-byte file")
	}
	return np, serr
}

// parseFileName parses the base name of path and checks its table name.
func parseFileName(path string) (nameParts, *SegmentError) {
	np, ok := parseName(filepath.Base(path))
	if !ok {
		return np, segErr(path, ReasonCorrupt, "file name is not <table>.<incarnation>.<seq>%s", SealedSuffix)
	}
	if !ValidTable(np.table) {
		return np, segErr(path, ReasonBadTableName, "table %q in file name does not match %s", np.table, tableRe)
	}
	return np, nil
}

// stripTrailer verifies and strips the checksum trailer; trailer reports
// whether there was one. The checksum comes first: a flipped bit is then
// reported as such, whatever it would have made of the decode. Crash
// recovery (salvage) strips a trailer only when it verifies (a writer died
// between writing it and the rename); otherwise it salvages what decodes.
func stripTrailer(path string, data []byte, salvage bool) (body []byte, trailer bool, serr *SegmentError) {
	body, crc, trailer := splitTrailer(data)
	if trailer {
		if got := Checksum(body); got != crc {
			if !salvage {
				return nil, false, segErr(path, ReasonChecksum, "CRC32C of the %d bytes before the trailer is %08x, the trailer says %08x", len(body), got, crc)
			}
			body, trailer = data, false
		}
	}
	return body, trailer, nil
}

// guardMetadata checks every message's flatbuffer metadata before Arrow
// reads it. Crash recovery keeps the batches before the first bad message.
func guardMetadata(path string, data []byte, salvage bool) ([]byte, *SegmentError) {
	badAt, err := ipcmsg.CheckStream(data)
	if err == nil {
		return data, nil
	}
	if !salvage || badAt == 0 {
		return nil, segErr(path, ReasonCorrupt, "checking IPC metadata: %w", err)
	}
	return data[:badAt], nil
}

// checkHeader reads the header from the schema's metadata and checks it
// against the file name, the schema against the segment rules, and the
// trailer against the version.
func checkHeader(path string, schema *arrow.Schema, np nameParts, trailer bool) (Header, *SegmentError) {
	hdr, reason, err := headerFromMetadata(schema.Metadata())
	if err != nil {
		return hdr, &SegmentError{Path: path, Reason: reason, Err: err}
	}
	switch {
	case hdr.Table != np.table:
		return hdr, segErr(path, ReasonCorrupt, "header table %q does not match file name table %q", hdr.Table, np.table)
	case hdr.Incarnation != np.incarnation:
		return hdr, segErr(path, ReasonCorrupt, "header incarnation %d does not match file name incarnation %d", hdr.Incarnation, np.incarnation)
	case hdr.Seq != np.seq:
		return hdr, segErr(path, ReasonCorrupt, "header seq %d does not match file name seq %d", hdr.Seq, np.seq)
	}
	if err := CheckSchema(schema); err != nil {
		return hdr, &SegmentError{Path: path, Reason: ReasonBadSchema, Err: err}
	}
	if trailer && hdr.Version < 2 {
		return hdr, segErr(path, ReasonCorrupt, "version %d segment ends with a checksum trailer (only version 2 has one)", hdr.Version)
	}
	return hdr, nil
}

// batchDecode is one segment's decode from its schema message on: the
// segment so far and where its last good batch ends.
type batchDecode struct {
	path    string
	salvage bool
	budget  *ipcmsg.Budget
	size    int64 // bytes of the stream, trailer stripped
	src     messageSource
	mr      *eosWatch
	seg     *Segment
	goodEnd int64
}

// fail ends the decode at a bad batch: crash recovery keeps what decoded
// so far, a read rejects the segment.
func (d *batchDecode) fail(e *SegmentError) (*Segment, int64, *SegmentError) {
	if d.salvage {
		return d.seg, d.goodEnd, nil
	}
	d.seg.Release()
	if d.budget.Tripped() {
		e.Err = fmt.Errorf("%w: %w", ErrDecodeBudget, e.Err)
	}
	return nil, 0, e
}

// batches validates and keeps every record batch, then checks what ends
// the stream: its end-of-stream marker, the trailer, nothing after them.
func (d *batchDecode) batches(rd *ipc.Reader, validate func(arrow.RecordBatch) error, trailer bool) (*Segment, int64, *SegmentError) {
	path, seg, hdr := d.path, d.seg, d.seg.Header
	for rd.Next() {
		rec := rd.RecordBatch()
		if err := validate(rec); err != nil {
			return d.fail(segErr(path, ReasonCorrupt, "record batch %d fails validation: %w", len(seg.Records), err))
		}
		rec.Retain()
		seg.Records = append(seg.Records, rec)
		seg.Rows += rec.NumRows()
		// The message reader reads exactly one message per call, so
		// this is where the batch's bytes end.
		d.goodEnd = d.src.Offset()
	}
	if err := rd.Err(); err != nil {
		return d.fail(streamErr(path, d.mr, fmt.Sprintf("reading record batch %d", len(seg.Records)), err))
	}
	if !d.mr.eos {
		return d.fail(segErr(path, ReasonTruncated, "no end-of-stream marker after %d record batches", len(seg.Records)))
	}
	if tail := d.size - d.src.Offset(); tail > 0 && tail < int64(TrailerSize) && hdr.Version >= 2 && !trailer {
		return d.fail(segErr(path, ReasonTruncated, "the file ends %d bytes into its %d-byte checksum trailer", tail, TrailerSize))
	}
	if d.src.Offset() != d.size {
		return d.fail(segErr(path, ReasonCorrupt, "%d bytes after the end-of-stream marker", d.size-d.src.Offset()))
	}
	if seg.Rows == 0 && !d.salvage {
		return d.fail(segErr(path, ReasonEmpty, "stream holds %d record batches and no rows", len(seg.Records)))
	}
	if hdr.Version >= 2 && !trailer && !d.salvage {
		// Cut right after the end-of-stream marker, or the trailer's magic damaged.
		return d.fail(segErr(path, ReasonTruncated, "version %d segment has no checksum trailer after its end-of-stream marker", hdr.Version))
	}
	return seg, d.goodEnd, nil
}

// streamErr types an Arrow stream error: running out of bytes inside a
// message is truncation, anything else is corruption.
func streamErr(path string, mr *eosWatch, doing string, err error) *SegmentError {
	reason := ReasonCorrupt
	if mr.short {
		reason = ReasonTruncated
	}
	return &SegmentError{Path: path, Reason: reason, Err: fmt.Errorf("%s: %w", doing, err)}
}

// eosWatch tells a real end-of-stream marker apart from the input simply
// running out. Arrow's stream reader treats both as a clean end, which
// would let a file cut at a message boundary pass as complete.
type eosWatch struct {
	ipc.MessageReader
	eos   bool // the stream's end-of-stream marker was read
	short bool // the input ended before or inside a message
}

func (w *eosWatch) Message() (*ipc.Message, error) {
	msg, err := w.MessageReader.Message()
	switch {
	case err == io.EOF: // the bare io.EOF is Arrow's "EOS marker read"
		w.eos = true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		w.short = true
	}
	return msg, err
}

// ErrDecodeBudget is wrapped by the error of a segment that needed more than
// ReadOptions.MaxDecodedBytes to decode (its reason is corrupt: under the
// default budget only a corrupt file gets there). A reader with a smaller
// budget of its own, the WAL buffer, tells it apart from real corruption.
var ErrDecodeBudget = errors.New("decode budget exceeded")
