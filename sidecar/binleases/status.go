package binleases

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/siglake/siglake/sidecar/work"
)

// Status is bin leases' part of /debug/status: whether they are on, the tables this process owns
// with their bins on offer and leased, and the bins its worker runs. A new value each time.
type Status struct {
	Enabled bool `json:"enabled"`
	// DisabledReason says why bins are not leased, naming the option that turns it on.
	DisabledReason string `json:"disabled_reason,omitempty"`
	// Tables are the owner's side, sorted: every table with bins on offer or leased, and those
	// with lease ends since this process began owning them.
	Tables []Table `json:"tables,omitempty"`
	// Worker is this process's worker (nil when it runs none).
	Worker *Worker `json:"worker,omitempty"`
}

// Table is one owned table's bins on offer and leased.
type Table struct {
	Table        string `json:"table"`
	OfferedBins  int    `json:"offered_bins"`
	OfferedBytes int64  `json:"offered_bytes"`
	LeasedBins   int    `json:"leased_bins"`
	// CommittingBins are results that arrived and are being committed: their inputs are still
	// in flight.
	CommittingBins int   `json:"committing_bins,omitempty"`
	LeasedBytes    int64 `json:"leased_bytes"`
	// Offers are the oldest offers, at most MaxListed; OfferedBins counts them all.
	Offers []Offer `json:"offers,omitempty"`
	// Leases are the leases with the earliest deadline, at most MaxListed; LeasedBins counts them all.
	Leases []Lease `json:"leases,omitempty"`
	// Ends are the table's lease ends by outcome since this process began owning it.
	Ends map[string]int64 `json:"ends,omitempty"`
}

// Offer is a bin on offer.
type Offer struct {
	Kind      string    `json:"kind"`
	Partition string    `json:"partition"`
	Files     int       `json:"files"`
	Bytes     int64     `json:"bytes"`
	Offered   time.Time `json:"offered"` // since the first of the passes in a row that offered these files
}

// Lease is a bin leased to a worker.
type Lease struct {
	ID        string    `json:"id"` // the lease id's first 8 hex digits: enough to find it in the logs
	Worker    string    `json:"worker"`
	Local     bool      `json:"local,omitempty"` // the owner's own worker
	Kind      string    `json:"kind"`
	Partition string    `json:"partition"`
	Files     int       `json:"files"`
	Bytes     int64     `json:"bytes"`
	Taken     time.Time `json:"taken"`
	Deadline  time.Time `json:"deadline"` // it lapses here unless renewed before
}

// Worker is this process's worker: the bins it runs and how its leases ended since start.
type Worker struct {
	// RunningBins are merging or waiting on the owner's answer; WaitingBins were granted and
	// wait for merge memory: a worker starved of memory shows waiting bins, a busy one running.
	RunningBins int              `json:"running_bins"`
	WaitingBins int              `json:"waiting_bins"`
	Running     []Running        `json:"running,omitempty"` // oldest first, at most MaxListed
	Waiting     []Running        `json:"waiting,omitempty"` // oldest first, at most MaxListed
	Done        map[string]int64 `json:"done,omitempty"`    // by outcome
}

// Running is a leased bin this process's worker runs: waiting for merge memory, merging, or
// waiting on the owner's answer.
type Running struct {
	ID        string    `json:"id"` // the lease id's first 8 hex digits
	Owner     string    `json:"owner"`
	Table     string    `json:"table"`
	Kind      string    `json:"kind"`
	Partition string    `json:"partition"`
	Files     int       `json:"files"`
	Bytes     int64     `json:"bytes"`
	Started   time.Time `json:"started"`
	// Merging is when the merge got its memory; zero while the bin waits for it.
	Merging time.Time `json:"merging,omitzero"`
	// Merged is when the merge ended and its result went to the owner: the bin waits on the
	// owner's answer since; zero while it merges.
	Merged       time.Time `json:"merged,omitzero"`
	LeaseSeconds float64   `json:"lease_seconds"` // the lease's duration between renewals
}

// MaxListed bounds each list of the status: a pass of hundreds of bins shows its counts, not
// every bin.
const MaxListed = 50

// shortID is a lease id's first 8 hex digits: enough to find it in logs, short enough to read.
func shortID(id string) string { return id[:min(len(id), 8)] }

