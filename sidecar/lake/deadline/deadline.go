// Package deadline bounds every catalog commit attempt of a lake. Its Catalog runs each
// CommitTable under a deadline and abandons the attempt there (its outcome unknown), refuses new
// attempts on a table while an abandoned one is still in flight, and reports slow, timed-out and
// answered attempts to a watcher as events: it neither logs nor counts.
package deadline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// DefaultCommitTimeout bounds one catalog commit attempt (--commit-timeout). A commit that hangs
// (a held SQLite write lock, a catalog that accepts the request and never answers) would otherwise
// hold its batch, and its files, for as long as the catalog likes; and gc's age floor
// (orphans.DefaultMinAge) can only protect files whose commit ends within a known time.
const DefaultCommitTimeout = 2 * time.Minute

// slowFraction of the deadline is when a commit still running is reported slow, so a hung
// commit is visible before it is abandoned.
const slowFraction = 0.5

// ErrCommitDeadline marks a commit attempt abandoned at its deadline. Its outcome is unknown: the
// catalog may still apply it, so IsCommitStateUnknown holds, its files are kept, and the retry
// re-reads what it would have changed (the stream mark) before committing again.
var ErrCommitDeadline = errors.New("commit abandoned at its deadline (--commit-timeout / SIGLAKE_COMMIT_TIMEOUT); its outcome is unknown")

// CommitPhase says what a CommitEvent reports.
type CommitPhase int

const (
	// CommitSlow: the commit is still running past half its deadline.
	CommitSlow CommitPhase = iota
	// CommitTimedOut: the commit was abandoned at its deadline (ErrCommitDeadline).
	CommitTimedOut
	// CommitDone: the catalog answered, Err says how (nil: applied).
	CommitDone
	// CommitAbandonedEnded: an abandoned attempt's call into the catalog returned at last (Err:
	// its late answer); Abandoned says how many are still in flight.
	CommitAbandonedEnded
)

// ErrAbandonedInFlight refuses a commit attempt on a table that still has an abandoned attempt in
// flight: nothing is sent, the caller retries later (its backoff). Attempts on a hung table would
// otherwise pile up one goroutine (and catalog connection) per deadline.
var ErrAbandonedInFlight = errors.New("an abandoned commit to this table is still in flight (siglake_catalog_commits_abandoned_inflight); retry later")

// CommitEvent is what the Catalog tells its watcher about one commit attempt. The Catalog
// neither logs nor counts: the process's observer turns events into log lines and metrics.
type CommitEvent struct {
	Table    string
	Phase    CommitPhase
	Elapsed  time.Duration
	Deadline time.Duration
	Err      error // CommitDone: the catalog's answer; CommitTimedOut: ErrCommitDeadline
	// Abandoned is the number of abandoned attempts still in flight, over all tables, after this
	// event (CommitTimedOut and CommitAbandonedEnded).
	Abandoned int
}

// Catalog is the catalog every table of a lake commits through: each CommitTable runs under the
// commit deadline. It is the one place commits are bounded, whoever makes them (drain appends,
// replaces, property updates, claims, expiry), because every table it loads or creates is bound
// to it. The embedded catalog is the inner one; a test may wrap it (the deadline stays outermost).
type Catalog struct {
	catalog.Catalog
	timeout atomic.Int64 // nanoseconds; <= 0 means DefaultCommitTimeout
	watch   atomic.Pointer[func(CommitEvent)]

	mu sync.Mutex
	// abandoned counts, per table, attempts abandoned whose call into the catalog has not returned.
	abandoned map[string]int
	inFlight  int
}

// New bounds the commits of inner by timeout (0: DefaultCommitTimeout).
func New(inner catalog.Catalog, timeout time.Duration) *Catalog {
	c := &Catalog{Catalog: inner}
	c.timeout.Store(int64(timeout))
	return c
}

// abandon records an abandoned attempt on key until done delivers its late answer.
func (c *Catalog) abandon(key, name string, start time.Time, d time.Duration, done <-chan commitAnswer) int {
	c.mu.Lock()
	if c.abandoned == nil {
		c.abandoned = map[string]int{}
	}
	c.abandoned[key]++
	c.inFlight++
	n := c.inFlight
	c.mu.Unlock()
	go func() {
		a := <-done
		c.mu.Lock()
		if c.abandoned[key]--; c.abandoned[key] <= 0 {
			delete(c.abandoned, key)
		}
		c.inFlight--
		n := c.inFlight
		c.mu.Unlock()
		c.report(CommitEvent{Table: name, Phase: CommitAbandonedEnded, Elapsed: time.Since(start), Deadline: d, Err: a.err, Abandoned: n})
	}()
	return n
}

// AbandonedInFlight is the number of abandoned commit attempts still in flight.
func (c *Catalog) AbandonedInFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inFlight
}

