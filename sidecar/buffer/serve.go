package buffer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/merge/rowfilter"
	"github.com/siglake/siglake/sidecar/buffer/listen"
	"github.com/siglake/siglake/sidecar/buffer/reader"
	"github.com/siglake/siglake/sidecar/buffer/segments"
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
	Auth *listen.Auth

	once  sync.Once
	slots chan struct{}
}

// Handler serves GET /v1/buffer/{table} (the rows) and GET /v1/buffer (what waits, as JSON).
func (s *Server) Handler() http.Handler {
	s.once.Do(func() { s.slots = make(chan struct{}, max(1, s.Cfg.MaxReaders)) })
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/buffer/{table}", s.serveTable)
	mux.HandleFunc("GET /v1/buffer", s.serveList)
	return s.Auth.Wrap(listen.WriteDeadlines(mux, s.Cfg.WriteTimeout))
}

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

// unavailable is a 503: the buffer cannot answer now, a retry may succeed.
func unavailable(format string, args ...any) *httpError {
	return &httpError{http.StatusServiceUnavailable, reader.ErrorBody{Error: fmt.Sprintf(format, args...)}}
}

// internalError is a 500 with err's text.
func internalError(err error) *httpError {
	return &httpError{http.StatusInternalServerError, reader.ErrorBody{Error: err.Error()}}
}

func refusal(ref *segments.Refusal, current reader.Marks) *httpError {
	return &httpError{http.StatusConflict, reader.ErrorBody{Error: ref.Error(), Reason: ref.Reason, Stream: ref.Stream, Marks: current.String()}}
}

func (s *Server) serveTable(w http.ResponseWriter, r *http.Request) {
	start := s.now()
	o := outcome{Table: r.PathValue("table")}
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