// Snapshot is the status now: the owner's tables from book (nil: this process owns no lease
// book) and, with worker, this process's worker. It also sets the per-table gauges from the
// book's outstanding work, so the process calls it every second whether or not anyone reads the
// status; a table whose offers and leases are gone shows 0 until Forget. The caller sets Enabled
// and DisabledReason.
func (o *Observer) Snapshot(book *work.Book, worker bool) Status {
	var st Status
	if book != nil {
		st.Tables = o.ownerTables(book)
	}
	if worker {
		st.Worker = o.worker()
	}
	return st
}

// ownerTables sets the gauges of every table seen and returns the tables to show.
func (o *Observer) ownerTables(book *work.Book) []Table {
	for _, name := range book.Tables() {
		// A table with only results committing may be one this process just lost (Forget):
		// it is not seen again for them alone.
		if ow := book.Outstanding(name); ow.OfferedBins+ow.LeasedBins > 0 {
			o.see(name)
		}
	}
	o.mu.Lock()
	names := slices.Sorted(maps.Keys(o.tables))
	ends := make(map[string]map[string]int64, len(names))
	for _, n := range names {
		ends[n] = maps.Clone(o.tables[n])
	}
	o.mu.Unlock()
	var out []Table
	for _, name := range names {
		ow := book.Outstanding(name)
		o.Metrics.OfferedBins.WithLabelValues(name).Set(float64(ow.OfferedBins))
		o.Metrics.OfferedBytes.WithLabelValues(name).Set(float64(ow.OfferedBytes))
		o.Metrics.LeasedBins.WithLabelValues(name).Set(float64(ow.LeasedBins))
		o.Metrics.LeasedBytes.WithLabelValues(name).Set(float64(ow.LeasedBytes))
		o.Metrics.Committing.WithLabelValues(name).Set(float64(ow.CommittingBins))
		t := Table{Table: name, OfferedBins: ow.OfferedBins, OfferedBytes: ow.OfferedBytes, LeasedBins: ow.LeasedBins,
			LeasedBytes: ow.LeasedBytes, CommittingBins: ow.CommittingBins}
		if len(ends[name]) > 0 {
			t.Ends = ends[name]
		}
		if ow == (work.Outstanding{}) && t.Ends == nil {
			continue // seen once, idle since: its gauges say 0
		}
		offers := book.Offers(name)
		for _, of := range offers[:min(len(offers), MaxListed)] {
			t.Offers = append(t.Offers, Offer{Kind: of.Job.Kind, Partition: of.Job.Partition, Files: len(of.Job.Inputs),
				Bytes: of.Job.Bytes(), Offered: of.Offered})
		}
		leases := book.Leases(name)
		for _, l := range leases[:min(len(leases), MaxListed)] {
			t.Leases = append(t.Leases, Lease{ID: shortID(l.ID), Worker: l.Worker, Local: l.Local, Kind: l.Job.Kind,
				Partition: l.Job.Partition, Files: len(l.Job.Inputs), Bytes: l.Job.Bytes(), Taken: l.Taken, Deadline: l.Deadline})
		}
		out = append(out, t)
	}
	return out
}

// worker is the worker's part: its bins running and waiting, oldest first, and its ends since
// start.
func (o *Observer) worker() *Worker {
	o.mu.Lock()
	defer o.mu.Unlock()
	w := &Worker{}
	for _, r := range o.running {
		if r.Merging.IsZero() {
			w.Waiting = append(w.Waiting, r)
		} else {
			w.Running = append(w.Running, r)
		}
	}
	w.RunningBins, w.WaitingBins = len(w.Running), len(w.Waiting)
	w.Running, w.Waiting = oldestFirst(w.Running), oldestFirst(w.Waiting)
	if len(o.done) > 0 {
		w.Done = maps.Clone(o.done)
	}
	return w
}

// oldestFirst sorts rs by start (then id) and keeps the first MaxListed.
func oldestFirst(rs []Running) []Running {
	slices.SortFunc(rs, func(x, y Running) int {
		if c := x.Started.Compare(y.Started); c != 0 {
			return c
		}
		return strings.Compare(x.ID, y.ID)
	})
	return rs[:min(len(rs), MaxListed)]
}
