package buffer

// This file plans an answer: everything that can still fail with a status, before it is sent.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/localwal/walwriter"
	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/rowfilter"
	"github.com/siglake/siglake/sidecar/buffer/reader"
	"github.com/siglake/siglake/sidecar/buffer/segments"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/rows"
)

// source is one segment an answer serves, open since before the answer started: an open file
// stays readable when the drain removes or retires the segment meanwhile.
type source struct {
	seg    segments.Segment
	f      *os.File
	schema *arrow.Schema // the segment's own
}

// answer is a read ready to stream.
type answer struct {
	table    string
	verified bool
	plan     segments.Plan
	current  reader.Marks
	srcs     []source
	schema   *arrow.Schema // every column, what each record is conformed to
	out      *arrow.Schema // the projection, with the answer's metadata
	proj     []int
	match    *merge.Matcher    // nil: every row
	expired  *rowfilter.Filter // rows past retention, as the drain drops them; nil: none
	cutoff   int64             // no row at or after it is past retention (microseconds)
	budget   int64
	first    *localwal.Segment // srcs[0] decoded before the status was sent
	skipped  map[string]int
}

func (a *answer) close() {
	for _, s := range a.srcs {
		s.f.Close()
	}
	if a.first != nil {
		a.first.Release()
	}
}

func (a *answer) skip(reason string) {
	if a.skipped == nil {
		a.skipped = map[string]int{}
	}
	a.skipped[reason]++
}

// prepare does everything that can still fail with a status: list, read the marks, decide, open
// the segments, build the schema, bind the query, decode the first segment.
func (s *Server) prepare(ctx context.Context, tbl string, q reader.Query, o *outcome) (*answer, *httpError) {
	// 1. The WAL dirs, then retention, then the catalog: the order Decide's proof needs.
	req, herr := s.listSegments(tbl)
	if herr != nil {
		return nil, herr
	}
	t, loadErr, herr := s.readMarks(ctx, tbl, q, &req)
	if herr != nil {
		return nil, herr
	}
	// 2. Decide.
	plan, ref := segments.Decide(req)
	if ref != nil {
		o.Refusal = ref
		return nil, refusal(ref, req.Current)
	}
	a := &answer{table: tbl, verified: !q.Unverified, plan: plan, current: req.Current, budget: s.perRead()}
	if s.PastRetention != nil {
		a.expired, a.cutoff = s.PastRetention(t, s.now())
	}
	ok := false
	defer func() {
		if !ok {
			a.close()
		}
	}()
	// 3. Open every segment now; one gone since the listing was drained or quarantined meanwhile.
	if herr := s.openSegments(ctx, a, q, o); herr != nil {
		return nil, herr
	}
	// 4. The answer's columns: the table's, then new ones the segments bring (as the drain adds
	// them). A segment whose column type conflicts is left out: the drain quarantines it.
	if herr := s.bindColumns(t, loadErr, a, q); herr != nil {
		return nil, herr
	}
	// 5. Memory: a segment's file and its decoded records are held while it is answered.
	if herr := a.fitMemory(); herr != nil {
		return nil, herr
	}
	// 6. Decode the first segment before the status goes out, so its failures are statuses.
	if herr := a.decodeFirst(s.Mem); herr != nil {
		return nil, herr
	}
	a.out = a.outSchema()
	ok = true
	return a, nil
}

// listSegments lists the streams of the WAL root, the live segments of tbl in each, then the
// retained ones.
func (s *Server) listSegments(tbl string) (segments.Request, *httpError) {
	var req segments.Request
	dirs, err := segments.Dirs(s.Cfg.WALDir, s.Cfg.Claims)
	if err != nil {
		return req, unavailable("listing the WAL root: %v", err)
	}
	streamOf := map[string]string{} // dir -> stream
	for _, dir := range dirs {
		segs, err := localwal.Scan(dir)
		if err != nil {
			return req, unavailable("%v", err)
		}
		stream := dirStream(dir, s.Cfg.Claims, segs)
		if stream == "" {
			continue // no stream has written here yet
		}
		streamOf[dir] = stream
		req.Streams = append(req.Streams, stream)
		for _, g := range segs {
			if g.Table == tbl {
				req.Live = append(req.Live, segments.Segment{Name: g.Name, Path: g.Path, Stream: stream,
					Mark: marks.Mark{Incarnation: g.Incarnation, Seq: g.Seq}, Size: g.Size})
			}
		}
	}
	for _, dir := range dirs {
		if streamOf[dir] == "" {
			continue
		}
		rs, err := segments.ListRetained(dir, tbl)
		if err != nil {
			return req, unavailable("%v", err)
		}
		for _, r := range rs {
			r.Stream = streamOf[dir]
			req.Retained = append(req.Retained, r)
		}
	}
	return req, nil
}

