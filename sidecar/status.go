package sidecar

import (
	"sort"
	"sync"
	"time"

	"github.com/siglake/siglake/gossip"
	"github.com/siglake/siglake/sidecar/binleases"
	"github.com/siglake/siglake/sidecar/claim"
	"github.com/siglake/siglake/sidecar/commit"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/drain"
	"github.com/siglake/siglake/sidecar/maintain"
	"github.com/siglake/siglake/sidecar/membership"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/retention"
	"github.com/siglake/siglake/sidecar/statuspage"
)

// Status is what /debug/status shows and `siglake status` prints. The loops update it under the
// lock; the HTTP handler takes a copy under the lock and encodes it outside. Everything a report
// points to is therefore immutable once published: a loop publishes a new value (a new
// maintain.State, a new slice), never writes into the one it published.
type Status struct {
	mu sync.Mutex
	s  StatusReport
}

// StatusReport is the JSON document of /debug/status.
type StatusReport struct {
	Node      string      `json:"node"`
	Role      config.Role `json:"role"`
	Version   string      `json:"version"`
	StartedAt time.Time   `json:"started_at"`
	Now       time.Time   `json:"now"`

	CatalogReady bool   `json:"catalog_ready"`
	CatalogError string `json:"catalog_error,omitempty"`
	// CatalogWriteError summarises CatalogWriteErrors: empty while no table's last commit failed
	// (refused, or abandoned at the commit deadline). /readyz is not ready meanwhile.
	CatalogWriteError string `json:"catalog_write_error,omitempty"`
	// CatalogWriteErrors is why, per table whose last commit failed; a table leaves it when one
	// of its commits succeeds or the process no longer drains or owns it.
	CatalogWriteErrors map[string]string `json:"catalog_write_errors,omitempty"`
	// CatalogID is the identity of the catalog and namespace (docs/gossip.md): members compete for
	// a table only when they share it. Empty until the catalog was reached.
	CatalogID string `json:"catalog_id,omitempty"`
	// CatalogIDError says why the identity could not be read or created; the process owns no
	// table meanwhile.
	CatalogIDError string `json:"catalog_id_error,omitempty"`

	Backlog drain.Backlog           `json:"backlog"`
	Tables  map[string]*TableReport `json:"tables"`
	Errors  []ErrorEntry            `json:"errors"` // newest first, at most maxErrors

	// Owned lists the tables this process maintains (all tables until gossip leases are on).
	Owned []string `json:"owned"`
	// Members is the gossip view; empty without gossip.
	Members []MemberReport `json:"members,omitempty"`
	// Claims are the catalog claims of this process; nil unless SIGLAKE_CATALOG_CLAIM is on.
	Claims *claim.Report `json:"claims,omitempty"`
	// CommitterClaims are the tables' committer claims as this process sees them (group commit
	// without gossip; "stream" names the table); nil unless they run here.
	CommitterClaims *claim.Report `json:"committer_claims,omitempty"`
	// UncleanStop is set when this start found batches the previous run left in flight (it was
	// killed mid-batch), with the files they left for gc.
	UncleanStop *drain.UncleanStop `json:"unclean_stop,omitempty"`
	// Memory is the process memory budget and what each loop holds of it (sidecar/membudget).
	Memory *membudget.Snapshot `json:"memory,omitempty"`
	// GroupCommit is whether batches are handed to their tables' committers, this pod's hand-offs
	// waiting for an answer and the tables it commits; nil until the process published it.
	GroupCommit *GroupCommitReport `json:"group_commit,omitempty"`
	// BinLeases is whether rewrite bins are leased to workers, the owned tables' bins on offer and
	// leased, and this process's worker; nil until the process published it.
	BinLeases *binleases.Status `json:"bin_leases,omitempty"`
}

// GroupCommitReport is group commit's part of /debug/status (docs/design/group-commit.md 6.3).
type GroupCommitReport struct {
	Enabled bool `json:"enabled"`
	// DisabledReason says why it is off, naming the option that turns it on.
	DisabledReason string `json:"disabled_reason,omitempty"`
	// Election is how tables' committers are chosen: "gossip" (the maintenance leases) or
	// "catalog_claim" (committer claims, without gossip); empty while off.
	Election string `json:"election,omitempty"`
	// IntervalSeconds is --group-commit-interval: how often a committer commits a table.
	IntervalSeconds float64 `json:"interval_seconds"`
	// Pod is this pod's side (nil when it drains nothing, or group commit is off).
	Pod *commit.ClientStatus `json:"pod,omitempty"`
	// Committer is the tables this process commits for every pod (nil when it runs no committer).
	Committer *commit.CommitterStatus `json:"committer,omitempty"`
}

// TableReport is one table's drain and maintenance state.
type TableReport struct {
	LastCommit *drain.CommitReport `json:"last_commit,omitempty"`
	Owner      string              `json:"owner,omitempty"`
	OwnerSince *time.Time          `json:"owner_since,omitempty"`
	// Candidates are the members the owner was chosen among (those sharing this catalog).
	Candidates  []string         `json:"candidates,omitempty"`
	Maintenance *maintain.State  `json:"maintenance,omitempty"`
	Deletes     *sweep.State     `json:"deletes,omitempty"`
	Retention   *retention.State `json:"retention,omitempty"`
}

// MemberReport is one gossip member.
type MemberReport struct {
	Name  string   `json:"name"`
	Addr  string   `json:"addr"`
	State string   `json:"state"`
	Roles []string `json:"roles"`
	// Catalog is the catalog identity the member advertises ("" before it reached its catalog).
	Catalog string `json:"catalog,omitempty"`
}

