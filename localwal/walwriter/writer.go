// Package walwriter is the WAL writer ingest pods use: it appends record
// batches to one segment per table, rolls by size, age and schema change,
// seals a segment by an atomic rename, hands out sequence numbers that never
// repeat (persisted in the STREAM file), and salvages the unsealed segments
// of a crashed writer before it writes anything (localwal.Recover). The
// segment format, the reader and the directory scan are localwal's.
package walwriter

import (
	"bufio"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/localwal/internal/durable"
)

// Compression selects the Arrow IPC body compression of new segments.
type Compression string

const (
	// CompressionNone writes buffers as they are. It is the default: a
	// segment is read once by the drain and then deleted, so compression
	// only buys local disk space, and it costs the ingest hot path about
	// six times the CPU per byte written and the drain about twice the
	// decode time (measurements in docs/wal-format.md).
	CompressionNone Compression = "none"
	// CompressionZstd compresses every body buffer with zstd (Arrow's
	// default level). Use it when the WAL volume is small relative to the
	// backlog it must hold through a catalog or object-store outage: it
	// fits 2.4× (synthetic rows with random ids) or more rows per byte.
	CompressionZstd Compression = "zstd"
)

// ParseCompression accepts "none" and "zstd" ("" means none).
func ParseCompression(s string) (Compression, error) {
	switch Compression(strings.ToLower(s)) {
	case "", CompressionNone:
		return CompressionNone, nil
	case CompressionZstd:
		return CompressionZstd, nil
	}
	return "", fmt.Errorf("unknown WAL compression %q (accepted: none, zstd)", s)
}

// Defaults for Options.
const (
	// DefaultRollBytes bounds a segment's size so that the drain can hold a
	// whole segment in memory and a commit batch (32 MiB by default) is a
	// handful of segments.
	DefaultRollBytes = 8 << 20
	// DefaultRollAge bounds how long a row waits in an open segment before
	// the drain may see it; it is half the drain's default batch age.
	DefaultRollAge = 5 * time.Second
)

// Options configure a Writer.
type Options struct {
	// Stream identifies the writer (e.g. the pod name). Required unless
	// the directory already has a STREAM file, whose id is then used; a
	// different non-empty value is an error, because a WAL directory
	// belongs to one stream.
	Stream string
	// RollBytes seals a table's open segment once its file reaches this
	// size. 0 means DefaultRollBytes.
	RollBytes int64
	// RollAge seals a table's open segment once it is this old (checked on
	// Append and by SealDue). 0 means DefaultRollAge.
	RollAge time.Duration
	// Compression of new segments; "" means CompressionNone.
	Compression Compression
	// FormatVersion of new segments: 0 or 2 writes version 2 (with the
	// checksum trailer), 1 writes version 1 (no trailer). Version 1 is for
	// a rolling upgrade or a rollback: a drain older than version 2 rejects
	// a version 2 header as bad_header and quarantines the segment, so keep
	// writing version 1 until every drain reading this WAL reads version 2
	// (docs/wal-format.md, "Upgrading").
	FormatVersion int
	// Now is the clock; nil means time.Now. Tests pass a fake one.
	Now func() time.Time
	// Mem allocates encoder scratch buffers; nil means the default.
	Mem memory.Allocator
	// OnSeal, when set, is called after each segment was sealed (durably
	// renamed). It runs with the Writer's lock held and must not call
	// back into the Writer.
	OnSeal func(SealedSegment)
	// OnRecover, when set, is told what New's crash recovery did
	// with each .open segment it found (see localwal.Recover), e.g. to log it.
	OnRecover func(localwal.Recovered)
}

// SealedSegment describes a segment the Writer sealed.
type SealedSegment struct {
	localwal.SegmentInfo
	Stream  string
	Rows    int64
	Batches int
}

// Writer appends record batches to per-table segments in one directory.
// It is safe for concurrent use. After an I/O error the Writer fails for
// good (every later call returns the error): the open segment of that table
// is left as a .open file, and the next New salvages it before any new
// sequence number is used, so sealed segments of a table keep their order.
type Writer struct {
	mu     sync.Mutex
	dir    string
	opts   Options
	ipcOpt []ipc.Option
	state  streamState
	open   map[string]*openSegment
	unlock func() error
	err    error // sticky
	closed bool
}

