package statustext

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/claim"
	"github.com/siglake/siglake/sidecar/commit"
)

// writeGroupCommit prints the GROUP COMMIT block: on or off (and why), per table its committer,
// and for the tables this process commits their queue, last commit, watermark and live streams;
// then this pod's hand-offs waiting for an answer.
func writeGroupCommit(w io.Writer, r sidecar.StatusReport, names []string) {
	g := r.GroupCommit
	if g == nil {
		return
	}
	if !g.Enabled {
		fmt.Fprintf(w, "\nGROUP COMMIT  off: %s\n", g.DisabledReason)
		return
	}
	fmt.Fprintf(w, "\nGROUP COMMIT  on, interval %gs%s\n", g.IntervalSeconds, map[bool]string{true: ", committers by catalog claim"}[g.Election == "catalog_claim"])
	committed := map[string]commit.CommitterTable{}
	if g.Committer != nil {
		for _, t := range g.Committer.Tables {
			committed[t.Table] = t
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TABLE\tCOMMITTER\tQUEUE\tLAST COMMIT\tCOMPLETE THROUGH\tLIVE")
	for _, n := range groupTables(r, names, committed) {
		t, mine := committed[n]
		committer := "-"
		if tr := r.Tables[n]; tr != nil && tr.Owner != "" {
			committer = tr.Owner
		}
		if c := claimedBy(r.CommitterClaims, n); c != "" {
			committer = c
		}
		if !mine {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\n", n, committer)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s (this process)\t%s\t%s\t%s\t%d\n", n, r.Node, queueColumn(t), lastCommitColumn(r.Now, t.LastCommit),
			throughColumn(r.Now, t.CompleteThrough), t.LiveStreams)
	}
	tw.Flush()
	writeOutstanding(w, r.Now, g.Pod)
}

// groupTables are the tables the report knows and those this process commits, sorted.
func groupTables(r sidecar.StatusReport, names []string, committed map[string]commit.CommitterTable) []string {
	out := append([]string(nil), names...)
	for n := range committed {
		if _, known := r.Tables[n]; !known {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func queueColumn(t commit.CommitterTable) string {
	q := fmt.Sprintf("%d req, %s", t.QueueRequests, sidecar.HumanBytes(int64(t.QueueBytes)))
	if t.BehindIntervals > 0 {
		q += fmt.Sprintf(", %.1f intervals behind", t.BehindIntervals)
	}
	return q
}

func lastCommitColumn(now time.Time, c *commit.LastCommit) string {
	if c == nil {
		return "-"
	}
	s := fmt.Sprintf("%s ago (%s): %d req, %d streams, %d files in %.2fs", now.Sub(c.Time).Round(time.Second), c.Outcome,
		c.Requests, c.Streams, c.Files, c.Seconds)
	if c.SnapshotID != 0 {
		s += fmt.Sprintf(", snapshot %d", c.SnapshotID)
	}
	return s
}

func throughColumn(now time.Time, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339), now.Sub(t).Round(time.Second))
}

// writeOutstanding lists this pod's hand-offs waiting for an answer, and its fallbacks.
func writeOutstanding(w io.Writer, now time.Time, p *commit.ClientStatus) {
	if p == nil {
		return
	}
	if len(p.Fallbacks) > 0 {
		reasons := make([]string, 0, len(p.Fallbacks))
		for reason, n := range p.Fallbacks {
			reasons = append(reasons, fmt.Sprintf("%s %d", reason, n))
		}
		sort.Strings(reasons)
		fmt.Fprintf(w, "this pod committed directly since start: %s\n", strings.Join(reasons, ", "))
	}
	if len(p.Outstanding) == 0 {
		fmt.Fprintln(w, "this pod waits on no hand-off")
		return
	}
	fmt.Fprintln(w, "this pod's hand-offs waiting for an answer:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tTABLE\tSTREAM\tRANGE\tTO\tWAITING\tSENDS\tLAST ANSWER")
	for _, o := range p.Outstanding {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s..%s\t%s\t%s\t%d\t%s\n", o.ID, o.Table, o.Stream, o.First, o.Last, orDash(o.To),
			now.Sub(o.Since).Round(time.Second), o.Sends, orDash(o.LastAnswer))
	}
	tw.Flush()
}

// claimedBy is the holder of table's committer claim as the report shows it ("" without claims).
func claimedBy(c *claim.Report, table string) string {
	if c == nil {
		return ""
	}
	for _, h := range c.Held {
		if h.Stream == table {
			return c.Holder
		}
	}
	return c.Others[table]
}
