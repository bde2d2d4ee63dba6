package maintain

import (
	"context"
	"slices"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/fold"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/plan/level"
	"github.com/siglake/siglake/sidecar/puffinidx"
	"github.com/siglake/siglake/sidecar/retention"
	"github.com/siglake/siglake/sidecar/rewrite"
)

// observer turns what the driver and the executor return into metrics, /debug/status and log
// lines. It publishes each table's state as a value it never writes again.
type observer struct {
	set *Maintainer // the settings (exported fields), read when used
	// published is each table's last published state.
	published map[string]*State
	// reported are the owned tables of the last cycle: their per-table gauges are exported.
	reported map[string]bool
	// outstanding is each owned table's outstanding work as its last pass found it.
	outstanding map[string]plan.Work
}

func (o *observer) error(stage, table string, err error) {
	if o.set.Publish != nil {
		o.set.Publish.Error(o.set.Now(), stage, table, err)
	}
}

// edit publishes a new state of table: a copy of the last one that f changes. The last one may be
// being encoded by /debug/status, so it is never written.
func (o *observer) edit(table string, f func(st *State)) {
	var st State
	if prev := o.published[table]; prev != nil {
		st = *prev
	}
	if st.IndexRebuild != nil {
		rb := *st.IndexRebuild
		st.IndexRebuild = &rb
	}
	f(&st)
	if o.published == nil {
		o.published = map[string]*State{}
	}
	o.published[table] = &st
	if o.set.Publish != nil {
		o.set.Publish.Maintenance(table, &st)
	}
}

// cycle turns a cycle's report into metrics, status and log lines.
func (o *observer) cycle(rep CycleReport) {
	m := o.set.Metrics
	switch rep.Decision {
	case plan.DecisionSkippedBackpressure.String():
		m.SkippedBackpressure.Inc()
	case plan.DecisionThrottledBackpressure.String():
		m.ThrottledBackpressure.Inc()
	}
	if len(rep.Expired) > 0 {
		m.Expirations.WithLabelValues("ok").Add(float64(len(rep.Expired)))
	}
	if rep.Succeeded {
		m.LastSuccess.WithLabelValues().Set(float64(o.set.Now().UnixNano()) / 1e9)
	}
	for _, e := range rep.TableErrors {
		if o.set.Publish != nil {
			o.set.Publish.Error(e.At, e.Stage, e.Table, e.Err)
		}
		switch e.Stage {
		case "expire":
			m.Expirations.WithLabelValues("failed").Inc()
			o.set.Log.Warn("snapshot expiry failed", zap.String("table", e.Table), zap.Error(e.Err))
		case "retention": // the runner logged it
		default:
			o.set.Log.Warn("maintenance of table failed", zap.String("table", e.Table), zap.Error(e.Err))
		}
	}
}

// pass records a table's pass: its outstanding work and its report in /debug/status.
func (o *observer) pass(name string, now time.Time, pass plan.TablePass, run passRun, rep *CycleReport) {
	report := &PassReport{Time: now, Decision: pass.Decision.String(),
		Skipped: append(slices.Clip(pass.Skipped), run.skipped...), TimeLimitSeconds: pass.TimeLimit.Seconds(), Bins: run.bins}
	o.outstandingWork(name, pass, run.committed, report, rep)
	o.publishPass(name, report)
}

// publishPass shows a table's last pass in /debug/status and keeps its committed rewrites among
// the recent ones.
func (o *observer) publishPass(name string, report *PassReport) {
	o.edit(name, func(st *State) {
		st.LastPass = report
		var recent []RecentRewrite // a new slice: the published one may be being encoded
		for i := len(report.Bins) - 1; i >= 0; i-- {
			if report.Bins[i].Result == "committed" {
				recent = append(recent, RecentRewrite{Time: report.Time, BinReport: report.Bins[i]})
			}
		}
		if len(recent) > 0 {
			recent = append(recent, st.RecentRewrites...)
			st.RecentRewrites = recent[:min(len(recent), maxRecentRewrites)]
		}
	})
}

// outstandingWork sets the table's outstanding-work gauges (like Tempo's
// tempodb_compaction_outstanding_blocks), and the pass report's fields, from the work the planner
// found due (plan.TablePass.Outstanding) less what this pass committed: the bins that did not commit
// (failed, lost to a conflict, not started) and the ones the budgets deferred; in a backlogged
// cycle, what an unrestricted pass would do. When no check was due the gauges keep the last pass's
// values; with rewrites disabled nothing is outstanding.
func (o *observer) outstandingWork(name string, pass plan.TablePass, committed plan.Work, report *PassReport, rep *CycleReport) {
	if o.outstanding == nil {
		o.outstanding = map[string]plan.Work{}
	}
	w := o.outstanding[name]
	if pass.OutstandingKnown {
		w = pass.Outstanding.Less(committed)
	}
	o.outstanding[name] = w
	o.set.Metrics.OutstandingBins.WithLabelValues(name).Set(float64(w.Bins))
	o.set.Metrics.OutstandingBytes.WithLabelValues(name).Set(float64(w.Bytes))
	report.OutstandingBins, report.OutstandingBytes = w.Bins, w.Bytes
	rep.OutstandingBins += w.Bins
	rep.OutstandingBytes += w.Bytes
}

