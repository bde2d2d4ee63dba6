package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/fold"
	"github.com/siglake/siglake/sidecar/rows"
)

// runDeleteRequest is `siglake delete-request --table T --where COL=VALUE --in COL=V1,V2 --from T
// --to T --reason TEXT [--all-rows] [compactor options]`: it records a deletion request, prints its
// id, and says what it matches now and when sweeps will execute it.
func runDeleteRequest(args []string) error {
	fs := flag.NewFlagSet("siglake delete-request", flag.ContinueOnError)
	withSynopsis(fs, "siglake delete-request --table TABLE [--where COL=V]... [--in COL=V1,V2]... [--from T] [--to T] [--all-rows] [--reason R] [--json] [--dir DIR | catalog options]")
	tbl := fs.String("table", "", "table the rows live in (required)")
	var where, in multiFlag
	fs.Var(&where, "where", "`COLUMN=VALUE`: rows whose column equals the value; several joined by AND in one --where, or repeated (conditions are ANDed); quote a value with spaces: COLUMN=\"a b\"")
	fs.Var(&in, "in", "`COLUMN=V1,V2,...`: rows whose column is one of the values (repeatable; values cannot contain commas)")
	from := fs.String("from", "", "only rows with timestamp >= this (RFC 3339 or YYYY-MM-DD, UTC)")
	to := fs.String("to", "", "only rows with timestamp < this (RFC 3339 or YYYY-MM-DD, UTC); default: the time of the request")
	future := fs.Bool("include-future", false, "without --to, leave the range open: also delete matching rows with later timestamps for as long as the request is pending")
	allRows := fs.Bool("all-rows", false, "delete EVERY row of the table (up to --to, default the time of the request); a request that bounds no row is refused without it")
	reason := fs.String("reason", "", "why (a ticket id, a legal reference); stored with the request")
	asJSON := fs.Bool("json", false, "print the stored request as JSON, with execute_at, candidate_files and matching_rows")
	cfg, help, err := toolConfig(fs, args)
	if help || err != nil {
		return err
	}
	if *tbl == "" {
		return fmt.Errorf("--table is required")
	}
	r := deletes.Request{From: *from, To: *to, Reason: *reason, AllRows: *allRows}
	if r.Where, err = conditions(where, in); err != nil {
		return err
	}
	if r.AllRows && (r.From != "" || r.To != "") {
		return fmt.Errorf("--all-rows deletes every row: give it without --from/--to (it covers rows up to the time of the request, or with --include-future every row while it is pending)")
	}
	ctx, l, done, err := openLake(cfg)
	if err != nil {
		return err
	}
	defer done()
	if err := requireTables(ctx, l, *tbl); err != nil {
		return err
	}
	// An empty --to becomes the time of the request only after the whole-table check, which must
	// see what the user gave: with --to filled in, no request would look unbounded.
	got, err := fold.RecordDelete(ctx, l, *tbl, r, time.Now(), deletes.RecordOptions{ToNow: !*future, CancelPeriod: cfg.DeleteCancelPeriod})
	if err != nil {
		return err
	}
	log, err := sidecar.NewLogger("console", "warn")
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	// What it matches now: the dry run of delete-sweep, for this request alone.
	out := requestReport{Request: got, ExecuteAt: got.ExecuteAt(cfg.DeleteCancelPeriod), MatchingRows: -1}
	rep, cerr := sidecar.DeleteSweeper(l, cfg, log).Sweep(ctx, *tbl, deletes.SweepOptions{NoCaps: true, Only: []string{got.ID}})
	if cerr == nil {
		out.MatchingRows = rep.ByRequest[got.ID]
		for _, c := range rep.Candidates {
			if c.Matching[got.ID] > 0 {
				out.CandidateFiles++
			}
		}
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	fmt.Println(got.ID)
	fmt.Fprintf(os.Stderr, "recorded deletion request %s on table %s: %s\n", got.ID, *tbl, got.Describe())
	if got.AllRows {
		upTo := "for as long as it is pending"
		if got.To != "" {
			upTo = "with a timestamp before " + got.To
		}
		fmt.Fprintf(os.Stderr, "--all-rows: EVERY ROW of table %s %s will be deleted\n", *tbl, upTo)
	}
	if cerr != nil {
		fmt.Fprintf(os.Stderr, "could not count the rows it matches (siglake delete-sweep --table %s shows them): %v\n", *tbl, cerr)
	} else {
		fmt.Fprintf(os.Stderr, "matches now: %d rows in %d files (siglake delete-sweep --table %s lists them)\n", out.MatchingRows, out.CandidateFiles, *tbl)
		if out.MatchingRows == 0 {
			// Most often a misspelt column value: the request would end done, deleting nothing.
			cols := ""
			if t, err := l.LoadTable(ctx, *tbl); err == nil {
				var names []string
				for _, f := range t.Schema().Fields() {
					names = append(names, f.Name)
				}
				cols = " (columns of " + *tbl + ": " + strings.Join(names, ", ") + ")"
			}
			fmt.Fprintf(os.Stderr, "WARNING: the request matches no row now: check the column names and values%s\n", cols)
		}
	}
	fmt.Fprintf(os.Stderr, "sweeps execute it from %s (stored in the request: created %s + SIGLAKE_DELETE_CANCEL_PERIOD %s; a sweeper with a longer period waits longer); "+
		"until %s before then `siglake delete-cancel --table %s %s` withdraws it\n",
		out.ExecuteAt.UTC().Format(time.RFC3339), got.CreatedAt.Format(time.RFC3339), cfg.DeleteCancelPeriod, deletes.CancelMargin, *tbl, got.ID)
	return nil
}

// requestReport is what delete-request --json prints: the stored request, when sweeps execute it,
// and what it matches now (matching_rows -1: not counted).
type requestReport struct {
	deletes.Request
	ExecuteAt      time.Time `json:"execute_at"`
	CandidateFiles int       `json:"candidate_files"`
	MatchingRows   int64     `json:"matching_rows"`
}

// runDeleteCancel is `siglake delete-cancel --table T ID [compactor options]`: it withdraws a
// pending request before it runs.
func runDeleteCancel(args []string) error {
	fs := flag.NewFlagSet("siglake delete-cancel", flag.ContinueOnError)
	withSynopsis(fs, "siglake delete-cancel --table TABLE ID [--dir DIR | catalog options]")
	tbl := fs.String("table", "", "table the request was recorded on (required)")
	cfg, pos, help, err := toolConfigArgs(fs, args)
	if help || err != nil {
		return err
	}
	if *tbl == "" || len(pos) != 1 {
		err := fmt.Errorf("usage: siglake delete-cancel --table TABLE ID (the id delete-request printed; siglake delete-sweep lists them)")
		fmt.Fprintf(os.Stderr, "%v\n", err)
		return usageError{err}
	}
	if err := requireCatalog(cfg); err != nil {
		return err
	}
	ctx, l, done, err := openLake(cfg)
	if err != nil {
		return err
	}
	defer done()
	if err := requireTables(ctx, l, *tbl); err != nil {
		return err
	}
	r, err := deletes.Cancel(ctx, l, *tbl, pos[0], time.Now(), cfg.DeleteCancelPeriod)
	if err != nil {
		return err
	}
	fmt.Printf("cancelled deletion request %s on table %s: no sweep executes it\n", r.ID, *tbl)
	return nil
}

// runDeleteSweep is `siglake delete-sweep [--table T]... [--apply [--skip-cancel-period]] [--json] [compactor options]`.
func runDeleteSweep(args []string) error {
	fs := flag.NewFlagSet("siglake delete-sweep", flag.ContinueOnError)
	withSynopsis(fs, "siglake delete-sweep [--table TABLE]... [--apply [--skip-cancel-period]] [--json] [--dir DIR | catalog options]")
	apply := fs.Bool("apply", false, "rewrite the files and mark requests done, whatever SIGLAKE_DELETE_TASKS says (default: dry run); requests inside their cancel period wait")
	skip := fs.Bool("skip-cancel-period", false, "with --apply: also execute requests recorded less than SIGLAKE_DELETE_CANCEL_PERIOD ago (they can no longer be cancelled)")
	asJSON := fs.Bool("json", false, "print the sweep reports as JSON")
	var tables multiFlag
	fs.Var(&tables, "table", "limit the sweep to this `TABLE` (repeatable; default: every table)")
	cfg, help, err := toolConfig(fs, args)
	if help || err != nil {
		return err
	}
	if *skip && !*apply {
		return fmt.Errorf("--skip-cancel-period goes with --apply (a dry run already counts every pending request)")
	}
	log, err := sidecar.NewLogger("console", "info")
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	ctx, l, done, err := openLake(cfg)
	if err != nil {
		return err
	}
	defer done()
	if err := requireTables(ctx, l, tables...); err != nil {
		return err
	}
	if *skip {
		fmt.Fprintf(os.Stderr, "--skip-cancel-period: executing pending requests now, also those recorded less than %s ago (SIGLAKE_DELETE_CANCEL_PERIOD)\n", cfg.DeleteCancelPeriod)
	}
	reps, err := sidecar.DeleteSweep(ctx, l, cfg, log, tables, deletes.SweepOptions{Apply: *apply, SkipCancelPeriod: *skip})
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(map[string]any{"apply": *apply, "skip_cancel_period": *skip, "sweeps": reps}); jerr != nil {
			return jerr
		}
		return err
	}
	printSweeps(reps, *apply, cfg.DeleteCancelPeriod)
	return err
}

