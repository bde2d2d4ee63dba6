package buffer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/rowfilter"
	"github.com/siglake/siglake/sidecar/buffer/reader"
	"github.com/siglake/siglake/sidecar/buffer/segments"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/rows"
)

// DefaultMaxSegments bounds the segments of one answer: each is an open file while it is answered.
const DefaultMaxSegments = 256

// Config places and bounds the buffer (docs/wal-buffer.md "Limits").
type Config struct {
	// WALDir is the WAL dir, or under catalog claims (Claims) the root of stream directories.
	WALDir string
	Claims bool
	// MaxReaders is how many reads run at once; one more gets 429.
	MaxReaders int
	// MemoryBytes is the decoded memory all reads together may hold; each gets an equal share.
	MemoryBytes int64
	// MaxResponseBytes and MaxSegments cut an answer at a segment boundary (segment file bytes,
	// segments); the reader continues from the answer's through marks.
	MaxResponseBytes int64
	MaxSegments      int
	// WriteTimeout bounds each write of an answer (Timeouts.Write); 0: none.
	WriteTimeout time.Duration
}

// Server answers reads of the buffer.
type Server struct {
	Cfg Config
	// LoadTable loads a table from the catalog; errors wrap catalog.ErrNoSuchTable when the
	// table does not exist (lake.Lake.LoadTable).
	LoadTable func(ctx context.Context, name string) (*table.Table, error)
	Metrics   *Metrics
	Log       *zap.Logger
	Now       func() time.Time
	Mem       memory.Allocator
	// Reserve, when set, takes each read's memory share from the process budget
	// (sidecar/membudget) once the read has a slot; the read waits while the budget is spent.
	Reserve func(ctx context.Context, bytes int64) (release func(), err error)
	// PastRetention is the drain's hook (drain.Config.PastRetention, the same function): the
	// rows it says are past the table's retention (t nil: a table not created yet, the process
	// default) are left out of every answer, since the drain drops them before writing and a
	// reader would otherwise get rows the lake never holds (promise 12). nil: none are.
	PastRetention func(t *table.Table, now time.Time) (*rowfilter.Filter, int64)
	// Auth, when set, refuses requests without valid credentials before anything else.
	Auth *Auth

	once  sync.Once
	slots chan struct{}
}

// Handler serves GET /v1/buffer/{table} (the rows) and GET /v1/buffer (what waits, as JSON).
func (s *Server) Handler() http.Handler {
	s.once.Do(func() { s.slots = make(chan struct{}, max(1, s.Cfg.MaxReaders)) })
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/buffer/{table}", s.serveTable)
	mux.HandleFunc("GET /v1/buffer", s.serveList)
	if s.Cfg.WriteTimeout <= 0 {
		return s.Auth.Wrap(mux)
	}
	return s.Auth.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), d: s.Cfg.WriteTimeout}, r)
	}))
}

// deadlineWriter gives every write of an answer (every writeChunk of it) its own deadline. A
// reader that stops reading fills the socket buffers and blocks the next write; the deadline fails
// it, the answer is cut off and the read's slot is freed, however long the answer is meant to
// stream. A slow reader that keeps taking bytes keeps its answer.
type deadlineWriter struct {
	http.ResponseWriter
	rc  *http.ResponseController
	d   time.Duration
	set time.Time // when the deadline was last moved
}

// extend moves the deadline to d from now; at most every tenth of d, so a write has at least
// nine tenths of d and a stream of small writes does not reset a timer for each.
func (w *deadlineWriter) extend() {
	now := time.Now()
	if now.Sub(w.set) < w.d/10 {
		return
	}
	w.set = now
	_ = w.rc.SetWriteDeadline(now.Add(w.d))
}

func (w *deadlineWriter) WriteHeader(code int) {
	w.extend()
	w.ResponseWriter.WriteHeader(code)
}

// writeChunk is what one deadline covers: an Arrow record's body is one Write of up to megabytes,
// which a slow reader that keeps taking bytes could not take within one write timeout.
const writeChunk = 4 << 10

func (w *deadlineWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		c := p[:min(len(p), writeChunk)]
		w.extend()
		m, err := w.ResponseWriter.Write(c)
		n += m
		if err != nil {
			return n, err
		}
		p = p[len(c):]
	}
	return n, nil
}

func (w *deadlineWriter) FlushError() error {
	w.extend()
	return w.rc.Flush()
}