// ErrorEntry is a recent error, kept so an operator sees what went wrong without reading logs.
type ErrorEntry struct {
	Time    time.Time `json:"time"`
	Stage   string    `json:"stage"`
	Table   string    `json:"table,omitempty"`
	Message string    `json:"message"`
}

const maxErrors = 20

// NewStatus starts a status for a process.
func NewStatus(node string, role config.Role, version string, now time.Time) *Status {
	return &Status{s: StatusReport{Node: node, Role: role, Version: version, StartedAt: now, Tables: map[string]*TableReport{}}}
}

// Update runs f with the report locked.
func (s *Status) Update(f func(r *StatusReport)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.s)
}

// Table returns the table's report, creating it; call inside Update.
func (r *StatusReport) Table(name string) *TableReport {
	t, ok := r.Tables[name]
	if !ok {
		t = &TableReport{}
		r.Tables[name] = t
	}
	return t
}

// The loops publish their status here.
var (
	_ drain.Publisher      = (*Status)(nil)
	_ maintain.Publisher   = (*Status)(nil)
	_ sweep.Publisher      = (*Status)(nil)
	_ retention.Publisher  = (*Status)(nil)
	_ membership.Publisher = (*Status)(nil)
)

// Backlog shows the sealed backlog (drain.Publisher).
func (s *Status) Backlog(b drain.Backlog) { s.Update(func(r *StatusReport) { r.Backlog = b }) }

// UncleanStop shows what the previous run left in flight.
func (s *Status) UncleanStop(u *drain.UncleanStop) {
	s.Update(func(r *StatusReport) { r.UncleanStop = u })
}

// Committed shows a table's last drain commit.
func (s *Status) Committed(table string, c *drain.CommitReport) {
	s.Update(func(r *StatusReport) { r.Table(table).LastCommit = c })
}

// Maintenance shows a table's maintenance state (maintain.Publisher).
func (s *Status) Maintenance(table string, st *maintain.State) {
	s.Update(func(r *StatusReport) { r.Table(table).Maintenance = st })
}

// GroupCommit shows group commit's state (a new value each time).
func (s *Status) GroupCommit(g *GroupCommitReport) {
	s.Update(func(r *StatusReport) { r.GroupCommit = g })
}

// BinLeases shows bin leases' state (a new value each time).
func (s *Status) BinLeases(b *binleases.Status) {
	s.Update(func(r *StatusReport) { r.BinLeases = b })
}

// Owned shows the tables this process maintains.
func (s *Status) Owned(tables []string) { s.Update(func(r *StatusReport) { r.Owned = tables }) }

// Deletes shows a table's deletion requests (sweep.Publisher).
func (s *Status) Deletes(table string, st *sweep.State) {
	s.Update(func(r *StatusReport) { r.Table(table).Deletes = st })
}

// Retention shows a table's retention (retention.Publisher).
// A nil state clears it (the table moved to another owner).
func (s *Status) Retention(table string, st *retention.State) {
	s.Update(func(r *StatusReport) {
		if _, ok := r.Tables[table]; ok || st != nil {
			r.Table(table).Retention = st
		}
	})
}

// Tables are the tables the status knows of (membership.Publisher).
func (s *Status) Tables() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.s.Tables))
	for name := range s.s.Tables {
		out = append(out, name)
	}
	return out
}

// Members shows the gossip members.
func (s *Status) Members(members []gossip.Member) {
	out := make([]MemberReport, 0, len(members))
	for _, m := range members {
		out = append(out, MemberReport{Name: m.Name, Addr: m.Addr, State: m.State, Roles: m.Roles, Catalog: m.Catalog})
	}
	s.Update(func(r *StatusReport) { r.Members = out })
}

// Leases shows each table's owner and the candidates it was chosen among.
func (s *Status) Leases(leases map[string]gossip.Lease) {
	s.Update(func(r *StatusReport) {
		for name, l := range leases {
			tr := r.Table(name)
			since := l.Since
			tr.Owner, tr.OwnerSince, tr.Candidates = l.Owner, &since, l.Candidates
		}
	})
}

// Error records an error of a loop, newest first.
func (s *Status) Error(at time.Time, stage, table string, err error) {
	s.AddError(at, stage, table, err)
}

// AddError records an error, newest first.
func (s *Status) AddError(now time.Time, stage, table string, err error) {
	s.Update(func(r *StatusReport) {
		r.Errors = append([]ErrorEntry{{Time: now, Stage: stage, Table: table, Message: err.Error()}}, r.Errors...)
		if len(r.Errors) > maxErrors {
			r.Errors = r.Errors[:maxErrors]
		}
	})
}

// Snapshot returns a copy to encode without the lock: the maps and slices it owns are copied, and
// the values they point to are never written after they were published (see Status).
func (s *Status) Snapshot(now time.Time) StatusReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.s
	out.Now = now
	out.Tables = make(map[string]*TableReport, len(s.s.Tables))
	for k, v := range s.s.Tables {
		c := *v
		out.Tables[k] = &c
	}
	out.Errors = append([]ErrorEntry(nil), s.s.Errors...)
	out.Owned = append([]string(nil), s.s.Owned...)
	sort.Strings(out.Owned)
	out.Members = append([]MemberReport(nil), s.s.Members...)
	return out
}

// HumanBytes renders a byte count in binary units for people (status pages, summaries).
func HumanBytes(n int64) string { return statuspage.HumanBytes(n) }
