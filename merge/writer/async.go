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
	ch   chan asyncItem
	done chan struct{}
	err  error // set by the goroutine before done closes
	once sync.Once
}

func NewAsyncSink(ctx context.Context, s *Sink) *AsyncSink {
	a := &AsyncSink{s: s, ch: make(chan asyncItem, 2), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		defer func() {
			if r := recover(); r != nil {
				a.err = fmt.Errorf("merge aborted by a panic while encoding: %v", r)
				for it := range a.ch {
					it.release()
				}
			}
		}()
		for it := range a.ch {
			if a.err == nil {
				a.err = it.write(ctx, s)
			}
			it.release()
		}
	}()
	return a
}

// asyncItem is one chunk for the encoder: an Arrow record or parquet-go values.
type asyncItem struct {
	rec  arrow.RecordBatch
	vals *ValueChunk
}

func (it asyncItem) write(ctx context.Context, s *Sink) error {
	if it.vals != nil {
		return s.WriteValues(ctx, it.vals)
	}
	return s.Write(ctx, it.rec)
}

func (it asyncItem) release() {
	if it.rec != nil {
		it.rec.Release()
	}
}

// WriteValues hands vc to the encoder, which owns it from here on.
func (a *AsyncSink) WriteValues(ctx context.Context, vc *ValueChunk) error {
	return a.send(ctx, asyncItem{vals: vc})
}

// write hands rec (retained here, released by the goroutine) to the encoder.
func (a *AsyncSink) Write(ctx context.Context, rec arrow.RecordBatch) error {
	rec.Retain()
	return a.send(ctx, asyncItem{rec: rec})
}

func (a *AsyncSink) send(ctx context.Context, it asyncItem) error {
	select {
	case a.ch <- it:
		return nil
	case <-a.done:
		it.release()
		return a.err
	case <-ctx.Done():
		it.release()
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
