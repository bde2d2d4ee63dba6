package writer

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/siglake/siglake/merge/input"
)

// AsyncSink runs a sink's encoding in its own goroutine, so decoding and
// merging (the caller) overlap with Parquet encoding and compression. Two
// chunks may be in flight, which bounds the extra memory.
type AsyncSink struct {
	s    *Sink
	ch   chan arrow.RecordBatch
	done chan struct{}
	err  error // set by the goroutine before done closes
	once sync.Once
}

func NewAsyncSink(ctx context.Context, s *Sink) *AsyncSink {
	a := &AsyncSink{s: s, ch: make(chan arrow.RecordBatch, 2), done: make(chan struct{})}
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
				a.err = s.Write(ctx, rec)
			}
			rec.Release()
		}
	}()
	return a
}

// write hands rec (retained here, released by the goroutine) to the encoder.
func (a *AsyncSink) Write(ctx context.Context, rec arrow.RecordBatch) error {
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
func (a *AsyncSink) wait() error {
	a.once.Do(func() { close(a.ch) })
	<-a.done
	return a.err
}

// finish waits for the encoder, then closes the last file.
func (a *AsyncSink) Finish() ([]Output, error) {
	if err := a.wait(); err != nil {
		return nil, errors.Join(err, a.s.Abort())
	}
	return a.s.Finish()
}

// abort waits for the encoder and removes every file written.
func (a *AsyncSink) Abort() error {
	_ = a.wait()
	return a.s.Abort()
}

// RecoverAbort turns a panic in the Parquet decoder (corrupt input it did not
// validate) into an error, removing the outputs of s. A panic on input is a
// bug, but one in a dependency must not take the sidecar down.
func RecoverAbort(err *error, s interface{ Abort() error }) {
	r := recover()
	if r == nil {
		return
	}
	*err = input.PanicError("decoding or encoding", r)
	if s != nil && !isNilSink(s) {
		*err = errors.Join(*err, s.Abort())
	}
}

func isNilSink(s interface{ Abort() error }) bool {
	switch v := s.(type) {
	case *Sink:
		return v == nil
	case *AsyncSink:
		return v == nil
	}
	return false
}