// readMarks loads tbl (nil when the catalog does not have it) and completes req with its marks,
// the reader's and the limits. An unreachable catalog is loadErr for an unverified read.
func (s *Server) readMarks(ctx context.Context, tbl string, q reader.Query, req *segments.Request) (t *table.Table, loadErr error, herr *httpError) {
	t, loadErr = s.LoadTable(ctx, tbl)
	if errors.Is(loadErr, catalog.ErrNoSuchTable) {
		t, loadErr = nil, nil
	}
	if loadErr != nil && !q.Unverified {
		return nil, nil, unavailable("reading the table's marks from the catalog: %v (without them the buffer cannot prove an answer has no gap; unverified=true answers anyway)", loadErr)
	}
	req.Current = reader.Marks{}
	if t != nil {
		var err error
		if req.Current, err = reader.TableMarks(t); err != nil {
			return nil, nil, internalError(err)
		}
	}
	req.After, req.Unverified = q.After, q.Unverified
	req.MaxSegments, req.MaxBytes = s.Cfg.MaxSegments, s.Cfg.MaxResponseBytes
	if req.MaxSegments <= 0 {
		req.MaxSegments = DefaultMaxSegments
	}
	return t, loadErr, nil
}

// dirStream is the stream a WAL dir holds: under claims its name, otherwise its STREAM file's,
// or the header of its oldest segment (a writer without a STREAM file of ours); "" for none.
func dirStream(dir string, claims bool, segs []localwal.SegmentInfo) string {
	if claims {
		return filepath.Base(dir)
	}
	if id, ok, err := walwriter.ReadStreamID(dir); err == nil && ok {
		return id
	}
	for _, g := range segs {
		f, err := os.Open(g.Path)
		if err != nil {
			continue
		}
		hdr, _, err := localwal.ReadHead(g.Name, f)
		f.Close()
		if err == nil {
			return hdr.Stream
		}
	}
	return ""
}

// openSegments opens the segments of a's plan. A segment gone since the listing (drained,
// retired or quarantined meanwhile) refuses the answer, unless it is unverified; one whose head
// does not read is skipped (the drain quarantines it).
func (s *Server) openSegments(ctx context.Context, a *answer, q reader.Query, o *outcome) *httpError {
	for i, g := range a.plan.Serve {
		f, g, err := openSegment(g)
		if errors.Is(err, fs.ErrNotExist) {
			if q.Unverified {
				continue
			}
			return s.gone(ctx, a, g, o)
		}
		if err != nil {
			return internalError(fmt.Errorf("open segment: %w", err))
		}
		src, skip, err := readHead(g, f)
		if err != nil {
			f.Close()
			return internalError(err)
		}
		if skip != "" {
			f.Close()
			a.skip(skip)
			continue
		}
		a.plan.Serve[i] = g
		a.srcs = append(a.srcs, src)
	}
	return nil
}

// openSegment opens g, or where the drain retired it meanwhile, its retained copy.
func openSegment(g segments.Segment) (*os.File, segments.Segment, error) {
	f, err := os.Open(g.Path)
	if errors.Is(err, fs.ErrNotExist) && !g.Retained {
		if rg, found := segments.FindRetained(filepath.Dir(g.Path), g.Name); found {
			rg.Stream = g.Stream
			g = rg
			f, err = os.Open(g.Path)
		}
	}
	return f, g, err
}

// gone refuses an answer whose segment g was committed (or quarantined) after the marks were
// read, with the marks of now.
func (s *Server) gone(ctx context.Context, a *answer, g segments.Segment, o *outcome) *httpError {
	cur := a.current
	if nt, err := s.LoadTable(ctx, a.table); err == nil {
		if m, err := reader.TableMarks(nt); err == nil {
			cur = m
		}
	}
	reason := "draining"
	if g.Retained {
		reason = "drained" // swept from retention meanwhile
	}
	ref := &segments.Refusal{Stream: g.Stream, After: a.plan.After.Get(g.Stream), Current: cur.Get(g.Stream), Reason: reason, At: g.Mark}
	o.Refusal = ref
	return refusal(ref, cur)
}