// Timeout is the deadline each commit attempt runs under.
func (c *Catalog) Timeout() time.Duration {
	if d := time.Duration(c.timeout.Load()); d > 0 {
		return d
	}
	return DefaultCommitTimeout
}

func (c *Catalog) report(ev CommitEvent) {
	if w := c.watch.Load(); w != nil {
		(*w)(ev)
	}
}

// bind makes t commit through c (the inner catalog bound it to itself).
func (c *Catalog) bind(t *table.Table, err error) (*table.Table, error) {
	if err != nil || t == nil {
		return t, err
	}
	return table.New(t.Identifier(), t.Metadata(), t.MetadataLocation(), t.FS, c), nil
}

func (c *Catalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	return c.bind(c.Catalog.LoadTable(ctx, id))
}

func (c *Catalog) CreateTable(ctx context.Context, id table.Identifier, sc *iceberg.Schema, opts ...catalog.CreateTableOpt) (*table.Table, error) {
	return c.bind(c.Catalog.CreateTable(ctx, id, sc, opts...))
}

type commitAnswer struct {
	md  table.Metadata
	loc string
	err error
}

// CommitTable runs the inner commit under the deadline. The inner call runs on its own goroutine
// with the deadline's context, and at the deadline the attempt is abandoned even if the catalog
// does not heed the context (a SQLite busy wait): the caller gets ErrCommitDeadline at once, and
// a commit that lands later is one of unknown outcome, which the callers already handle.
func (c *Catalog) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	d := c.Timeout()
	name := id[len(id)-1]
	key := strings.Join(id, ".")
	c.mu.Lock()
	busy := c.abandoned[key] > 0
	c.mu.Unlock()
	if busy {
		return nil, "", fmt.Errorf("commit to %s: %w", name, ErrAbandonedInFlight)
	}
	start := time.Now()
	cctx, cancel := context.WithTimeoutCause(ctx, d, ErrCommitDeadline)
	defer cancel()
	slow := time.AfterFunc(time.Duration(float64(d)*slowFraction), func() {
		c.report(CommitEvent{Table: name, Phase: CommitSlow, Elapsed: time.Since(start), Deadline: d})
	})
	defer slow.Stop()
	done := make(chan commitAnswer, 1)
	inner := c.Catalog
	go func() {
		md, loc, err := inner.CommitTable(cctx, id, reqs, ups)
		done <- commitAnswer{md, loc, err}
	}()
	select {
	case a := <-done:
		slow.Stop()
		if a.err != nil && errors.Is(context.Cause(cctx), ErrCommitDeadline) {
			// The catalog heeded the deadline: the same abandoned attempt as below.
			break
		}
		c.report(CommitEvent{Table: name, Phase: CommitDone, Elapsed: time.Since(start), Deadline: d, Err: a.err})
		return a.md, a.loc, a.err
	case <-cctx.Done():
		if !errors.Is(context.Cause(cctx), ErrCommitDeadline) {
			// The caller gave up (shutdown): not a deadline, but still an unknown outcome.
			c.abandon(key, name, start, d, done)
			return nil, "", fmt.Errorf("commit to %s: %w", name, ctx.Err())
		}
		n := c.abandon(key, name, start, d, done)
		elapsed := time.Since(start)
		err := fmt.Errorf("commit to %s after %s: %w", name, elapsed.Round(time.Millisecond), ErrCommitDeadline)
		c.report(CommitEvent{Table: name, Phase: CommitTimedOut, Elapsed: elapsed, Deadline: d, Err: err, Abandoned: n})
		return nil, "", err
	}
	// The catalog heeded the deadline: its call has returned, nothing is left in flight.
	elapsed := time.Since(start)
	err := fmt.Errorf("commit to %s after %s: %w", name, elapsed.Round(time.Millisecond), ErrCommitDeadline)
	c.mu.Lock()
	n := c.inFlight
	c.mu.Unlock()
	c.report(CommitEvent{Table: name, Phase: CommitTimedOut, Elapsed: elapsed, Deadline: d, Err: err, Abandoned: n})
	return nil, "", err
}

// Close closes the inner catalog when it has connections of its own.
func (c *Catalog) Close() error {
	if cl, ok := c.Catalog.(interface{ Close() error }); ok {
		return cl.Close()
	}
	return nil
}

// Watch makes watch see every commit attempt's slow, timed-out and done events (the process's
// observer); nil stops it. watch runs on the committing goroutine or a timer's, so it must be
// quick and safe for concurrent use.
func (c *Catalog) Watch(watch func(CommitEvent)) {
	if watch == nil {
		c.watch.Store(nil)
		return
	}
	c.watch.Store(&watch)
}

// SetTimeout changes the commit deadline (0: DefaultCommitTimeout) for the commits that start
// from now on.
func (c *Catalog) SetTimeout(d time.Duration) { c.timeout.Store(int64(d)) }
