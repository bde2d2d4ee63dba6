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
)

// runDeleteRequest is `siglake delete-request --table T --where COL=VALUE --in COL=V1,V2 --from T
// --to T --reason TEXT [compactor options]`: it records a deletion request and prints its id.
func runDeleteRequest(args []string) error {
	fs := flag.NewFlagSet("siglake delete-request", flag.ContinueOnError)
	tbl := fs.String("table", "", "table the rows live in (required)")
	var where, in multiFlag
	fs.Var(&where, "where", "COLUMN=VALUE: rows whose column equals the value (repeatable; conditions are ANDed)")
	fs.Var(&in, "in", "COLUMN=V1,V2,...: rows whose column is one of the values (repeatable; values cannot contain commas)")
	from := fs.String("from", "", "only rows with timestamp >= this (RFC 3339 or YYYY-MM-DD, UTC)")
	to := fs.String("to", "", "only rows with timestamp < this (RFC 3339 or YYYY-MM-DD, UTC); default: the time of the request")
	future := fs.Bool("include-future", false, "without --to, leave the range open: also delete matching rows with later timestamps for as long as the request is pending")
	reason := fs.String("reason", "", "why (a ticket id, a legal reference); stored with the request")
	asJSON := fs.Bool("json", false, "print the stored request as JSON")
	cfg, help, err := toolConfig(fs, args)
	if help || err != nil {
		return err
	}
	if *tbl == "" {
		return fmt.Errorf("--table is required")
	}
	r := deletes.Request{From: *from, To: *to, Reason: *reason}
	if r.To == "" && !*future {
		// What exists now: an open range would keep the request pending, and rewriting every
		// new file that matches, for as long as matching rows keep arriving.
		r.To = time.Now().UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
	}
	if r.Where, err = conditions(where, in); err != nil {
		return err
	}
	ctx, l, done, err := openLake(cfg)
	if err != nil {
		return err
	}
	defer done()
	got, err := fold.RecordDelete(ctx, l, *tbl, r, time.Now())
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(got)
	}
	fmt.Println(got.ID)
	fmt.Fprintf(os.Stderr, "recorded deletion request %s on table %s: %s\n", got.ID, *tbl, got.Describe())
	return nil
}

// runDeleteSweep is `siglake delete-sweep [--table T]... [--apply] [--json] [compactor options]`.
func runDeleteSweep(args []string) error {
	fs := flag.NewFlagSet("siglake delete-sweep", flag.ContinueOnError)
	apply := fs.Bool("apply", false, "rewrite the files and mark requests done, whatever SIGLAKE_DELETE_TASKS says (default: dry run)")
	asJSON := fs.Bool("json", false, "print the sweep reports as JSON")
	var tables multiFlag
	fs.Var(&tables, "table", "limit the sweep to this table (repeatable; default: every table)")
	cfg, help, err := toolConfig(fs, args)
	if help || err != nil {
		return err
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
	reps, err := sidecar.DeleteSweep(ctx, l, cfg, log, tables, *apply)
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(map[string]any{"apply": *apply, "sweeps": reps}); jerr != nil {
			return jerr
		}
		return err
	}
	printSweeps(reps, *apply)
	return err
}

func printSweeps(reps []deletes.SweepReport, apply bool) {
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
			if q.State == deletes.Done {
				fmt.Printf(", done at snapshot %d", q.DoneSnapshotID)
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
func conditions(where, in multiFlag) ([]deletes.Condition, error) {
	var out []deletes.Condition
	for _, w := range where {
		c, err := deletes.ParseWhere(w)
		if err != nil {
			return nil, fmt.Errorf("--where %w", err)
		}
		out = append(out, c)
	}
	for _, w := range in {
		c, err := deletes.ParseIn(w)
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