// sampleGauges publishes a table's overlap depth and live files and bytes per level.
func (o *observer) sampleGauges(name string, files []level.File, now time.Time) {
	parts := Partitions(files, o.set.Plan)
	depth := 0
	for _, p := range parts {
		depth = max(depth, p.OverlapDepth)
	}
	count := map[string]int{}
	bytes := map[string]int{}
	for l := level.L0; l < level.NumLevels; l++ {
		count[l.String()], bytes[l.String()] = 0, 0
	}
	for _, f := range files {
		l := o.set.Plan.LevelOf(f.SizeBytes).String()
		count[l]++
		bytes[l] += int(f.SizeBytes)
	}
	m := o.set.Metrics
	m.OverlapDepth.WithLabelValues(name).Set(float64(depth))
	for l, n := range count {
		m.LiveFiles.WithLabelValues(name, l).Set(float64(n))
		m.LiveBytes.WithLabelValues(name, l).Set(float64(bytes[l]))
	}
	m.GaugesSampledAt.WithLabelValues(name).Set(float64(now.UnixNano()) / 1e9)
	o.edit(name, func(st *State) {
		st.SampledAt, st.OverlapDepth = now, depth
		st.FilesPerLevel, st.BytesPerLevel = count, bytes
		st.Partitions = capFiles(parts, maxPageFiles, maxPageTableFiles)
	})
}

// publishSkipped shows a table's set-aside files that are still live (gauge and status).
func (o *observer) publishSkipped(table string, skipped map[string]lake.Skipped, live map[string]lake.File) {
	var list []lake.Skipped
	for _, s := range lake.SortedSkipped(skipped) {
		if _, ok := live[s.Path]; ok {
			list = append(list, s)
		}
	}
	o.set.Metrics.SkippedFiles.WithLabelValues(table).Set(float64(len(list)))
	o.edit(table, func(st *State) { st.Skipped = list })
}

// setAside logs a permanent failure's input set aside (err nil) or the failed attempt to.
func (o *observer) setAside(table, partition string, s lake.Skipped, err error) {
	if err != nil {
		o.set.Log.Error("could not record a file to set aside; it is tried again", zap.String("table", table), zap.String("path", s.Path), zap.Error(err))
		return
	}
	o.set.Log.Error("set a data file aside after failed rewrites: maintenance plans its partition without it until `siglake skipped clear`",
		zap.String("table", table), zap.String("partition", partition), zap.String("path", s.Path), zap.String("cause_class", s.Class),
		zap.Int("failures", s.Failures), zap.String("cause", s.Cause))
}

// staleSkipped logs a failed clean-up of set-aside records.
func (o *observer) staleSkipped(table string, err error) {
	if err != nil {
		o.set.Log.Warn("could not drop set-aside records of files no longer live; next pass retries", zap.String("table", table), zap.Error(err))
	}
}

// rollup publishes a table's fold specification (r nil and err nil: none). A bad one is shown in
// /debug/status and siglake_fold_spec_invalid, logged when it changes, and not folded (its
// rewrites keep every row as it is).
func (o *observer) rollup(name string, r *fold.Rollup, err error) {
	var st *fold.Table
	m := o.set.Metrics
	switch {
	case err != nil:
		st = &fold.Table{Error: err.Error()}
		m.Fold.Spec(name, err)
		if prev := o.published[name]; prev == nil || prev.Fold == nil || prev.Fold.Error != st.Error {
			o.error("fold", name, err)
			o.set.Log.Warn("table is not folded: bad fold specification", zap.String("table", name), zap.Error(err))
		}
	case r != nil:
		spec := r.Spec
		st = &fold.Table{Spec: &spec}
		m.Fold.Spec(name, nil)
	default:
		m.Fold.Forget(name)
	}
	o.edit(name, func(s *State) { s.Fold = st })
}

// rewrite counts and logs one rewrite's outcome.
func (o *observer) rewrite(name string, job rewrite.Job, out rewrite.Outcome) {
	rewrite.Observer{Metrics: o.set.Metrics.Rewrite, Log: o.set.Log}.Observe(name, job, out)
	if out.Status == rewrite.Committed {
		o.set.Metrics.Fold.Observe(out.Merge)
	}
}