func printSweeps(reps []deletes.SweepReport, apply bool, cancelPeriod time.Duration) {
	last := map[string]deletes.SweepReport{}
	var order []string
	for i, r := range reps {
		if _, ok := last[r.Table]; !ok {
			order = append(order, r.Table)
		}
		last[r.Table] = r
		if apply {
			fmt.Printf("table %s sweep %d: %s, %d candidates, %d rewritten, %d rows deleted", r.Table, i+1, orNone(r.Outcome), len(r.Candidates), r.Rewritten, r.Deleted)
			if len(r.Done) > 0 {
				fmt.Printf(", done: %s", strings.Join(r.Done, " "))
			}
			fmt.Println()
		}
	}
	for _, name := range order {
		r := last[name]
		fmt.Printf("\ntable %s: %d requests\n", name, len(r.Requests))
		for _, q := range r.Requests {
			fmt.Printf("  %s  %-7s  %s", q.ID, q.State, q.Describe())
			if q.Reason != "" {
				fmt.Printf("  (%s)", q.Reason)
			}
			fmt.Printf("  deleted %d rows in %d files", q.RowsDeleted, q.FilesRewritten)
			switch {
			case q.State == deletes.Done:
				fmt.Printf(", done at snapshot %d", q.DoneSnapshotID)
			case q.State == deletes.Pending && time.Now().Before(q.ExecuteAt(cancelPeriod)):
				fmt.Printf(", waits its cancel period until %s (delete-cancel withdraws it; --apply --skip-cancel-period runs it now)",
					q.ExecuteAt(cancelPeriod).UTC().Format(time.RFC3339))
			}
			fmt.Println()
		}
		for _, e := range r.Invalid {
			fmt.Printf("  invalid: %s\n", e)
		}
		if apply {
			continue
		}
		for _, c := range r.Candidates {
			ids := make([]string, 0, len(c.Matching))
			for id := range c.Matching {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			var parts []string
			for _, id := range ids {
				parts = append(parts, fmt.Sprintf("%s=%d", id, c.Matching[id]))
			}
			fmt.Printf("  candidate %s (%d rows, %d bytes): matching rows %s: %s\n", c.Path, c.Rows, c.Bytes, strings.Join(parts, " "), c.Result)
		}
		var total int64
		for _, n := range r.ByRequest {
			total += n
		}
		fmt.Printf("  %d candidate files, %d matching rows (dry run: add --apply to delete them)\n", len(r.Candidates), total)
	}
}

func orNone(s string) string {
	if s == "" {
		return "nothing pending"
	}
	return s
}

// conditions parses the --where COLUMN=VALUE and --in COLUMN=V1,V2 flags of delete-request, tail
// and search (the delete-request grammar).
func conditions(where, in multiFlag) ([]rows.Condition, error) {
	var out []rows.Condition
	for _, w := range where {
		cs, err := rows.ParseWhere(w)
		if err != nil {
			return nil, fmt.Errorf("--where %w", err)
		}
		out = append(out, cs...)
	}
	for _, w := range in {
		c, err := rows.ParseIn(w)
		if err != nil {
			return nil, fmt.Errorf("--in %w", err)
		}
		out = append(out, c)
	}
	return out, nil
}

// columnList parses a --columns A,B,C flag (tail, search); blanks are dropped.
func columnList(s string) []string {
	var out []string
	for _, c := range strings.Split(s, ",") {
		if c = strings.TrimSpace(c); c != "" {
			out = append(out, c)
		}
	}
	return out
}
