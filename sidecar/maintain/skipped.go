package maintain

import (
	"context"
	"sort"
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

// Back-off of a bin after a transient failure: 30 s doubling to 30 min.
const (
	backoffMin = 30 * time.Second
	backoffMax = 30 * time.Minute
)

type backoff struct {
	until time.Time
	delay time.Duration
}

// binKey names a bin by its table and input files.
func binKey(table string, b plan.Bin) string {
	paths := make([]string, len(b.Files))
	for i, f := range b.Files {
		paths[i] = f.Path
	}
	sort.Strings(paths)
	return table + "\x00" + strings.Join(paths, "\x00")
}

// backingOff says whether the bin waits after a transient failure, and until when.
func (m *Maintainer) backingOff(key string, now time.Time) (time.Time, bool) {
	b, ok := m.backoff[key]
	return b.until, ok && now.Before(b.until)
}

func (m *Maintainer) succeeded(table, key string, b plan.Bin) {
	delete(m.backoff, key)
	for _, f := range b.Files {
		delete(m.failures, table+"\x00"+f.Path)
	}
}

// failed records a failed rewrite: back-off for a transient cause, a count against the blamed
// input for a permanent one, and the input set aside once the count reaches the limit.
func (m *Maintainer) failed(ctx context.Context, table, key string, b plan.Bin, out rewrite.Outcome, now time.Time) {
	if m.backoff == nil {
		m.backoff, m.failures = map[string]backoff{}, map[string]int{}
	}
	if !out.Class.Permanent() || out.Input == "" {
		d := min(max(m.backoff[key].delay*2, backoffMin), backoffMax)
		m.backoff[key] = backoff{until: now.Add(d), delay: d}
		return
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
	s := lake.Skipped{Path: out.Input, Class: string(out.Class), Cause: out.Err.Error(), At: now.UTC(), Failures: m.failures[k], Kind: b.Kind.String()}
	if err := m.Lake.SetSkipped(ctx, table, s); err != nil {
		m.Log.Error("could not record a file to set aside; it is tried again", zap.String("table", table), zap.String("path", out.Input), zap.Error(err))
		return
	}
	delete(m.failures, k)
	m.Log.Error("set a data file aside after failed rewrites: maintenance plans its partition without it until `siglake skipped clear`",
		zap.String("table", table), zap.String("partition", b.Partition), zap.String("path", out.Input), zap.String("cause_class", s.Class),
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
