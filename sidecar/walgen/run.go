package walgen

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/localwal/walwriter"
)

// RunOptions configure a load-generation run.
type RunOptions struct {
	WALDir string
	Stream string
	// Tables the rows go to, round-robin by batch (default: events). One stream writes them all,
	// as one ingest pod's WAL holds segments of every table it writes.
	Tables []string
	// Rows to write in total; 0 = until ctx is done.
	Rows int64
	// Rate in rows per second; 0 = as fast as possible.
	Rate int64
	// BatchRows is the size of each appended record batch.
	BatchRows   int
	SegmentSize int64         // roll a segment at this many bytes
	RollAge     time.Duration // roll a segment at this age
	// Start is the timestamp of the first row. Zero: the rows end at about the time they are
	// written and none is ever later than that (ingest does not see the future): with Rows and
	// no Rate they end at the start of the run, and every batch is kept at or before the clock.
	Start time.Time
	// Step is the timestamp step between a table's consecutive rows. Zero: with a Rate, the
	// step at which each table's timestamps keep pace with the clock; else 1 ms.
	Step time.Duration
	Gen  Options
	// Rollup, if set, is the table the per-minute rollup of every events batch goes to
	// (RollupTable): this stream's partial rows, as an ingest pod writes them.
	Rollup string
	// WALVersion is the segment format version written (walwriter.Options.FormatVersion):
	// 1 for a WAL that drains older than version 2 still read; 0 is the current version.
	WALVersion int
	// OnSeal is told about every sealed segment (the demo counts them).
	OnSeal func(walwriter.SealedSegment)
}

// Result is what a run sealed.
type Result struct {
	Rows     int64 `json:"rows"`
	Segments int   `json:"segments"`
	Bytes    int64 `json:"bytes"`
	// RollupRows are the sealed rows of the rollup table (not in Rows).
	RollupRows int64 `json:"rollup_rows,omitempty"`
}

// Run writes generated rows into the WAL until Rows are written or ctx is done, then seals
// every open segment. each, when set, sees every batch before it is appended. The rows it returns
// are the rows sealed: nothing is counted that a crash of this process could lose.
func Run(ctx context.Context, o RunOptions, each func(table string, rec arrow.RecordBatch)) (Result, error) {
	clamp, err := o.complete()
	if err != nil {
		return Result{}, err
	}
	var res Result
	w, err := newWriter(o, &res)
	if err != nil {
		return res, err
	}
	gens := make([]*Generator, len(o.Tables))
	for i := range gens {
		opts := o.Gen
		opts.Seed += uint64(i) * 7919
		gens[i] = New(opts)
	}
	began := time.Now()
	var written int64
	ts := o.Start
	for i := 0; o.Rows == 0 || written < o.Rows; i++ {
		table, g := o.Tables[i%len(o.Tables)], gens[i%len(o.Tables)]
		if ctx.Err() != nil {
			break
		}
		n := int64(o.BatchRows)
		if o.Rows > 0 && o.Rows-written < n {
			n = o.Rows - written
		}
		if last := ts.Add(time.Duration(n-1) * o.Step); clamp && last.After(time.Now()) {
			ts = time.Now().UTC().Add(-time.Duration(n-1) * o.Step) // never a row from the future
		}
		rec := g.Batch(memory.DefaultAllocator, ts, int(n), o.Step)
		if each != nil {
			each(table, rec)
		}
		err := appendBatch(w, o.Rollup, table, rec)
		rec.Release()
		if err == nil {
			err = w.SealDue(time.Now())
		}
		if err != nil {
			w.Close()
			return res, err
		}
		written += n
		if (i+1)%len(o.Tables) == 0 {
			ts = ts.Add(time.Duration(n) * o.Step)
		}
		pace(ctx, began, written, o.Rate)
	}
	return res, w.Close()
}

// complete checks the table names and fills in the defaults: the tables, the batch size, the
// step and the start. clamp says the start was not given, so no row may be later than the clock.
func (o *RunOptions) complete() (clamp bool, err error) {
	if len(o.Tables) == 0 {
		o.Tables = []string{EventsTable}
	}
	names := o.Tables
	if o.Rollup != "" {
		names = append(names[:len(names):len(names)], o.Rollup)
	}
	for _, t := range names {
		if !localwal.ValidTable(t) {
			return false, fmt.Errorf("table %q: accepted names match ^[a-z][a-z0-9_]{0,127}$", t)
		}
	}
	if o.BatchRows <= 0 {
		o.BatchRows = 1000
	}
	tables := int64(len(o.Tables))
	if o.Step <= 0 {
		o.Step = time.Millisecond
		if o.Rate > 0 { // each table gets Rate/tables rows a second
			o.Step = max(time.Duration(tables*int64(time.Second)/o.Rate), time.Microsecond)
		}
	}
	clamp = o.Start.IsZero()
	if clamp {
		o.Start = time.Now().UTC()
		if o.Rows > 0 && o.Rate == 0 { // as fast as possible: the rows end now, not minutes ahead
			o.Start = o.Start.Add(-time.Duration((o.Rows+tables-1)/tables) * o.Step)
		}
	}
	return clamp, nil
}

// newWriter opens the WAL writer of a run; res counts what it seals.
func newWriter(o RunOptions, res *Result) (*walwriter.Writer, error) {
	return walwriter.New(o.WALDir, walwriter.Options{
		Stream: o.Stream, RollBytes: o.SegmentSize, RollAge: o.RollAge, FormatVersion: o.WALVersion,
		OnSeal: func(s walwriter.SealedSegment) {
			if s.Table == o.Rollup {
				res.RollupRows += s.Rows
				return
			}
			res.Rows += s.Rows
			res.Segments++
			res.Bytes += s.Size
			if o.OnSeal != nil {
				o.OnSeal(s)
			}
		},
	})
}

// appendBatch appends rec to table, and an events batch's rollup to the rollup table if set.
func appendBatch(w *walwriter.Writer, rollup, table string, rec arrow.RecordBatch) error {
	if err := w.Append(table, rec); err != nil || rollup == "" || table != EventsTable {
		return err
	}
	roll := Rollup(memory.DefaultAllocator, rec)
	defer roll.Release()
	return w.Append(rollup, roll)
}

// pace waits until written rows are due at rate rows a second since began (0: no wait), or ctx is
// done.
func pace(ctx context.Context, began time.Time, written, rate int64) {
	if rate <= 0 {
		return
	}
	due := began.Add(time.Duration(float64(written) / float64(rate) * float64(time.Second)))
	if d := time.Until(due); d > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
}
