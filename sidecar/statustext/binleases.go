package statustext

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/binleases"
)

// writeBinLeases prints the BIN LEASES block: on or off (and why); per owned table its bins on
// offer and leased with its lease ends; the bins on offer and the leases, one line each; then this
// process's worker, its bins running and how its leases ended.
func writeBinLeases(w io.Writer, r sidecar.StatusReport) {
	b := r.BinLeases
	if b == nil {
		return
	}
	if !b.Enabled {
		fmt.Fprintf(w, "\nBIN LEASES  off: %s\n", b.DisabledReason)
		return
	}
	fmt.Fprintln(w, "\nBIN LEASES  on")
	if len(b.Tables) == 0 {
		fmt.Fprintln(w, "this process offers no bins")
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TABLE\tOFFERED\tLEASED\tLEASE ENDS")
		for _, t := range b.Tables {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Table, bins(t.OfferedBins, t.OfferedBytes), bins(t.LeasedBins, t.LeasedBytes), counts(t.Ends))
		}
		tw.Flush()
		writeOffers(w, r.Now, b.Tables)
		writeLeases(w, r.Now, b.Tables)
	}
	writeWorker(w, r.Now, b.Worker)
}

func bins(n int, bytes int64) string { return plural(n, "bin") + ", " + sidecar.HumanBytes(bytes) }

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// counts renders outcome counts sorted by outcome, "-" when none.
func counts(m map[string]int64) string {
	if len(m) == 0 {
		return "-"
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func age(now, t time.Time) string { return now.Sub(t).Round(time.Second).String() }

// writeOffers lists the bins on offer, oldest first per table, and how many are not listed.
func writeOffers(w io.Writer, now time.Time, tables []binleases.Table) {
	n, listed := 0, 0
	for _, t := range tables {
		n, listed = n+t.OfferedBins, listed+len(t.Offers)
	}
	if listed == 0 {
		return
	}
	fmt.Fprintf(w, "bins on offer%s:\n", notListed(n, listed))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TABLE\tKIND\tPARTITION\tFILES\tBYTES\tON OFFER")
	for _, t := range tables {
		for _, o := range t.Offers {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\n", t.Table, o.Kind, o.Partition, o.Files, sidecar.HumanBytes(o.Bytes), age(now, o.Offered))
		}
	}
	tw.Flush()
}

// writeLeases lists the leases, earliest deadline first per table: a deadline already passed
// shows as "lapsing" (the owner's next tick ends it).
func writeLeases(w io.Writer, now time.Time, tables []binleases.Table) {
	n, listed := 0, 0
	for _, t := range tables {
		n, listed = n+t.LeasedBins, listed+len(t.Leases)
	}
	if listed == 0 {
		return
	}
	fmt.Fprintf(w, "leases%s:\n", notListed(n, listed))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TABLE\tLEASE\tWORKER\tKIND\tPARTITION\tFILES\tBYTES\tAGE\tDEADLINE IN")
	for _, t := range tables {
		for _, l := range t.Leases {
			worker := l.Worker
			if l.Local {
				worker += " (owner's own)"
			}
			deadline := "lapsing"
			if l.Deadline.After(now) {
				deadline = l.Deadline.Sub(now).Round(time.Second).String()
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", t.Table, l.ID, worker, l.Kind, l.Partition, l.Files,
				sidecar.HumanBytes(l.Bytes), age(now, l.Taken), deadline)
		}
	}
	tw.Flush()
}

func notListed(n, listed int) string {
	if n > listed {
		return fmt.Sprintf(" (%d of %d listed)", listed, n)
	}
	return ""
}

// writeWorker prints this process's worker: its bins running (merging or waiting on an answer)
// and waiting for merge memory, and its lease ends since start.
func writeWorker(w io.Writer, now time.Time, wk *binleases.Worker) {
	if wk == nil {
		return
	}
	fmt.Fprintf(w, "this process's worker: %s running%s, %d waiting for merge memory%s; since start: %s\n",
		plural(wk.RunningBins, "bin"), notListed(wk.RunningBins, len(wk.Running)), wk.WaitingBins,
		notListed(wk.WaitingBins, len(wk.Waiting)), counts(wk.Done))
	if len(wk.Running)+len(wk.Waiting) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  LEASE\tOWNER\tTABLE\tKIND\tPARTITION\tFILES\tBYTES\tSTATE\tFOR\tLEASE")
	for _, r := range wk.Running {
		// a bin merging counts from its memory grant (one never said to merge, from its start);
		// one whose result went to the owner, from then: it waits on the answer
		state, since := "running", r.Merging
		if since.IsZero() {
			since = r.Started
		}
		if !r.Merged.IsZero() {
			state, since = "answer", r.Merged
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%gs\n", r.ID, r.Owner, r.Table, r.Kind, r.Partition, r.Files,
			sidecar.HumanBytes(r.Bytes), state, age(now, since), r.LeaseSeconds)
	}
	for _, r := range wk.Waiting {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%d\t%s\twaiting\t%s\t%gs\n", r.ID, r.Owner, r.Table, r.Kind, r.Partition, r.Files,
			sidecar.HumanBytes(r.Bytes), age(now, r.Started), r.LeaseSeconds)
	}
	tw.Flush()
}
