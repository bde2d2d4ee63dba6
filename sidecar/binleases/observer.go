package binleases

import (
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/work"
)

// logEvery is the least time between two log lines of one kind (an outcome of a table, a refusal
// reason): a worker gone with 200 bins leased must not log 200 lines.
const logEvery = time.Minute

// Observer turns what the owner and the worker report (their configs' hooks: Instrument) into
// metrics and rate-limited log lines, and keeps what the status snapshot shows beyond the book:
// lease ends per table and the bins this process's worker runs.
type Observer struct {
	Metrics *Metrics
	Log     *zap.Logger
	Now     func() time.Time // time.Now when nil

	mu         sync.Mutex
	tables     map[string]map[string]int64 // per table seen: lease ends since start (or Forget), by outcome
	running    map[string]Running          // the worker's bins, by lease id
	done       map[string]int64            // the worker's ends since start, by outcome
	logged     map[string]time.Time
	suppressed map[string]int
}

// NewObserver observes into m and log.
func NewObserver(m *Metrics, log *zap.Logger) *Observer {
	return &Observer{Metrics: m, Log: log, tables: map[string]map[string]int64{}, running: map[string]Running{},
		done: map[string]int64{}, logged: map[string]time.Time{}, suppressed: map[string]int{}}
}

// InstrumentOwner sets cfg's observer hooks (Ended, Refused, Dropped) to this observer's, after
// any the caller set.
func (o *Observer) InstrumentOwner(cfg *work.OwnerConfig) {
	ended, refused, dropped := cfg.Ended, cfg.Refused, cfg.Dropped
	cfg.Ended = func(l work.Lease, outcome string) {
		if ended != nil {
			ended(l, outcome)
		}
		o.Ended(l, outcome)
	}
	cfg.Refused = func(m work.WorkerMessage, reason string) {
		if refused != nil {
			refused(m, reason)
		}
		o.Refused(m, reason)
	}
	cfg.Dropped = func() {
		if dropped != nil {
			dropped()
		}
		o.Dropped(SideOwner)
	}
}

// InstrumentWorker sets cfg's observer hooks (Started, Merging, Merged, Done, Dropped) to this observer's,
// after any the caller set.
func (o *Observer) InstrumentWorker(cfg *work.WorkerConfig) {
	started, merging, merged, done, dropped := cfg.Started, cfg.Merging, cfg.Merged, cfg.Done, cfg.Dropped
	cfg.Started = func(owner string, g work.Grant) {
		if started != nil {
			started(owner, g)
		}
		o.Started(owner, g)
	}
	cfg.Merging = func(g work.Grant) {
		if merging != nil {
			merging(g)
		}
		o.Merging(g)
	}
	cfg.Merged = func(g work.Grant, m work.Merge) {
		if merged != nil {
			merged(g, m)
		}
		o.Merged(g, m)
	}
	cfg.Done = func(g work.Grant, outcome string) {
		if done != nil {
			done(g, outcome)
		}
		o.Done(g, outcome)
	}
	cfg.Dropped = func() {
		if dropped != nil {
			dropped()
		}
		o.Dropped(SideWorker)
	}
}

// Ended counts an owner's lease end (work.OwnerConfig.Ended) and logs the ends an operator acts
// on: lapsed (a worker stopped renewing), failed and maybe_committed.
func (o *Observer) Ended(l work.Lease, outcome string) {
	if outcome != work.EndDropped { // a dropped table is forgotten, not seen again
		o.see(l.Table)
	}
	o.Metrics.Ends.WithLabelValues(l.Table, outcome).Inc()
	o.mu.Lock()
	if ends := o.tables[l.Table]; ends != nil {
		ends[outcome]++
	}
	o.mu.Unlock()
	var msg string
	switch outcome {
	case work.EndLapsed:
		msg = "bin lease lapsed without a result: its worker stopped renewing (killed, paused, cut off or overloaded); the bin is planned again"
	case work.OutcomeFailed:
		msg = "leased bin failed: the worker's merge failed or its files failed the owner's check; the bin is planned again"
	case work.OutcomeMaybeCommitted:
		msg = "leased bin's commit outcome unknown: its outputs are kept for orphan gc to judge"
	default:
		return
	}
	if n, ok := o.due("ended " + outcome + " " + l.Table); ok {
		o.Log.Warn(msg, zap.String("table", l.Table), zap.String("partition", l.Job.Partition), zap.String("lease", l.ID),
			zap.String("worker", l.Worker), zap.Duration("age", o.now().Sub(l.Taken)), zap.Int("like_it_since_last_line", n))
	}
}

// Refused counts a renewal or result the owner refused (work.OwnerConfig.Refused).
func (o *Observer) Refused(m work.WorkerMessage, reason string) {
	o.Metrics.Refused.WithLabelValues(m.Type, reason).Inc()
	if n, ok := o.due("refused " + m.Type + " " + reason); ok {
		o.Log.Info("bin lease: refused a worker's message (answered expired)", zap.String("message", m.Type),
			zap.String("reason", reason), zap.String("lease", m.Lease), zap.String("worker", m.From), zap.Int("like_it_since_last_line", n))
	}
}

