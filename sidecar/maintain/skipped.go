package maintain

import (
	"context"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/plan"
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
func binKey(table string, b plan.Bin) string {
	return table + "\x00" + b.Partition + "\x00" + b.Kind.String()
}

// pruneFailures forgets back-offs long past and the failure counts of files no longer live in
// table (live nil: every count of table, which this process no longer maintains).
func (m *Maintainer) pruneFailures(table string, live map[string]lake.File, now time.Time) {
	for k, b := range m.backoff {
		t, _, _ := strings.Cut(k, "\x00")
		if now.After(b.until.Add(backoffMax)) || live == nil && t == table {
			delete(m.backoff, k)
		}
	}
	m.failMu.Lock()
	defer m.failMu.Unlock()
	for k := range m.failures {
		t, path, _ := strings.Cut(k, "\x00")
		if t != table {
			continue
		}
		if _, ok := live[path]; !ok {
			delete(m.failures, k)
		}
	}
}

// backingOff says whether the bin waits after a transient failure, and until when.
func (m *Maintainer) backingOff(key string, now time.Time) (time.Time, bool) {
	b, ok := m.backoff[key]
	return b.until, ok && now.Before(b.until)
}

func (m *Maintainer) succeeded(table, key string, b plan.Bin) {
	delete(m.backoff, key)
	m.failMu.Lock()
	defer m.failMu.Unlock()
	for _, f := range b.Files {
		delete(m.failures, table+"\x00"+f.Path)
	}
}

// failed records a failed rewrite: back-off for a transient cause, a count against the blamed
// input for a permanent one, and the input set aside once the count reaches the limit.
func (m *Maintainer) failed(ctx context.Context, table, key string, b plan.Bin, out rewrite.Outcome, now time.Time) {
	if m.backoff == nil {
		m.backoff = map[string]backoff{}
	}
	first := m.Cfg.FailureBackoff
	if first <= 0 {
		first = backoffMin
	}
	if !out.Class.Permanent() || out.Input == "" {
		d := min(max(m.backoff[key].delay*2, first), backoffMax)
		m.backoff[key] = backoff{until: now.Add(d), delay: d}
		return
	}
	// A permanent failure waits too (not doubling): the failures that set a file aside then span
	// minutes, not three ticks, in case the "permanent" cause was not.
	m.backoff[key] = backoff{until: now.Add(first), delay: first}
	m.countPermanent(ctx, table, b.Partition, b.Kind.String(), out, now)
}

// readFailed is rewrite.FailureFunc for the delete tasks and retention: they run at their own
// cadence (no back-off here), but their permanent failures count against the input like a bin's.
func (m *Maintainer) readFailed(ctx context.Context, table string, job rewrite.Job, out rewrite.Outcome) {
	if out.Class.Permanent() && out.Input != "" {
		m.countPermanent(ctx, table, job.Partition, job.Kind, out, m.Now())
	}
}

// countPermanent counts a permanent failure against the input it blames and sets the input aside
// at the limit.
func (m *Maintainer) countPermanent(ctx context.Context, table, partition, kind string, out rewrite.Outcome, now time.Time) {
	m.failMu.Lock()
	defer m.failMu.Unlock()
	if m.failures == nil {
		m.failures = map[string]int{}
	}
	limit := m.Cfg.SkipAfterFailures
	if limit <= 0 {
		limit = 3
	}
	k := table + "\x00" + out.Input
	m.failures[k]++
	if m.failures[k] < limit {
		return
	}
	s := lake.Skipped{Path: out.Input, Class: string(out.Class), Cause: out.Err.Error(), At: now.UTC(), Failures: m.failures[k], Kind: kind}
	if err := m.Lake.SetSkipped(ctx, table, s); err != nil {
		m.Log.Error("could not record a file to set aside; it is tried again", zap.String("table", table), zap.String("path", out.Input), zap.Error(err))
		return
	}
	delete(m.failures, k)
	m.Log.Error("set a data file aside after failed rewrites: maintenance plans its partition without it until `siglake skipped clear`",
		zap.String("table", table), zap.String("partition", partition), zap.String("path", out.Input), zap.String("cause_class", s.Class),
		zap.Int("failures", s.Failures), zap.String("cause", s.Cause))
}

// publishSkipped shows a table's set-aside files that are still live (gauge and status).
func (m *Maintainer) publishSkipped(table string, skipped map[string]lake.Skipped, live map[string]lake.File) {
	var list []lake.Skipped
	for _, s := range lake.SortedSkipped(skipped) {
		if _, ok := live[s.Path]; ok {
			list = append(list, s)
		}
	}
	m.Metrics.SkippedFiles.WithLabelValues(table).Set(float64(len(list)))
	m.edit(table, func(st *State) { st.Skipped = list })
}

// dropStaleSkipped removes the set-aside records of files no longer live (retention or a delete
// task dropped them, or another tool replaced them): nothing is left to skip.
func (m *Maintainer) dropStaleSkipped(ctx context.Context, table string, skipped map[string]lake.Skipped, live map[string]lake.File) {
	var gone []string
	for p := range skipped {
		if _, ok := live[p]; !ok {
			gone = append(gone, p)
		}
	}
	if len(gone) == 0 {
		return
	}
	if _, err := m.Lake.ClearSkipped(ctx, table, gone); err != nil {
		m.Log.Warn("could not drop set-aside records of files no longer live; next pass retries", zap.String("table", table), zap.Error(err))
	}
}