// readHead reads the head of segment g open in f and rewinds it: the source to serve, or the
// reason to skip a segment the drain quarantines, or an error to fail the answer with.
func readHead(g segments.Segment, f *os.File) (source, string, error) {
	hdr, sc, err := localwal.ReadHead(g.Name, f)
	var se *localwal.SegmentError
	switch {
	case errors.As(err, &se) && se.Reason != localwal.ReasonIO:
		return source{}, se.Reason, nil // the drain quarantines it: its rows never reach the table
	case err != nil:
		return source{}, "", err
	case hdr.Stream != g.Stream:
		return source{}, localwal.ReasonBadHeader, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return source{}, "", err
	}
	return source{seg: g, f: f, schema: sc}, "", nil
}

// bindColumns sets a's schema (the table's columns, then those the segments add) and binds the
// query's filter and projection to it.
func (s *Server) bindColumns(t *table.Table, loadErr error, a *answer, q reader.Query) *httpError {
	a.schema = s.answerSchema(t, a)
	if a.schema == nil {
		if loadErr != nil {
			return unavailable("the catalog is unreachable (%v) and no sealed segment of %s is here to give its columns", loadErr, a.table)
		}
		return &httpError{http.StatusNotFound, reader.ErrorBody{Error: fmt.Sprintf("table %s: not in the catalog and no sealed segment of it is waiting", a.table)}}
	}
	match, proj, err := bind(q, a.schema)
	if err != nil {
		return paramError(err)
	}
	a.match, a.proj = match, proj
	return nil
}

// answerSchema is the table's columns (without Iceberg field ids) followed by the new columns
// the served segments bring, all optional; nil when there is neither a table nor a segment.
// It drops the sources whose columns conflict, as the drain would quarantine them.
func (s *Server) answerSchema(t *table.Table, a *answer) *arrow.Schema {
	var fields []arrow.Field
	fromTable := map[string]bool{}
	if t != nil {
		if sc, err := lake.ArrowSchema(t); err == nil {
			for _, f := range sc.Fields() {
				f.Metadata = arrow.Metadata{}
				fields = append(fields, f)
				fromTable[f.Name] = true
			}
		}
	}
	index := map[string]int{}
	for i, f := range fields {
		index[f.Name] = i
	}
	kept := a.srcs[:0]
	for _, src := range a.srcs {
		tsc := rows.TableSchema(src.schema, lake.TimestampColumn)
		if t != nil {
			if _, err := lake.CheckColumns(t, tsc); err != nil {
				src.f.Close()
				a.skip("incompatible_schema")
				continue
			}
		}
		compatible := true
		for _, f := range tsc.Fields() {
			if i, ok := index[f.Name]; ok && !fromTable[f.Name] && !arrow.TypeEqual(fields[i].Type, f.Type) {
				compatible = false
			}
		}
		if !compatible {
			src.f.Close()
			a.skip("incompatible_schema")
			continue
		}
		defines := len(fields) == 0 // no table: the first segment's columns are the table's
		for _, f := range tsc.Fields() {
			if _, ok := index[f.Name]; !ok {
				f.Nullable = f.Nullable || !defines
				index[f.Name] = len(fields)
				fields = append(fields, f)
			}
		}
		kept = append(kept, src)
	}
	a.srcs = kept
	if len(fields) == 0 {
		return nil
	}
	return arrow.NewSchema(fields, nil)
}

// fitMemory ends the answer before the first segment whose file and decoded rows do not fit a
// read's share; a first segment that does not fit is refused.
func (a *answer) fitMemory() *httpError {
	for i, src := range a.srcs {
		if 2*src.seg.Size <= a.budget {
			continue
		}
		if i == 0 {
			return &httpError{http.StatusRequestEntityTooLarge, reader.ErrorBody{Error: fmt.Sprintf(
				"segment %s is %d bytes; a read may hold %d bytes of file and decoded rows (SIGLAKE_BUFFER_MEMORY_BYTES / SIGLAKE_BUFFER_MAX_READERS), which needs at least twice the file",
				src.seg.Name, src.seg.Size, a.budget)}}
		}
		for _, rest := range a.srcs[i:] {
			rest.f.Close()
		}
		a.srcs = a.srcs[:i]
		a.plan = a.plan.Cut(src.seg)
		break
	}
	return nil
}

// decodeFirst decodes the first segment that has rows for the answer; those before it are
// dropped.
func (a *answer) decodeFirst(mem memory.Allocator) *httpError {
	for len(a.srcs) > 0 {
		seg, herr := a.decode(mem, a.srcs[0])
		if herr != nil {
			return herr
		}
		if seg != nil {
			a.first = seg
			return nil
		}
		a.srcs[0].f.Close()
		a.srcs = a.srcs[1:]
	}
	return nil
}
