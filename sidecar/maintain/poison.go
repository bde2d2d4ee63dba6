package maintain

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/plan/level"
	"github.com/siglake/siglake/sidecar/rewrite"
)

// Poison inputs. A rewrite that fails on a transient cause (store, network) is retried with
// per-bin exponential back-off, not every tick. One that fails on a permanent cause (a corrupt,
// truncated, missing or unreadable input) counts against the input it blames; at
// SIGLAKE_COMPACTOR_SKIP_AFTER_FAILURES the input is set aside in the table's properties
// (lake.SetSkipped), and the planner plans its partition without it (IOx's skipped_compactions).

// Back-off of a bin after a transient failure: 30 s (SIGLAKE_COMPACTOR_FAILURE_BACKOFF_SECS)
// doubling to 30 min.
const (
	backoffMin = 30 * time.Second
	backoffMax = 30 * time.Minute
)

type backoff struct {
	until time.Time
	delay time.Duration
}

// binKey names the work a bin belongs to: its table, partition and kind. Not its exact files: a
// bin that gains a newly drained file must not escape the back-off of the one that failed.
func binKey(table string, b level.Bin) string {
	return table + "\x00" + b.Partition + "\x00" + b.Kind.String()
}

// poison is the executor's failure bookkeeping.
type poison struct {
	// backoff holds bins whose last rewrite failed transiently (binKey).
	backoff map[string]backoff
	// failures counts permanent rewrite failures per table and blamed input (table NUL path);
	// mu guards it: delete tasks and retention count into it too.
	mu       sync.Mutex
	failures map[string]int
}

// prune forgets back-offs long past and the failure counts of files no longer live in
// table (live nil: every count of table, which this process no longer maintains).
func (p *poison) prune(table string, live map[string]lake.File, now time.Time) {
	for k, b := range p.backoff {
		t, _, _ := strings.Cut(k, "\x00")
		if now.After(b.until.Add(backoffMax)) || live == nil && t == table {
			delete(p.backoff, k)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.failures {
		t, path, _ := strings.Cut(k, "\x00")
		if t != table {
			continue
		}
		if _, ok := live[path]; !ok {
			delete(p.failures, k)
		}
	}
}

// backingOff says whether the bin waits after a transient failure, and until when.
func (p *poison) backingOff(key string, now time.Time) (time.Time, bool) {
	b, ok := p.backoff[key]
	return b.until, ok && now.Before(b.until)
}

func (p *poison) succeeded(table, key string, b level.Bin) {
	delete(p.backoff, key)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range b.Files {
		delete(p.failures, table+"\x00"+f.Path)
	}
}

// failed records a failed rewrite: back-off for a transient cause, a count against the blamed
// input for a permanent one, and the input set aside once the count reaches the limit.
func (e *executor) failed(ctx context.Context, table, key string, b level.Bin, out rewrite.Outcome, now time.Time) {
	p := &e.poison
	if p.backoff == nil {
		p.backoff = map[string]backoff{}
	}
	first := e.set.Cfg.FailureBackoff
	if first <= 0 {
		first = backoffMin
	}
	if !out.Class.Permanent() || out.Input == "" {
		d := min(max(p.backoff[key].delay*2, first), backoffMax)
		p.backoff[key] = backoff{until: now.Add(d), delay: d}
		return
	}
	// A permanent failure waits too (not doubling): the failures that set a file aside then span
	// minutes, not three ticks, in case the "permanent" cause was not.
	p.backoff[key] = backoff{until: now.Add(first), delay: first}
	e.countPermanent(ctx, table, b.Partition, b.Kind.String(), out, now)
}

// readFailed is rewrite.FailureFunc for the delete tasks and retention: they run at their own
// cadence (no back-off here), but their permanent failures count against the input like a bin's.
func (e *executor) readFailed(ctx context.Context, table string, job rewrite.Job, out rewrite.Outcome) {
	if out.Class.Permanent() && out.Input != "" {
		e.countPermanent(ctx, table, job.Partition, job.Kind, out, e.set.Now())
	}
}

// countPermanent counts a permanent failure against the input it blames and sets the input aside
// at the limit.
func (e *executor) countPermanent(ctx context.Context, table, partition, kind string, out rewrite.Outcome, now time.Time) {
	p := &e.poison
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failures == nil {
		p.failures = map[string]int{}
	}
	limit := e.set.Cfg.SkipAfterFailures
	if limit <= 0 {
		limit = 3
	}
	k := table + "\x00" + out.Input
	p.failures[k]++
	if p.failures[k] < limit {
		return
	}
	s := lake.Skipped{Path: out.Input, Class: string(out.Class), Cause: out.Err.Error(), At: now.UTC(), Failures: p.failures[k], Kind: kind}
	err := e.set.Lake.SetSkipped(ctx, table, s)
	e.obs.setAside(table, partition, s, err)
	if err == nil {
		delete(p.failures, k)
	}
}

// dropStaleSkipped removes the set-aside records of files no longer live (retention or a delete
// task dropped them, or another tool replaced them): nothing is left to skip.
func (e *executor) dropStaleSkipped(ctx context.Context, table string, skipped map[string]lake.Skipped, live map[string]lake.File) {
	var gone []string
	for p := range skipped {
		if _, ok := live[p]; !ok {
			gone = append(gone, p)
		}
	}
	if len(gone) == 0 {
		return
	}
	_, err := e.set.Lake.ClearSkipped(ctx, table, gone)
	e.obs.staleSkipped(table, err)
}
