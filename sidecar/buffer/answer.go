package buffer

// This file answers: it decodes the planned segments and streams their rows.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/sidecar/buffer/reader"
	"github.com/siglake/siglake/sidecar/lake"
)

// stream writes the answer: the status, then segment by segment its rows, flushed after each.
// A failure after the status was sent cuts the connection (no end-of-stream marker, no final
// chunk), so no reader mistakes a partial answer for a whole one.
func (s *Server) stream(w http.ResponseWriter, a *answer, o *outcome) {
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

func (a *answer) write(ctx context.Context, iw *ipc.Writer, seg *localwal.Segment, mem memory.Allocator, o *outcome) error {
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

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
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
