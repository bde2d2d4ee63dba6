package merge

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
)

// asyncSink runs a sink's encoding in its own goroutine, so decoding and
// merging (the caller) overlap with Parquet encoding and compression. Two
// chunks may be in flight, which bounds the extra memory.
type asyncSink struct {
	s    *sink
	ch   chan arrow.RecordBatch
	done chan struct{}
	err  error // set by the goroutine before done closes
	once sync.Once
}

func newAsyncSink(ctx context.Context, s *sink) *asyncSink {
	a := &asyncSink{s: s, ch: make(chan arrow.RecordBatch, 2), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		defer func() {
			if r := recover(); r != nil {
				a.err = fmt.Errorf("merge aborted by a panic while encoding: %v", r)
				for rec := range a.ch {
					rec.Release()
				}
			}
		}()
		for rec := range a.ch {
			if a.err == nil {
				a.err = s.write(ctx, rec)
			}
			rec.Release()
		}
	}()
	return a
}

// write hands rec (retained here, released by the goroutine) to the encoder.
func (a *asyncSink) write(ctx context.Context, rec arrow.RecordBatch) error {
	rec.Retain()
	select {
	case a.ch <- rec:
		return nil
	case <-a.done:
		rec.Release()
		return a.err
	case <-ctx.Done():
		rec.Release()
		return ctx.Err()
	}
}

// wait stops the goroutine after it has encoded everything sent.
func (a *asyncSink) wait() error {
	a.once.Do(func() { close(a.ch) })
	<-a.done
	return a.err
}

// finish waits for the encoder, then closes the last file.
func (a *asyncSink) finish() ([]Output, error) {
	if err := a.wait(); err != nil {
		return nil, errors.Join(err, a.s.abort())
	}
	return a.s.finish()
}

// abort waits for the encoder and removes every file written.
func (a *asyncSink) abort() error {
	_ = a.wait()
	return a.s.abort()
}
