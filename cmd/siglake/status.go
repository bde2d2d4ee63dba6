package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/demo"
	"github.com/siglake/siglake/sidecar/retention"
)

func runStatus(args []string) error {
	fs := flag.NewFlagSet("siglake status", flag.ContinueOnError)
	withSynopsis(fs, "siglake status [--addr HOST:PORT | --dir DIR] [--json]")
	addr := fs.String("addr", envOr("SIGLAKE_HTTP_ADDR", "127.0.0.1:9464"), "the sidecar's HTTP address, `HOST:PORT` (env SIGLAKE_HTTP_ADDR)")
	asJSON := fs.Bool("json", false, "print the raw JSON")
	dir := fs.String("dir", "", "a demo `DIR`: the address of the sidecar that 'siglake demo --dir DIR' runs on it")
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if *dir != "" {
		explicit := false
		fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "addr" })
		if explicit {
			return fmt.Errorf("--dir %s names the sidecar's address; give either --dir or --addr", *dir)
		}
		a, err := demo.RunningAddr(*dir)
		if err != nil {
			return err
		}
		*addr = a
	}
	url := "http://" + strings.TrimPrefix(*addr, "http://") + "/debug/status"
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return fmt.Errorf("is the sidecar running? (siglake demo --keep-running starts one; --addr or SIGLAKE_HTTP_ADDR names another) %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if *asJSON {
		_, err = os.Stdout.Write(body)
		return err
	}
	var r sidecar.StatusReport
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("decode %s: %w", url, err)
	}
	printStatus(os.Stdout, r)
	return nil
}

func printStatus(w io.Writer, r sidecar.StatusReport) {
	fmt.Fprintf(w, "node %s  role %s  version %s  up %s\n", r.Node, r.Role, r.Version, r.Now.Sub(r.StartedAt).Round(time.Second))
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
	fmt.Fprintf(w, "catalog  %s\n", cat)
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

	names := make([]string, 0, len(r.Tables))
	for n := range r.Tables {
		names = append(names, n)
	}
	sort.Strings(names)
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
		depth, levels, pass := "-", "-", "-"
		if m := t.Maintenance; m != nil {
			depth = fmt.Sprint(m.OverlapDepth)
			var parts []string
			for _, l := range sortedKeys(m.FilesPerLevel) {
				parts = append(parts, fmt.Sprintf("%s:%d", l, m.FilesPerLevel[l]))
			}
			levels = strings.Join(parts, " ")
			if m.LastPass != nil {
				pass = fmt.Sprintf("%s, %d bins", m.LastPass.Decision, len(m.LastPass.Bins))
				if n := m.LastPass.OutstandingBins; n > 0 {
					pass += fmt.Sprintf(", %d outstanding", n)
				}
			}
		}
		owner := t.Owner
		if owner == "" {
			owner = "-"
		}
		cands := strings.Join(t.Candidates, ",")
		if cands == "" {
			cands = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n, owner, cands, last, snap, segs, rows, files, depth, levels, pass)
	}
	tw.Flush()
	var pending []string
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
			pending = append(pending, fmt.Sprintf("  %s %s: %s%s, created %s, executes from %s (deleted %d rows in %d files so far)", n, p.ID, p.State, what,
				p.CreatedAt.UTC().Format(time.RFC3339), p.ExecuteAt.UTC().Format(time.RFC3339), p.RowsDeleted, p.FilesRewritten))
		}
		if !d.Sweeps && len(d.Pending) > 0 {
			pending = append(pending, fmt.Sprintf("  %s: SIGLAKE_DELETE_TASKS is off; run siglake delete-sweep --apply", n))
		}
	}
	if len(pending) > 0 {
		fmt.Fprintln(w, "\nPENDING DELETION REQUESTS")
		for _, l := range pending {
			fmt.Fprintln(w, l)
		}
	}
	var skipped []string
	for _, n := range names {
		if m := r.Tables[n].Maintenance; m != nil {
			for _, sk := range m.Skipped {
				skipped = append(skipped, fmt.Sprintf("  %s %s: %s after %d failed rewrites (%s)", n, sk.Path, sk.Class, sk.Failures, sk.Cause))
			}
		}
	}
	if len(skipped) > 0 {
		fmt.Fprintln(w, "\nSKIPPED FILES (set aside; siglake skipped clear TABLE PATH once repaired)")
		for _, l := range skipped {
			fmt.Fprintln(w, l)
		}
	}
	var ret []string
	for _, n := range names {
		st := r.Tables[n].Retention
		if st == nil {
			continue
		}
		line := fmt.Sprintf("  %s: %s", n, st.Policy)
		if st.Invalid != "" {
			line = fmt.Sprintf("  %s: INVALID POLICY, nothing is removed: %s", n, st.Invalid)
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
			line += fmt.Sprintf("\n    last run %s ago: %s", r.Now.Sub(lr.Time).Round(time.Second), lr.Outcome)
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
		ret = append(ret, line)
	}
	if len(ret) > 0 {
		fmt.Fprintln(w, "\nRETENTION")
		for _, l := range ret {
			fmt.Fprintln(w, l)
		}
	}
	printFoldStatus(w, r, names)
	if len(r.Members) > 0 {
		fmt.Fprintln(w, "\nMEMBERS")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tADDRESS\tSTATE\tROLES\tCATALOG")
		for _, m := range r.Members {
			cat := m.Catalog
			if cat == "" {
				cat = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Name, m.Addr, m.State, strings.Join(m.Roles, ","), cat)
		}
		tw.Flush()
	}
	if c := r.Claims; c != nil {
		fmt.Fprintf(w, "\nCLAIMS  holder %s, ttl %.0fs, %d live claimers, fair share %d\n", c.Holder, c.TTLSeconds, c.Live, c.Share)
		if c.LastError != "" {
			fmt.Fprintf(w, "  last tick failed: %s\n", c.LastError)
		}
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
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
	if len(r.Errors) > 0 {
		fmt.Fprintln(w, "\nRECENT ERRORS (newest first)")
		for _, e := range r.Errors {
			tbl := ""
			if e.Table != "" {
				tbl = " table=" + e.Table
			}
			fmt.Fprintf(w, "  %s %s%s: %s\n", e.Time.Format(time.RFC3339), e.Stage, tbl, e.Message)
		}
	}
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
