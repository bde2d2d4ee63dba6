package merge

import (
	"context"
	"sync"
)

// prefetchSource decodes the next batch of a source in its own goroutine
// while the merge consumes the current one, so decoding overlaps merging and
// encoding. It holds at most one batch beyond the one being merged: the
// channel is unbuffered, so the goroutine waits with its decoded batch.
type prefetchSource struct {
	src   source
	ch    chan prefetched
	stop  chan struct{}
	done  chan struct{}
	ended bool
	once  sync.Once
}

type prefetched struct {
	b   batch
	ok  bool
	err error
}

func newPrefetchSource(ctx context.Context, src source) *prefetchSource {
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
						r = prefetched{err: panicError("decoding", rec)}
					}
				}()
				r.b, r.ok, r.err = src.next(ctx)
			}()
			select {
			case p.ch <- r:
			case <-p.stop:
				if r.b.rec != nil {
					r.b.rec.Release()
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

func (p *prefetchSource) next(ctx context.Context) (batch, bool, error) {
	if p.ended {
		return batch{}, false, nil
	}
	select {
	case r, open := <-p.ch:
		if !open || !r.ok || r.err != nil {
			p.ended = true
		}
		return r.b, r.ok && open, r.err
	case <-ctx.Done():
		return batch{}, false, ctx.Err()
	}
}

// close stops the goroutine, releases what it decoded ahead, and closes the
// underlying source.
func (p *prefetchSource) close() error {
	p.once.Do(func() { close(p.stop) })
	for r := range p.ch {
		if r.b.rec != nil {
			r.b.rec.Release()
		}
	}
	<-p.done
	return p.src.close()
}
