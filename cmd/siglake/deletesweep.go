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
	"github.com/siglake/siglake/sidecar/deletes/sweep"
)

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
	reps, err := sidecar.DeleteSweep(ctx, l, cfg, log, tables, sweep.Options{Apply: *apply, SkipCancelPeriod: *skip})
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

func printSweeps(reps []sweep.Report, apply bool, cancelPeriod time.Duration) {
	last := map[string]sweep.Report{}
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
