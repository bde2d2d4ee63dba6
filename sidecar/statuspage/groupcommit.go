package statuspage

import (
	"sort"

	"github.com/siglake/siglake/sidecar/commit"
)

// GroupCommit is group commit's part of the status (sidecar.GroupCommitReport): on or why not,
// the tables this process commits for every pod, and this pod's hand-offs.
type GroupCommit struct {
	Enabled         bool
	DisabledReason  string
	IntervalSeconds float64
	Pod             *commit.ClientStatus    // nil when this pod hands nothing off
	Committer       *commit.CommitterStatus // nil when this process commits for no pod
}

// groupRow is one table of the group commit section: its committer, and the committer's state
// when that is this process (only the committer knows the queue, last commit and watermark).
type groupRow struct {
	Table     string
	Committer string                 // the table's lease owner, "" when none is known
	Here      *commit.CommitterTable // nil when this process does not commit the table
}

// groupRows are the tables the report knows and those this process commits, sorted by name, as
// `siglake status` lists them.
func groupRows(r Report) []groupRow {
	here := map[string]*commit.CommitterTable{}
	if g := r.GroupCommit; g != nil && g.Committer != nil {
		for i := range g.Committer.Tables {
			t := &g.Committer.Tables[i]
			here[t.Table] = t
		}
	}
	var out []groupRow
	for _, t := range r.Tables {
		out = append(out, groupRow{Table: t.Name, Committer: t.Owner, Here: here[t.Name]})
		delete(here, t.Name)
	}
	// A table this process commits but has not seen otherwise (no drain commit, no maintenance
	// state yet) is still listed: its committer is this process.
	for name, t := range here {
		out = append(out, groupRow{Table: name, Committer: r.Node, Here: t})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Table < out[j].Table })
	return out
}

// fallback is how often this pod committed directly for one reason.
type fallback struct {
	Reason string
	N      int64
}

// fallbacks are the pod's direct commits since start by reason, sorted by reason.
func fallbacks(p *commit.ClientStatus) []fallback {
	if p == nil {
		return nil
	}
	out := make([]fallback, 0, len(p.Fallbacks))
	for reason, n := range p.Fallbacks {
		out = append(out, fallback{reason, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Reason < out[j].Reason })
	return out
}

// groupRowOf is table's row of the group commit section; ok is false when group commit is off or
// was not published.
func groupRowOf(r Report, table string) (groupRow, bool) {
	if r.GroupCommit == nil || !r.GroupCommit.Enabled {
		return groupRow{}, false
	}
	for _, row := range groupRows(r) {
		if row.Table == table {
			return row, true
		}
	}
	return groupRow{}, false
}
