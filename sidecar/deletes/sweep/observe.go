package sweep

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/deletes"
)

// Publisher receives each table's deletion state as a value it never writes again.
type Publisher interface {
	Deletes(table string, st *State)
}

// State is a table's deletion requests as the last sweep (or idle-cycle look) saw them.
type State struct {
	CheckedAt time.Time `json:"checked_at"`
	Sweeps    bool      `json:"sweeps"` // SIGLAKE_DELETE_TASKS
	// CancelPeriod is SIGLAKE_DELETE_CANCEL_PERIOD, which the execution times follow from.
	CancelPeriod string           `json:"cancel_period"`
	Pending      []PendingRequest `json:"pending"`
	LastSweep    *Summary         `json:"last_sweep,omitempty"`
	Invalid      []string         `json:"invalid,omitempty"` // properties that do not decode
}

// PendingRequest is one pending deletion request as status pages show it: never its predicate,
// whose values are what an erasure exists to remove (siglake delete-sweep, with catalog access,
// shows them).
type PendingRequest struct {
	ID    string `json:"id"`
	Table string `json:"table"`
	// State is waiting (inside its cancel period: siglake delete-cancel withdraws it) or pending
	// (sweeps execute it).
	State          string    `json:"state"`
	AllRows        bool      `json:"all_rows,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	ExecuteAt      time.Time `json:"execute_at"`
	RowsDeleted    int64     `json:"rows_deleted"`
	FilesRewritten int64     `json:"files_rewritten"`
}

// Waiting is the State of a pending request inside its cancel period.
const Waiting = "waiting"

// Summary is what one delete sweep of a table did.
type Summary struct {
	Time        time.Time `json:"time"`
	Outcome     string    `json:"outcome"`
	Candidates  int       `json:"candidates"`
	Examined    int       `json:"examined"`
	Rewritten   int       `json:"rewritten"`
	RowsDeleted int64     `json:"rows_deleted"`
	Done        []string  `json:"done,omitempty"`
	Capped      bool      `json:"capped,omitempty"`
	Error       string    `json:"error,omitempty"`
}

// Outcomes are the outcome label values of siglake_delete_sweeps_total.
var Outcomes = []string{"deleted", "clean", "capped", "conflict", "failed"}

// Metrics are the delete tasks' metrics (docs/metrics.md "Delete tasks").
type Metrics struct {
	Pending        *prometheus.GaugeVec   // table
	RowsDeleted    *prometheus.CounterVec // table
	FilesRewritten *prometheus.CounterVec // table
	RequestsDone   *prometheus.CounterVec // table
	Sweeps         *prometheus.CounterVec // outcome
}

// NewMetrics registers the delete tasks' metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_delete_requests_pending", Help: "Deletion requests recorded in the table and not done yet (from the last maintenance look at the table)."}, []string{"table"}),
		RowsDeleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_delete_rows_deleted_total", Help: "Rows removed by committed delete-task rewrites."}, []string{"table"}),
		FilesRewritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_delete_files_rewritten_total", Help: "Data files replaced by committed delete-task rewrites (a file left with no rows is removed without a replacement)."}, []string{"table"}),
		RequestsDone: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_delete_requests_done_total", Help: "Deletion requests marked done (a sweep found no live file with matching rows)."}, []string{"table"}),
		Sweeps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_delete_sweeps_total", Help: "Delete sweeps of a table by outcome: deleted (committed a rewrite), clean (no live file had matching rows), capped (stopped at the per-sweep file or byte cap with nothing to rewrite yet), conflict (a rewrite lost to a concurrent change; retried on a later sweep), failed."}, []string{"outcome"}),
	}
	reg.MustRegister(m.Pending, m.RowsDeleted, m.FilesRewritten, m.RequestsDone, m.Sweeps)
	for _, o := range Outcomes {
		m.Sweeps.WithLabelValues(o) // at 0, so the first failed sweep shows in increase()
	}
	return m
}

// observe turns what a sweep of a table returned into metrics, log lines and its published state.
// The sweep itself records nothing; stopped says a shutdown ended it (no failed sweep).
func (s *Sweeper) observe(o Options, rep Report, err error, stopped bool) {
	log := s.Log.With(zap.String("table", rep.Table))
	for _, e := range rep.Invalid {
		// The property, not the cause: it may quote the request's values (siglake delete-sweep
		// prints it).
		log.Warn(publicInvalid(e) + "; it is ignored")
	}
	if rep.Rewritten > 0 {
		s.Metrics.RowsDeleted.WithLabelValues(rep.Table).Add(float64(rep.Deleted))
		s.Metrics.FilesRewritten.WithLabelValues(rep.Table).Add(float64(rep.Rewritten))
	}
	for _, r := range rep.done {
		s.Metrics.RequestsDone.WithLabelValues(rep.Table).Inc()
		// The request's columns, not its values: they are what an erasure exists to remove, and
		// logs are kept and shipped (siglake delete-sweep shows the predicate).
		cols := make([]string, len(r.Where))
		for i, c := range r.Where {
			cols[i] = c.Column
		}
		log.Info("deletion request done", zap.String("request_id", r.ID), zap.Strings("columns", cols),
			zap.Int64("rows_deleted", r.RowsDeleted), zap.Int64("files_rewritten", r.FilesRewritten),
			zap.Int64("snapshot_id", r.DoneSnapshotID))
	}
	if o.Apply && rep.Outcome != "" {
		s.Metrics.Sweeps.WithLabelValues(rep.Outcome).Inc()
	}
	switch {
	case !stopped:
		s.publish(rep.Table, rep, err)
	case rep.Requests != nil:
		s.publish(rep.Table, rep, nil) // the requests read: the last sweep's summary stays, with no error
	}
}

// publish updates the pending gauge and /debug/status from a sweep.
func (s *Sweeper) publish(name string, rep Report, err error) {
	s.publishMu.Lock()
	defer s.publishMu.Unlock()
	var pending []PendingRequest
	for _, r := range rep.Requests {
		if r.State == deletes.Pending {
			p := PendingRequest{ID: r.ID, Table: name, State: deletes.Pending, AllRows: r.AllRows, CreatedAt: r.CreatedAt,
				ExecuteAt: r.ExecuteAt(s.Cfg.CancelPeriod), RowsDeleted: r.RowsDeleted, FilesRewritten: r.FilesRewritten}
			if s.waiting(r) {
				p.State = Waiting
			}
			pending = append(pending, p)
		}
	}
	// An invalid request's error may quote its values ("column host value ..."): status pages
	// name the property only.
	invalid := make([]string, len(rep.Invalid))
	for i, e := range rep.Invalid {
		invalid[i] = publicInvalid(e)
	}
	if err == nil || rep.Requests != nil {
		s.Metrics.Pending.WithLabelValues(name).Set(float64(len(pending)))
	}
	sum := &Summary{Time: s.Now(), Outcome: rep.Outcome, Candidates: len(rep.Candidates), Examined: rep.examined,
		Rewritten: rep.Rewritten, RowsDeleted: rep.Deleted, Done: rep.Done, Capped: rep.Capped}
	if err != nil {
		sum.Error = err.Error()
	}
	last := sum
	if prev := s.published[name]; rep.Outcome == "" && err == nil && prev != nil {
		last = prev.LastSweep // a look without a sweep keeps the last sweep's summary
	}
	st := &State{CheckedAt: s.Now(), Sweeps: s.Cfg.Sweeps, CancelPeriod: s.Cfg.CancelPeriod.String(), Pending: pending, Invalid: invalid, LastSweep: last}
	if s.published == nil {
		s.published = map[string]*State{}
	}
	s.published[name] = st
	if s.Publish != nil {
		s.Publish.Deletes(name, st)
	}
}

// publicInvalid is an invalid request's error (deletes.Executable, deletes.List) without its cause, which may
// quote the request's values: the property it is stored under.
func publicInvalid(e string) string {
	key, _, _ := strings.Cut(strings.TrimPrefix(e, "table property "), ":")
	return "table property " + key + ": not a valid deletion request, never executed (siglake delete-sweep says why)"
}

// Pending refreshes a table's pending requests (gauge and status) without sweeping: what an idle
// cycle does when SIGLAKE_DELETE_TASKS is off.
func (s *Sweeper) Pending(ctx context.Context, name string) error {
	t, err := s.Lake.LoadTable(ctx, name)
	if err != nil {
		return err
	}
	all, bad := deletes.List(t.Properties())
	rep := Report{Table: name, Requests: all}
	for _, e := range bad {
		rep.Invalid = append(rep.Invalid, e.Error())
	}
	s.publish(name, rep, nil)
	return nil
}