// swept logs a table's delete sweep that stopped or failed.
func (o *observer) swept(ctx context.Context, name string, err error) {
	switch {
	case membudget.IsStopping(ctx, err):
		o.set.Log.Info("delete sweep stopped: shutting down", zap.String("table", name))
	case err != nil:
		o.error("delete-sweep", name, err)
		o.set.Log.Warn("delete sweep failed", zap.String("table", name), zap.Error(err))
	}
}

// pendingRead logs a failed read of a table's deletion requests.
func (o *observer) pendingRead(name string, err error) {
	if err != nil {
		o.set.Log.Warn("reading deletion requests failed", zap.String("table", name), zap.Error(err))
	}
}

// staleRegistrations reports a failed clean-up of index registrations; the next pass retries.
func (o *observer) staleRegistrations(name string, err error) {
	o.error("index-rebuild", name, err)
	o.set.Log.Warn("dropping stale index registrations failed; next pass retries", zap.String("table", name), zap.Error(err))
}

type rebuildRun struct {
	at   time.Time
	took time.Duration
	res  puffinidx.Result
	err  error
}

// rebuildNotStarted logs an index rebuild a shutdown kept from starting.
func (o *observer) rebuildNotStarted(name string, snap int64) {
	o.set.Log.Info("index rebuild not started: shutting down; the outputs stay without sidecars until a rebuild",
		zap.String("table", name), zap.Int64("snapshot_id", snap))
}

// rebuilt records an index rebuild run over a committed rewrite's outputs: logs, errors and the
// table's rebuild state (props: the table's properties after it).
func (o *observer) rebuilt(name string, snap int64, props iceberg.Properties, run rebuildRun) {
	if run.err != nil {
		o.error("index-rebuild", name, run.err)
		o.set.Log.Warn("index rebuild had failures; the rewrite stays committed", zap.String("table", name),
			zap.Int64("snapshot_id", snap), zap.Int("failures", run.res.Failures), zap.Error(run.err))
	} else if run.res.Files > 0 {
		o.set.Log.Info("registered index sidecars", zap.String("table", name), zap.Int64("snapshot_id", snap),
			zap.Int("files", run.res.Files), zap.Int("blobs", run.res.Blobs), zap.Int64("bytes", run.res.Bytes), zap.Duration("took", run.took))
	}
	o.updateRebuildState(name, props, &run)
}

// updateRebuildState refreshes the table's rebuild state in /debug/status (run: the last run, if
// one just happened).
func (o *observer) updateRebuildState(name string, props iceberg.Properties, run *rebuildRun) {
	reg, _ := puffinidx.Parse(props)
	cols := lake.IndexColumnsOf(props)
	o.edit(name, func(ms *State) {
		if ms.IndexRebuild == nil {
			ms.IndexRebuild = &RebuildState{}
		}
		st := ms.IndexRebuild
		st.Enabled, st.Columns, st.Registered = o.set.Cfg.IndexRebuild, cols, len(reg)
		if run != nil {
			at := run.at
			st.LastRun, st.LastFiles, st.LastBytes, st.LastError = &at, run.res.Files, run.res.Bytes, ""
			if run.err != nil {
				st.LastError = run.err.Error()
			}
		}
	})
}

// owned records the owned tables of this cycle and returns the ones of the last cycle that are
// no longer owned (or gone).
func (o *observer) owned(owned []string) (gone []string) {
	now := map[string]bool{}
	for _, name := range owned {
		now[name] = true
	}
	for name := range o.reported {
		if !now[name] {
			gone = append(gone, name)
		}
	}
	o.reported = now
	return gone
}

// forget drops the per-table gauges (overlap depth, live files and bytes per level, gauge sample
// time, pending deletions, retention, fold, set-aside and outstanding work) of a table this
// process no longer owns. Counters stay: they count what this process did.
func (o *observer) forget(name string) {
	m := o.set.Metrics
	m.Deletes.Pending.DeleteLabelValues(name)
	m.Retention.Forget(name)
	if p, ok := o.set.Publish.(retention.Publisher); ok {
		p.Retention(name, nil) // the new owner shows it
	}
	m.Fold.Forget(name)
	m.OverlapDepth.DeleteLabelValues(name)
	m.GaugesSampledAt.DeleteLabelValues(name)
	m.SkippedFiles.DeleteLabelValues(name)
	m.OutstandingBins.DeleteLabelValues(name)
	m.OutstandingBytes.DeleteLabelValues(name)
	delete(o.outstanding, name)
	m.LiveFiles.DeletePartialMatch(prometheus.Labels{"table": name})
	m.LiveBytes.DeletePartialMatch(prometheus.Labels{"table": name})
}
