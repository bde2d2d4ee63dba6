// Package statustext renders the process's status report (what /debug/status serializes) as the
// plain text `siglake status` prints: a pure function from the report to lines, one section per
// concern, so the binary only fetches and prints.
package statustext

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/maintain"
	"github.com/siglake/siglake/sidecar/retention"
)

// Write prints r to w: the process, its tables, then the sections that have something to say.
func Write(w io.Writer, r sidecar.StatusReport) {
	writeProcess(w, r)
	names := make([]string, 0, len(r.Tables))
	for n := range r.Tables {
		names = append(names, n)
	}
	sort.Strings(names)
	writeTables(w, r, names)
	section(w, "PENDING DELETION REQUESTS", pendingDeletions(r, names))
	section(w, "SKIPPED FILES (set aside; siglake skipped clear TABLE PATH once repaired)", skippedFiles(r, names))
	section(w, "RETENTION", retentionLines(r, names))
	section(w, "FOLDING", foldLines(r, names))
	writeMembers(w, r)
	writeClaims(w, r)
	writeGroupCommit(w, r, names)
	writeBinLeases(w, r)
	section(w, "RECENT ERRORS (newest first)", errorLines(r))
}

// section prints a titled block of lines after a blank line, or nothing when lines is empty.
func section(w io.Writer, title string, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "\n"+title)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// writeProcess prints the node, the catalog, an unclean stop, the backlog and memory.
func writeProcess(w io.Writer, r sidecar.StatusReport) {
	fmt.Fprintf(w, "node %s  role %s  version %s  up %s\n", r.Node, r.Role, r.Version, r.Now.Sub(r.StartedAt).Round(time.Second))
	fmt.Fprintf(w, "catalog  %s\n", catalogState(r))
	if u := r.UncleanStop; u != nil {
		tables := make([]string, 0, len(u.Batches))
		for _, b := range u.Batches {
			tables = append(tables, b.Table)
		}
		fmt.Fprintf(w, "UNCLEAN STOP  the previous run was killed mid-batch (found %s): %d batch(es) in flight (%s), drained again; %d uncommitted data file(s) left for siglake gc\n",
			u.DetectedAt.UTC().Format(time.RFC3339), len(u.Batches), strings.Join(tables, ", "), u.LeftForGC)
	}
	fmt.Fprintf(w, "backlog  %d sealed segments, %s, oldest %.0fs; %d in quarantine (%d moved there since start)\n",
		r.Backlog.Segments, sidecar.HumanBytes(r.Backlog.Bytes), r.Backlog.OldestAgeSeconds, r.Backlog.InQuarantine, r.Backlog.Quarantined)
	if m := r.Memory; m != nil {
		fmt.Fprintf(w, "memory   budget %s, held %s", sidecar.HumanBytes(m.LimitBytes), sidecar.HumanBytes(m.HeldBytes))
		for _, l := range m.Loops {
			if l.HeldBytes > 0 || l.Waiting > 0 {
				fmt.Fprintf(w, "; %s %s", l.Loop, sidecar.HumanBytes(l.HeldBytes))
				if l.Waiting > 0 {
					fmt.Fprintf(w, " (%d waiting)", l.Waiting)
				}
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

func catalogState(r sidecar.StatusReport) string {
	cat := "ready"
	if !r.CatalogReady {
		cat = "NOT READY: " + r.CatalogError
	} else if r.CatalogWriteError != "" {
		cat = "NOT WRITABLE: " + r.CatalogWriteError
	}
	if r.CatalogID != "" {
		cat += "  id " + r.CatalogID
	}
	if r.CatalogIDError != "" {
		cat += "  IDENTITY UNKNOWN (owns no table): " + r.CatalogIDError
	}
	return cat
}

// writeTables prints one row per table: owner, last commit, depth and the last maintenance pass.
func writeTables(w io.Writer, r sidecar.StatusReport, names []string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TABLE\tOWNER\tCANDIDATES\tLAST COMMIT\tSNAPSHOT\tSEGMENTS\tROWS\tFILES\tDEPTH\tFILES/LEVEL\tLAST PASS")
	for _, n := range names {
		t := r.Tables[n]
		last, snap, segs, rows, files := "-", "-", "-", "-", "-"
		if c := t.LastCommit; c != nil {
			last = fmt.Sprintf("%s ago (%s)", r.Now.Sub(c.Time).Round(time.Second), c.Outcome)
			snap = fmt.Sprint(c.SnapshotID)
			segs, rows, files = fmt.Sprint(c.Segments), fmt.Sprint(c.Rows), fmt.Sprint(c.Files)
		}
		depth, levels, pass := maintenanceColumns(t.Maintenance)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n, orDash(t.Owner), orDash(strings.Join(t.Candidates, ",")),
			last, snap, segs, rows, files, depth, levels, pass)
	}
	tw.Flush()
}

// maintenanceColumns are a table's DEPTH, FILES/LEVEL and LAST PASS columns.
func maintenanceColumns(m *maintain.State) (depth, levels, pass string) {
	if m == nil {
		return "-", "-", "-"
	}
	var parts []string
	for _, l := range sortedKeys(m.FilesPerLevel) {
		parts = append(parts, fmt.Sprintf("%s:%d", l, m.FilesPerLevel[l]))
	}
	pass = "-"
	if m.LastPass != nil {
		pass = fmt.Sprintf("%s, %d bins", m.LastPass.Decision, len(m.LastPass.Bins))
		if n := m.LastPass.OutstandingBins; n > 0 {
			pass += fmt.Sprintf(", %d outstanding", n)
		}
	}
	return fmt.Sprint(m.OverlapDepth), strings.Join(parts, " "), pass
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func pendingDeletions(r sidecar.StatusReport, names []string) []string {
	var lines []string
	for _, n := range names {
		d := r.Tables[n].Deletes
		if d == nil {
			continue
		}
		for _, p := range d.Pending {
			what := ""
			if p.AllRows {
				what = ", ALL ROWS"
			}
			lines = append(lines, fmt.Sprintf("  %s %s: %s%s, created %s, executes from %s (deleted %d rows in %d files so far)", n, p.ID, p.State, what,
				p.CreatedAt.UTC().Format(time.RFC3339), p.ExecuteAt.UTC().Format(time.RFC3339), p.RowsDeleted, p.FilesRewritten))
		}
		if !d.Sweeps && len(d.Pending) > 0 {
			lines = append(lines, fmt.Sprintf("  %s: SIGLAKE_DELETE_TASKS is off; run siglake delete-sweep --apply", n))
		}
	}
	return lines
}

func skippedFiles(r sidecar.StatusReport, names []string) []string {
	var lines []string
	for _, n := range names {
		if m := r.Tables[n].Maintenance; m != nil {
			for _, sk := range m.Skipped {
				lines = append(lines, fmt.Sprintf("  %s %s: %s after %d failed rewrites (%s)", n, sk.Path, sk.Class, sk.Failures, sk.Cause))
			}
		}
	}
	return lines
}

func retentionLines(r sidecar.StatusReport, names []string) []string {
	var lines []string
	for _, n := range names {
		if st := r.Tables[n].Retention; st != nil {
			lines = append(lines, retentionLine(r.Now, n, st))
		}
	}
	return lines
}

// retentionLine is one table's policy, its cutoffs, its last run and what awaits deletion.
func retentionLine(now time.Time, table string, st *retention.State) string {
	line := fmt.Sprintf("  %s: %s", table, st.Policy)
	if st.Invalid != "" {
		line = fmt.Sprintf("  %s: INVALID POLICY, nothing is removed: %s", table, st.Invalid)
	}
	for _, c := range st.Classes {
		if c.Cutoff != nil {
			fp := ""
			if c.Fingerprint != "" {
				fp = " [" + c.Fingerprint + "]"
			}
			line += fmt.Sprintf("\n    %s%s: cutoff %s", c.Class, fp, c.Cutoff.Format(time.RFC3339))
		}
	}
	if lr := st.LastRun; lr != nil {
		line += fmt.Sprintf("\n    last run %s ago: %s", now.Sub(lr.Time).Round(time.Second), lr.Outcome)
		for _, path := range retention.Paths {
			if c := lr.Removed[path]; c != nil {
				line += fmt.Sprintf(", %s %d files %d rows", path, c.Files, c.Rows)
			}
		}
		if lr.Error != "" {
			line += " (" + lr.Error + ")"
		}
	}
	var files int
	var bytes int64
	for _, p := range st.Pending {
		files += p.Files
		bytes += p.Bytes
	}
	if files > 0 {
		line += fmt.Sprintf("\n    pending deletion: %d objects, %s", files, sidecar.HumanBytes(bytes))
	}
	return line
}

// foldLines lists the rollup tables: their specification, or why they are not folded.
func foldLines(r sidecar.StatusReport, names []string) []string {
	var lines []string
	for _, n := range names {
		m := r.Tables[n].Maintenance
		if m == nil || m.Fold == nil {
			continue
		}
		if m.Fold.Error != "" {
			lines = append(lines, fmt.Sprintf("  %s: NOT FOLDED: %s", n, m.Fold.Error))
		} else if m.Fold.Spec != nil {
			lines = append(lines, fmt.Sprintf("  %s: %s", n, m.Fold.Spec.Describe()))
		}
	}
	return lines
}

func writeMembers(w io.Writer, r sidecar.StatusReport) {
	if len(r.Members) == 0 {
		return
	}
	fmt.Fprintln(w, "\nMEMBERS")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tADDRESS\tSTATE\tROLES\tCATALOG")
	for _, m := range r.Members {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Name, m.Addr, m.State, strings.Join(m.Roles, ","), orDash(m.Catalog))
	}
	tw.Flush()
}

func writeClaims(w io.Writer, r sidecar.StatusReport) {
	c := r.Claims
	if c == nil {
		return
	}
	fmt.Fprintf(w, "\nCLAIMS  holder %s, ttl %.0fs, %d live claimers, fair share %d\n", c.Holder, c.TTLSeconds, c.Live, c.Share)
	if c.LastError != "" {
		fmt.Fprintf(w, "  last tick failed: %s\n", c.LastError)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STREAM\tHOLDER\tEPOCH\tVALID FOR")
	for _, h := range c.Held {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", h.Stream, c.Holder, h.Epoch, h.ValidUntil.Sub(r.Now).Round(time.Second))
	}
	others := make([]string, 0, len(c.Others))
	for s := range c.Others {
		others = append(others, s)
	}
	sort.Strings(others)
	for _, s := range others {
		fmt.Fprintf(tw, "%s\t%s\t-\t-\n", s, c.Others[s])
	}
	tw.Flush()
}

func errorLines(r sidecar.StatusReport) []string {
	lines := make([]string, 0, len(r.Errors))
	for _, e := range r.Errors {
		tbl := ""
		if e.Table != "" {
			tbl = " table=" + e.Table
		}
		lines = append(lines, fmt.Sprintf("  %s %s%s: %s", e.Time.Format(time.RFC3339), e.Stage, tbl, e.Message))
	}
	return lines
}
