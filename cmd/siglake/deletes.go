package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/fold"
	"github.com/siglake/siglake/sidecar/lake"
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
	out, cerr, err := requestMatches(ctx, l, cfg, *tbl, got)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	fmt.Println(got.ID)
	printRecorded(ctx, l, cfg, *tbl, out, cerr)
	return nil
}

// requestMatches is the report of a recorded request with what it matches now: the dry run of
// delete-sweep, for this request alone. cerr says why the rows could not be counted.
func requestMatches(ctx context.Context, l *lake.Lake, cfg config.Config, tbl string, got deletes.Request) (out requestReport, cerr, err error) {
	log, err := sidecar.NewLogger("console", "warn")
	if err != nil {
		return out, nil, err
	}
	defer func() { _ = log.Sync() }()
	out = requestReport{Request: got, ExecuteAt: got.ExecuteAt(cfg.DeleteCancelPeriod), MatchingRows: -1}
	rep, cerr := sidecar.DeleteSweeper(l, cfg, log).Sweep(ctx, tbl, sweep.Options{NoCaps: true, Only: []string{got.ID}})
	if cerr == nil {
		out.MatchingRows = rep.ByRequest[got.ID]
		for _, c := range rep.Candidates {
			if c.Matching[got.ID] > 0 {
				out.CandidateFiles++
			}
		}
	}
	return out, cerr, nil
}

// printRecorded tells on stderr what was recorded, what it matches now (cerr: not counted) and
// when sweeps execute it.
func printRecorded(ctx context.Context, l *lake.Lake, cfg config.Config, tbl string, out requestReport, cerr error) {
	got := out.Request
	fmt.Fprintf(os.Stderr, "recorded deletion request %s on table %s: %s\n", got.ID, tbl, got.Describe())
	if got.AllRows {
		upTo := "for as long as it is pending"
		if got.To != "" {
			upTo = "with a timestamp before " + got.To
		}
		fmt.Fprintf(os.Stderr, "--all-rows: EVERY ROW of table %s %s will be deleted\n", tbl, upTo)
	}
	if cerr != nil {
		fmt.Fprintf(os.Stderr, "could not count the rows it matches (siglake delete-sweep --table %s shows them): %v\n", tbl, cerr)
	} else {
		fmt.Fprintf(os.Stderr, "matches now: %d rows in %d files (siglake delete-sweep --table %s lists them)\n", out.MatchingRows, out.CandidateFiles, tbl)
		if out.MatchingRows == 0 {
			// Most often a misspelt column value: the request would end done, deleting nothing.
			cols := ""
			if t, err := l.LoadTable(ctx, tbl); err == nil {
				var names []string
				for _, f := range t.Schema().Fields() {
					names = append(names, f.Name)
				}
				cols = " (columns of " + tbl + ": " + strings.Join(names, ", ") + ")"
			}
			fmt.Fprintf(os.Stderr, "WARNING: the request matches no row now: check the column names and values%s\n", cols)
		}
	}
	fmt.Fprintf(os.Stderr, "sweeps execute it from %s (stored in the request: created %s + SIGLAKE_DELETE_CANCEL_PERIOD %s; a sweeper with a longer period waits longer); "+
		"until %s before then `siglake delete-cancel --table %s %s` withdraws it\n",
		out.ExecuteAt.UTC().Format(time.RFC3339), got.CreatedAt.Format(time.RFC3339), cfg.DeleteCancelPeriod, deletes.CancelMargin, tbl, got.ID)
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