type openSegment struct {
	hdr     localwal.Header
	schema  *arrow.Schema // the caller's schema; metadata is ignored by Equal
	path    string
	f       *os.File
	buf     *bufio.Writer
	size    int64      // bytes in the file as of the last flush: its offset, as it is written front to back
	crc     *crcWriter // sums what the encoder writes, for the trailer
	enc     *ipc.Writer
	rows    int64
	batches int
}

// New opens dir (creating it if needed) for appending. It takes an
// exclusive lock on the directory, loads or creates the STREAM file and
// salvages .open segments a crashed writer left behind (see localwal.Recover).
func New(dir string, opts Options) (*Writer, error) {
	if opts.RollBytes <= 0 {
		opts.RollBytes = DefaultRollBytes
	}
	if opts.RollAge <= 0 {
		opts.RollAge = DefaultRollAge
	}
	comp, err := ParseCompression(string(opts.Compression))
	if err != nil {
		return nil, err
	}
	opts.Compression = comp
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Mem == nil {
		opts.Mem = memory.DefaultAllocator
	}
	switch opts.FormatVersion {
	case 0:
		opts.FormatVersion = 2
	case 1, 2:
	default:
		return nil, fmt.Errorf("WAL format version %d: accepted: 1 or 2", opts.FormatVersion)
	}
	if opts.Stream != "" && !localwal.ValidStream(opts.Stream) {
		return nil, fmt.Errorf("stream id %q does not match %s", opts.Stream, localwal.StreamPattern)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating WAL dir %s: %w", dir, err)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	w := &Writer{dir: dir, opts: opts, open: map[string]*openSegment{}, unlock: unlock}
	if err := w.init(); err != nil {
		unlock()
		return nil, err
	}
	w.ipcOpt = []ipc.Option{ipc.WithAllocator(opts.Mem)}
	if comp == CompressionZstd {
		w.ipcOpt = append(w.ipcOpt, ipc.WithZstd())
	}
	return w, nil
}

func (w *Writer) init() error {
	st, ok, err := readStreamState(w.dir)
	if err != nil {
		return err
	}
	if ok {
		if w.opts.Stream != "" && w.opts.Stream != st.Stream {
			return fmt.Errorf("WAL dir %s belongs to stream %q, not %q", w.dir, st.Stream, w.opts.Stream)
		}
	} else {
		if w.opts.Stream == "" {
			return fmt.Errorf("WAL dir %s has no %s file and no stream id was given", w.dir, localwal.StreamFile)
		}
		// A new incarnation: strictly above any segment still on disk, so
		// the drain never mistakes new segments for committed old ones.
		maxInc, err := localwal.MaxIncarnation(w.dir)
		if err != nil {
			return err
		}
		inc := uint64(w.opts.Now().UnixNano())
		if inc <= maxInc {
			inc = maxInc + 1
		}
		st = streamState{Stream: w.opts.Stream, Incarnation: inc, NextSeq: 1}
		if err := writeStreamState(w.dir, st); err != nil {
			return err
		}
	}
	w.state = st
	// An .open file grows to about RollBytes plus one batch; far above that it is no segment.
	recovered, err := localwal.RecoverLimit(w.dir, max(localwal.DefaultMaxRecoverBytes, 8*w.opts.RollBytes))
	if w.opts.OnRecover != nil {
		for _, r := range recovered {
			w.opts.OnRecover(r)
		}
	}
	if err != nil {
		return err
	}
	return nil
}

// Stream returns the writer's stream id.
func (w *Writer) Stream() string { return w.state.Stream }

// Incarnation returns the writer's incarnation.
func (w *Writer) Incarnation() uint64 { return w.state.Incarnation }

// Append writes rec to table's open segment, starting one if needed. A
// segment that is older than RollAge or whose schema differs from rec's is
// sealed first; the segment is sealed after the write once it reaches
// RollBytes. A batch without rows is ignored. The Writer does not keep rec.
func (w *Writer) Append(table string, rec arrow.RecordBatch) error {
	if !localwal.ValidTable(table) {
		return fmt.Errorf("table name %q does not match %s", table, localwal.TablePattern)
	}
	if rec == nil {
		return fmt.Errorf("appending to %s: nil record batch", table)
	}
	if err := localwal.CheckSchema(rec.Schema()); err != nil {
		return fmt.Errorf("appending to %s: %w", table, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	if rec.NumRows() == 0 {
		// Nothing to keep, and a segment of empty batches would be
		// rejected as "empty" and quarantined.
		return nil
	}
	now := w.opts.Now()
	seg := w.open[table]
	if seg != nil && (!seg.schema.Equal(rec.Schema()) || w.aged(seg, now)) {
		if err := w.seal(seg); err != nil {
			return err
		}
		seg = nil
	}
	if seg == nil {
		var err error
		if seg, err = w.create(table, rec.Schema(), now); err != nil {
			return err
		}
	}
	if err := seg.enc.Write(rec); err != nil {
		return w.fail(fmt.Errorf("writing record batch to %s: %w", seg.path, err))
	}
	// Hand the batch to the kernel now: a process crash then loses
	// nothing appended (Recover salvages it); only a power loss can take
	// the unsealed tail.
	if err := seg.flush(); err != nil {
		return w.fail(fmt.Errorf("writing record batch to %s: %w", seg.path, err))
	}
	seg.rows += rec.NumRows()
	seg.batches++
	if seg.size >= w.opts.RollBytes {
		return w.seal(seg)
	}
	return nil
}

// SealDue seals every open segment that is at least RollAge old at now.
// Callers tick it (about every RollAge/2) so quiet tables are drained too.
func (w *Writer) SealDue(now time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	for _, seg := range w.sortedOpen() {
		if w.aged(seg, now) {
			if err := w.seal(seg); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close seals every open segment and releases the directory lock. After a
// failure it still seals the segments of other tables.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	var errs []error
	if w.err == nil {
		for _, seg := range w.sortedOpen() {
			if err := w.seal(seg); err != nil {
				errs = append(errs, err)
				break
			}
		}
	}
	for _, seg := range w.open { // only after a failure: keep as .open
		seg.enc.Close()
		seg.f.Close()
	}
	w.open = nil
	if err := w.unlock(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (w *Writer) usable() error {
	if w.closed {
		return errors.New("WAL writer is closed")
	}
	return w.err
}

func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = fmt.Errorf("WAL writer failed, restart it to salvage open segments: %w", err)
	}
	return w.err
}

func (w *Writer) aged(seg *openSegment, now time.Time) bool {
	return now.Sub(seg.hdr.Created) >= w.opts.RollAge
}

func (w *Writer) sortedOpen() []*openSegment {
	segs := make([]*openSegment, 0, len(w.open))
	for _, s := range w.open {
		segs = append(segs, s)
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].hdr.Seq < segs[j].hdr.Seq })
	return segs
}

// create persists the next sequence number, then creates the .open file.
// Persisting first is what keeps seqs unique across crashes: a crash after
// the STREAM rewrite wastes a number, never reuses one.
func (w *Writer) create(table string, schema *arrow.Schema, now time.Time) (*openSegment, error) {
	seq := w.state.NextSeq
	next := w.state
	next.NextSeq++
	if err := writeStreamState(w.dir, next); err != nil {
		return nil, w.fail(err)
	}
	w.state = next
	hdr := localwal.Header{Table: table, Stream: w.state.Stream, Incarnation: w.state.Incarnation, Seq: seq, Created: now, Version: w.opts.FormatVersion}
	path := filepath.Join(w.dir, openName(table, hdr.Incarnation, seq))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, w.fail(fmt.Errorf("creating segment: %w", err))
	}
	seg := &openSegment{hdr: hdr, schema: schema, path: path, f: f}
	seg.buf = bufio.NewWriterSize(f, 256<<10)
	opts := append([]ipc.Option{ipc.WithSchema(segmentSchema(schema, hdr))}, w.ipcOpt...)
	seg.crc = newCRCWriter(seg.buf)
	seg.enc = ipc.NewWriter(seg.crc, opts...)
	w.open[table] = seg
	return seg, nil
}

// openName is the name of a segment while it is written.
func openName(table string, incarnation, seq uint64) string {
	return strings.TrimSuffix(localwal.SegmentName(table, incarnation, seq), localwal.SealedSuffix) + localwal.OpenSuffix
}

// segmentSchema is the caller's schema with the header keys as its
// metadata. Caller metadata keys outside the siglake. namespace are kept.
func segmentSchema(s *arrow.Schema, h localwal.Header) *arrow.Schema {
	hm := h.Metadata()
	keys, vals := hm.Keys(), hm.Values()
	md := s.Metadata()
	for i, k := range md.Keys() {
		if !strings.HasPrefix(k, "siglake.") {
			keys = append(keys, k)
			vals = append(vals, md.Values()[i])
		}
	}
	meta := arrow.NewMetadata(keys, vals)
	return arrow.NewSchemaWithEndian(s.Fields(), &meta, s.Endianness())
}

// seal ends the stream, makes the bytes durable and publishes the segment
// by renaming it to .wal: the drain never sees a partial segment.
func (w *Writer) seal(seg *openSegment) error {
	delete(w.open, seg.hdr.Table)
	if err := seg.enc.Close(); err != nil {
		seg.f.Close()
		return w.fail(fmt.Errorf("ending stream of %s: %w", seg.path, err))
	}
	if seg.hdr.Version != 1 {
		if _, err := seg.buf.Write(localwal.Trailer(seg.crc.h.Sum32())); err != nil {
			seg.f.Close()
			return w.fail(fmt.Errorf("writing checksum trailer of %s: %w", seg.path, err))
		}
	}
	if err := seg.flush(); err != nil {
		seg.f.Close()
		return w.fail(fmt.Errorf("flushing %s: %w", seg.path, err))
	}
	if err := seg.f.Sync(); err != nil {
		seg.f.Close()
		return w.fail(fmt.Errorf("fsync %s: %w", seg.path, err))
	}
	if err := seg.f.Close(); err != nil {
		return w.fail(fmt.Errorf("closing %s: %w", seg.path, err))
	}
	final := strings.TrimSuffix(seg.path, localwal.OpenSuffix) + localwal.SealedSuffix
	if err := os.Rename(seg.path, final); err != nil {
		return w.fail(fmt.Errorf("sealing %s: %w", seg.path, err))
	}
	if err := durable.SyncDir(w.dir); err != nil {
		return w.fail(err)
	}
	if w.opts.OnSeal != nil {
		w.opts.OnSeal(SealedSegment{
			SegmentInfo: localwal.SegmentInfo{
				Path: final, Name: filepath.Base(final), Table: seg.hdr.Table,
				Incarnation: seg.hdr.Incarnation, Seq: seg.hdr.Seq,
				Size: seg.size, ModTime: w.opts.Now(),
			},
			Stream: seg.hdr.Stream, Rows: seg.rows, Batches: seg.batches,
		})
	}
	return nil
}

// flush hands the buffered bytes to the kernel and records the segment's size from the file's
// offset. (the WAL packages import arrow only, so it takes no counting writer from merge, and needs none.)
func (seg *openSegment) flush() error {
	if err := seg.buf.Flush(); err != nil {
		return err
	}
	off, err := seg.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	seg.size = off
	return nil
}

// crcWriter passes writes through and keeps the CRC32C of what it passed:
// the checksum the trailer records (localwal.Checksum), summed as written.
type crcWriter struct {
	w io.Writer
	h hash.Hash32
}

func newCRCWriter(w io.Writer) *crcWriter {
	return &crcWriter{w: w, h: crc32.New(crc32.MakeTable(crc32.Castagnoli))}
}

func (c *crcWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.h.Write(p[:n])
	return n, err
}