func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// perRead is the decoded memory one read may hold.
func (s *Server) perRead() int64 { return s.Cfg.MemoryBytes / int64(max(1, s.Cfg.MaxReaders)) }

func (s *Server) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

// httpError is an answer other than 200, with its JSON body.
type httpError struct {
	code int
	body reader.ErrorBody
}

func writeError(w http.ResponseWriter, e *httpError) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	switch e.code {
	case http.StatusConflict:
		w.Header().Set("Retry-After", "0")
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(e.code)
	_ = json.NewEncoder(w).Encode(e.body)
}

func paramError(err error) *httpError {
	var pe *reader.ParamError
	if errors.As(err, &pe) {
		return &httpError{http.StatusBadRequest, reader.ErrorBody{Error: pe.Error(), Parameter: pe.Param}}
	}
	return &httpError{http.StatusBadRequest, reader.ErrorBody{Error: err.Error()}}
}

func (s *Server) serveTable(w http.ResponseWriter, r *http.Request) {
	start := s.now()
	o := Outcome{Table: r.PathValue("table")}
	defer func() {
		o.Took = s.now().Sub(start)
		s.observe(o)
	}()
	fail := func(e *httpError) {
		o.Code, o.Error = strconv.Itoa(e.code), e.body.Error
		writeError(w, e)
	}
	if !localwal.ValidTable(o.Table) {
		fail(&httpError{http.StatusBadRequest, reader.ErrorBody{Error: fmt.Sprintf("table %q: accepted: ^[a-z][a-z0-9_]{0,127}$", o.Table), Parameter: "table"}})
		return
	}
	// Not r.URL.Query(): it drops a parse error (a bad escape, more parameters than the parser
	// takes) and would serve the rest without the filters it lost.
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		fail(&httpError{http.StatusBadRequest, reader.ErrorBody{Error: fmt.Sprintf("query string: %v", err)}})
		return
	}
	q, err := reader.ParseQuery(v)
	if err != nil {
		fail(paramError(err))
		return
	}
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	default:
		fail(&httpError{http.StatusTooManyRequests, reader.ErrorBody{Error: fmt.Sprintf("%d reads are running, the most SIGLAKE_BUFFER_MAX_READERS allows; retry shortly", cap(s.slots))}})
		return
	}
	if s.Reserve != nil {
		release, err := s.Reserve(r.Context(), s.perRead())
		if err != nil {
			fail(&httpError{http.StatusServiceUnavailable, reader.ErrorBody{Error: err.Error()}})
			return
		}
		defer release()
	}
	if s.Metrics != nil {
		s.Metrics.Readers.Inc()
		defer s.Metrics.Readers.Dec()
	}
	ans, herr := s.prepare(r.Context(), o.Table, q, &o)
	if herr != nil {
		fail(herr)
		return
	}
	defer ans.close()
	s.stream(w, ans, &o)
}

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
func (s *Server) prepare(ctx context.Context, tbl string, q reader.Query, o *Outcome) (*answer, *httpError) {
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

// unavailable is a 503: the buffer cannot answer now, a retry may succeed.
func unavailable(format string, args ...any) *httpError {
	return &httpError{http.StatusServiceUnavailable, reader.ErrorBody{Error: fmt.Sprintf(format, args...)}}
}

// internalError is a 500 with err's text.
func internalError(err error) *httpError {
	return &httpError{http.StatusInternalServerError, reader.ErrorBody{Error: err.Error()}}
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
					Mark: lake.Mark{Incarnation: g.Incarnation, Seq: g.Seq}, Size: g.Size})
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