// Dropped counts a message dropped by a full queue or a failed send on side.
func (o *Observer) Dropped(side string) {
	o.Metrics.Dropped.WithLabelValues(side).Inc()
	if n, ok := o.due("dropped " + side); ok {
		o.Log.Warn("bin lease: dropped a message (a queue was full or a send failed); its lease lapses", zap.String("side", side),
			zap.Int("like_it_since_last_line", n))
	}
}

// Started records a bin this process's worker runs (work.WorkerConfig.Started): it waits for
// merge memory until Merging.
func (o *Observer) Started(owner string, g work.Grant) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.running[g.ID] = Running{ID: shortID(g.ID), Owner: owner, Table: g.Table, Kind: g.Job.Kind, Partition: g.Job.Partition,
		Files: len(g.Job.Inputs), Bytes: g.Job.Bytes(), Started: o.now(), LeaseSeconds: g.Duration().Seconds()}
	o.setWorkerGauges()
}

// Merging records that a bin of this process's worker holds its memory and merges
// (work.WorkerConfig.Merging).
func (o *Observer) Merging(g work.Grant) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r, ok := o.running[g.ID]
	if !ok || !r.Merging.IsZero() {
		return // ended already, or told twice
	}
	r.Merging = o.now()
	o.running[g.ID] = r
	o.setWorkerGauges()
}

// setWorkerGauges sets the running and waiting gauges from o.running; o.mu is held.
func (o *Observer) setWorkerGauges() {
	waiting := 0
	for _, r := range o.running {
		if r.Merging.IsZero() {
			waiting++
		}
	}
	o.Metrics.WorkerRunning.Set(float64(len(o.running) - waiting))
	o.Metrics.WorkerWaiting.Set(float64(waiting))
}

// Merged records that a bin's merge ended (its result goes to the owner next) and counts what a
// completed merge read, wrote and took (work.WorkerConfig.Merged); a failed merge shows in Done's
// outcome.
func (o *Observer) Merged(g work.Grant, m work.Merge) {
	o.mu.Lock()
	if r, ok := o.running[g.ID]; ok && r.Merged.IsZero() {
		r.Merged = o.now()
		o.running[g.ID] = r
	}
	o.mu.Unlock()
	if m.Err != nil {
		if n, ok := o.due("merge failed"); ok {
			o.Log.Warn("bin lease: merge of a leased bin failed; the owner plans it again", zap.String("table", g.Table),
				zap.String("partition", g.Job.Partition), zap.String("lease", g.ID), zap.Error(m.Err), zap.Int("like_it_since_last_line", n))
		}
		return
	}
	o.Metrics.WorkerInputBytes.Add(float64(m.BytesRead))
	o.Metrics.WorkerOutputBytes.Add(float64(m.BytesWritten))
	o.Metrics.WorkerMerge.Observe(m.Took.Seconds())
}

// Done counts how a lease of this process's worker ended (work.WorkerConfig.Done).
func (o *Observer) Done(g work.Grant, outcome string) {
	o.Metrics.WorkerBins.WithLabelValues(outcome).Inc()
	o.mu.Lock()
	delete(o.running, g.ID)
	o.done[outcome]++
	o.setWorkerGauges()
	o.mu.Unlock()
	var msg string
	switch outcome {
	case work.WorkerLapsed:
		msg = "bin lease: the lease lapsed before the merge ended (renewals lost, or the merge outlived the lease); outputs removed"
	case work.WorkerLost:
		msg = "bin lease: no answer to a result; its outputs are left to orphan gc"
	case work.WorkerRefused:
		msg = "bin lease: refused a lease of another catalog"
	default:
		return
	}
	if n, ok := o.due("done " + outcome); ok {
		o.Log.Warn(msg, zap.String("table", g.Table), zap.String("partition", g.Job.Partition), zap.String("lease", g.ID),
			zap.Int("like_it_since_last_line", n))
	}
}

// see exports a table's lease ends at 0 the first time it is seen, and its gauges from then on.
func (o *Observer) see(table string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.tables[table]; ok {
		return
	}
	o.tables[table] = map[string]int64{}
	for _, oc := range EndOutcomes {
		o.Metrics.Ends.WithLabelValues(table, oc)
	}
}

// Forget drops the table's gauges and status: another member owns it now, and two processes must
// not both export its offers. Its lease end counters stay (counters only grow).
func (o *Observer) Forget(table string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.tables, table)
	for _, g := range []interface{ DeleteLabelValues(...string) bool }{o.Metrics.OfferedBins, o.Metrics.OfferedBytes,
		o.Metrics.LeasedBins, o.Metrics.LeasedBytes, o.Metrics.Committing} {
		g.DeleteLabelValues(table)
	}
}

func (o *Observer) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// due reports whether a line of kind may be logged now, and how many were held back since the
// last one (this one included).
func (o *Observer) due(kind string) (n int, ok bool) {
	t := o.now()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.suppressed[kind]++
	if last, seen := o.logged[kind]; seen && t.Sub(last) < logEvery {
		return 0, false
	}
	n = o.suppressed[kind]
	o.logged[kind], o.suppressed[kind] = t, 0
	return n, true
}
