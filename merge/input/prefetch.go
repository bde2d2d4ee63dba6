package input

import (
	"context"
	"sync"
)

// prefetchSource decodes the next batch of a source in its own goroutine
// while the merge consumes the current one, so decoding overlaps merging and
// encoding. It holds at most one batch beyond the one being merged: the
// channel is unbuffered, so the goroutine waits with its decoded batch.
type prefetchSource struct {
	src   Source
	ch    chan prefetched
	stop  chan struct{}
	done  chan struct{}
	ended bool
	once  sync.Once
}

type prefetched struct {
	b   Batch
	ok  bool
	err error
}

// NewPrefetch wraps src in a prefetchSource.
func NewPrefetch(ctx context.Context, src Source) Source {
	p := &prefetchSource{src: src, ch: make(chan prefetched), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer close(p.ch)
		for {
			select {
			case <-p.stop:
				return
			default:
			}
			var r prefetched
			func() {
				defer func() {
					if rec := recover(); rec != nil {
						r = prefetched{err: PanicError("decoding", rec)}
					}
				}()
				r.b, r.ok, r.err = src.Next(ctx)
			}()
			select {
			case p.ch <- r:
			case <-p.stop:
				if r.b.Rec != nil {
					r.b.Rec.Release()
				}
				return
			}
			if !r.ok || r.err != nil {
				return
			}
		}
	}()
	return p
}

func (p *prefetchSource) Next(ctx context.Context) (Batch, bool, error) {
	if p.ended {
		return Batch{}, false, nil
	}
	select {
	case r, open := <-p.ch:
		if !open || !r.ok || r.err != nil {
			p.ended = true
		}
		return r.b, r.ok && open, r.err
	case <-ctx.Done():
		return Batch{}, false, ctx.Err()
	}
}

// close stops the goroutine, releases what it decoded ahead, and closes the
// underlying source.
func (p *prefetchSource) Close() error {
	p.once.Do(func() { close(p.stop) })
	for r := range p.ch {
		if r.b.Rec != nil {
			r.b.Rec.Release()
		}
	}
	<-p.done
	return p.src.Close()
}