// openSegments opens the segments of a's plan. A segment gone since the listing (drained,
// retired or quarantined meanwhile) refuses the answer, unless it is unverified; one whose head
// does not read is skipped (the drain quarantines it).
func (s *Server) openSegments(ctx context.Context, a *answer, q reader.Query, o *Outcome) *httpError {
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
func (s *Server) gone(ctx context.Context, a *answer, g segments.Segment, o *Outcome) *httpError {
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

func refusal(ref *segments.Refusal, current reader.Marks) *httpError {
	return &httpError{http.StatusConflict, reader.ErrorBody{Error: ref.Error(), Reason: ref.Reason, Stream: ref.Stream, Marks: current.String()}}
}

// dirStream is the stream a WAL dir holds: under claims its name, otherwise its STREAM file's,
// or the header of its oldest segment (a writer without a STREAM file of ours); "" for none.
func dirStream(dir string, claims bool, segs []localwal.SegmentInfo) string {
	if claims {
		return filepath.Base(dir)
	}
	if id, ok, err := localwal.ReadStreamID(dir); err == nil && ok {
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

// outSchema is the projection with the answer's metadata.
func (a *answer) outSchema() *arrow.Schema {
	fields := make([]arrow.Field, len(a.proj))
	for i, c := range a.proj {
		fields[i] = a.schema.Field(c)
	}
	md := a.metadata()
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	vals := make([]string, len(keys))
	for i, k := range keys {
		vals[i] = md[k]
	}
	m := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(fields, &m)
}

func (a *answer) metadata() map[string]string {
	names := make([]string, len(a.srcs))
	for i, s := range a.srcs {
		names[i] = s.seg.Name
	}
	marks := ""
	if a.verified {
		marks = a.current.String()
	}
	return map[string]string{
		reader.MetaTable: a.table, reader.MetaAfter: a.plan.After.String(), reader.MetaMarks: marks, reader.MetaThrough: a.plan.Through.String(),
		reader.MetaComplete: strconv.FormatBool(a.plan.Complete), reader.MetaSegments: strings.Join(names, ","), reader.MetaVerified: strconv.FormatBool(a.verified),
	}
}

// decode reads and decodes one segment inside the read's memory share. It returns nil without an
// error for a segment the drain will quarantine (corrupt batches, rows that do not fit the
// answer's columns), which the answer leaves out.
func (a *answer) decode(mem memory.Allocator, src source) (*localwal.Segment, *httpError) {
	data, err := io.ReadAll(io.LimitReader(src.f, src.seg.Size+1))
	if err == nil && int64(len(data)) != src.seg.Size {
		err = fmt.Errorf("%d bytes, listed with %d", len(data), src.seg.Size)
	}
	if err != nil {
		return nil, &httpError{http.StatusInternalServerError, reader.ErrorBody{Error: fmt.Sprintf("read segment %s: %v", src.seg.Name, err)}}
	}
	seg, err := localwal.Decode(src.seg.Name, data, localwal.ReadOptions{Mem: mem, MaxDecodedBytes: max(1, a.budget-int64(len(data)))})
	var se *localwal.SegmentError
	switch {
	case errors.Is(err, localwal.ErrDecodeBudget):
		return nil, &httpError{http.StatusRequestEntityTooLarge, reader.ErrorBody{Error: fmt.Sprintf(
			"segment %s decodes to more than a read may hold (%d bytes: SIGLAKE_BUFFER_MEMORY_BYTES / SIGLAKE_BUFFER_MAX_READERS)", src.seg.Name, a.budget)}}
	case errors.As(err, &se) && se.Reason != localwal.ReasonIO:
		a.skip(se.Reason)
		return nil, nil
	case err != nil:
		return nil, &httpError{http.StatusInternalServerError, reader.ErrorBody{Error: err.Error()}}
	}
	for _, rec := range seg.Records {
		c, err := input.Conform(rec, a.schema, mem)
		if err != nil {
			seg.Release()
			a.skip("incompatible_schema")
			return nil, nil
		}
		c.Release()
	}
	return seg, nil
}

// stream writes the answer: the status, then segment by segment its rows, flushed after each.
// A failure after the status was sent cuts the connection (no end-of-stream marker, no final
// chunk), so no reader mistakes a partial answer for a whole one.
func (s *Server) stream(w http.ResponseWriter, a *answer, o *Outcome) {
	h := w.Header()
	h.Set("Content-Type", reader.ContentType)
	h.Set("Cache-Control", "no-store")
	for k, v := range map[string]string{"After": reader.MetaAfter, "Marks": reader.MetaMarks, "Through": reader.MetaThrough, "Complete": reader.MetaComplete, "Verified": reader.MetaVerified} {
		h.Set("Siglake-Buffer-"+k, a.metadata()[v])
	}
	h.Set("Siglake-Buffer-Segments", strconv.Itoa(len(a.srcs)))
	// The request is read; an answer that streams past the listener's read timeout must not have
	// its context cancelled by it (writes have their own deadlines).
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	w.WriteHeader(http.StatusOK)
	o.Code = "200"
	cw := &countingWriter{w: w}
	defer func() { o.Bytes = cw.n; o.Skipped = a.skipped }()
	abort := func(err error) {
		o.Code, o.Error, o.Bytes, o.Skipped = "aborted", err.Error(), cw.n, a.skipped
		panic(http.ErrAbortHandler)
	}
	mem := s.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	iw := ipc.NewWriter(cw, ipc.WithSchema(a.out), ipc.WithAllocator(mem))
	ctx := context.Background()
	for i, src := range a.srcs {
		seg := a.first
		a.first = nil
		if i > 0 {
			var herr *httpError
			if seg, herr = a.decode(mem, src); herr != nil {
				abort(errors.New(herr.body.Error))
			}
			if seg == nil {
				continue
			}
		}
		err := a.write(ctx, iw, seg, mem, o)
		seg.Release()
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			abort(err)
		}
		o.Segments++
	}
	if err := iw.Close(); err != nil {
		abort(err)
	}
}

func (a *answer) write(ctx context.Context, iw *ipc.Writer, seg *localwal.Segment, mem memory.Allocator, o *Outcome) error {
	for _, rec := range seg.Records {
		c, err := input.Conform(rec, a.schema, mem)
		if err != nil {
			return err // decode checked every record
		}
		if a.expired != nil && minTimestamp(c) < a.cutoff {
			left, _, err := merge.FilterRecord(c, lake.TimestampColumn, a.expired, mem)
			c.Release()
			if err != nil {
				return fmt.Errorf("leave out rows past retention: %w", err)
			}
			c = left
		}
		kept := c
		if a.match != nil {
			kept, err = a.match.Keep(ctx, c, mem)
			c.Release()
			if err != nil {
				return err
			}
		}
		if kept.NumRows() > 0 {
			cols := make([]arrow.Array, len(a.proj))
			for i, p := range a.proj {
				cols[i] = kept.Column(p)
			}
			out := array.NewRecordBatch(a.out, cols, kept.NumRows())
			err = iw.Write(out)
			o.Rows += out.NumRows()
			out.Release()
		}
		kept.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// TableBacklog is what waits for one table in GET /v1/buffer.
type TableBacklog struct {
	Segments         int   `json:"segments"`
	Bytes            int64 `json:"bytes"`
	RetainedSegments int   `json:"retained_segments"`
	RetainedBytes    int64 `json:"retained_bytes"`
}

// serveList answers GET /v1/buffer: per table, the sealed segments waiting and those retained.
func (s *Server) serveList(w http.ResponseWriter, r *http.Request) {
	dirs, err := segments.Dirs(s.Cfg.WALDir, s.Cfg.Claims)
	if err != nil {
		writeError(w, &httpError{http.StatusServiceUnavailable, reader.ErrorBody{Error: err.Error()}})
		return
	}
	tables := map[string]*TableBacklog{}
	get := func(t string) *TableBacklog {
		if tables[t] == nil {
			tables[t] = &TableBacklog{}
		}
		return tables[t]
	}
	for _, dir := range dirs {
		segs, err := localwal.Scan(dir)
		if err != nil {
			writeError(w, &httpError{http.StatusServiceUnavailable, reader.ErrorBody{Error: err.Error()}})
			return
		}
		for _, g := range segs {
			b := get(g.Table)
			b.Segments++
			b.Bytes += g.Size
		}
		rs, _ := segments.ListRetained(dir, "")
		for _, g := range rs {
			t, _, _, _ := localwal.ParseSegmentName(g.Name)
			b := get(t)
			b.RetainedSegments++
			b.RetainedBytes += g.Size
		}
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(map[string]any{"tables": tables})
}

// minTimestamp is the smallest timestamp of rec (microseconds): a record wholly at or after the
// cutoff needs no filtering.
func minTimestamp(rec arrow.RecordBatch) int64 {
	m := int64(math.MaxInt64)
	idx := rec.Schema().FieldIndices(lake.TimestampColumn)
	if len(idx) == 0 {
		return math.MinInt64 // let the filter say what is wrong
	}
	col, ok := rec.Column(idx[0]).(*array.Timestamp)
	if !ok {
		return math.MinInt64
	}
	for i := 0; i < col.Len(); i++ {
		if col.IsValid(i) {
			m = min(m, int64(col.Value(i)))
		}
	}
	return m
}
