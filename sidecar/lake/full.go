package lake

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/siglake/siglake/sidecar/lake/backoff"
	"github.com/siglake/siglake/sidecar/lake/catalogs"
)

// A catalog with no connection left (catalogs.IsFull: PostgreSQL's 53300) refused the call
// before running anything, and frees connections as other clients finish: a fleet of pods that
// all reach for it at once (a committer gone quiet, a catalog restart) must wait, spread, rather
// than fail batches or a successor committer's first commit. Every such call is repeated after
// fullBackoff, 100 ms doubling to 5 s with equal jitter, for at most the commit timeout in all;
// then its error is returned as before.
var fullBackoff = backoff.Policy{Min: 100 * time.Millisecond, Max: 5 * time.Second, Factor: 2, Jitter: backoff.EqualJitter}

// FullEvent is one wait after the catalog refused a connection: what the call was (load, commit,
// open), the refusal, and the wait before the call is made again.
type FullEvent struct {
	Op   string
	Err  error
	Wait time.Duration
}

// WatchFull makes watch see every wait for a full catalog (a metric, a log line); nil stops it.
func (l *Lake) WatchFull(watch func(FullEvent)) {
	if watch == nil {
		l.full.Store(nil)
		return
	}
	l.full.Store(&watch)
}

// fullWait is one call's waits for a full catalog: at most limit (the commit timeout) in all.
type fullWait struct {
	op     string
	limit  time.Duration
	watch  func(FullEvent) // nil: not watched
	n      int
	waited time.Duration
}

func (l *Lake) fullWait(op string) *fullWait {
	w := &fullWait{op: op, limit: l.CommitTimeout()}
	if f := l.full.Load(); f != nil {
		w.watch = *f
	}
	return w
}

// again reports whether the call that failed with err should be made again, after waiting: only
// when the catalog was full and the budget is not spent. A done ctx ends the wait with false.
func (w *fullWait) again(ctx context.Context, err error) bool {
	if !catalogs.IsFull(err) || w.waited >= w.limit {
		return false
	}
	w.n++
	d := fullBackoff.Wait(w.n, rand.Int64N)
	if w.watch != nil {
		w.watch(FullEvent{Op: w.op, Err: err, Wait: d})
	}
	w.waited += d
	return backoff.Sleep(ctx, d) == nil
}

// untilNotFull runs call, again while the catalog is full (fullWait).
func untilNotFull[T any](ctx context.Context, l *Lake, op string, call func() (T, error)) (T, error) {
	w := l.fullWait(op)
	for {
		v, err := call()
		if err == nil || !w.again(ctx, err) {
			return v, err
		}
	}
}
