package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/siglake/siglake/sidecar/fold"
)

const foldUsage = `usage: siglake fold show [TABLE] [--json] [compactor options]
       siglake fold set TABLE [--bucket 1m] [--key COLUMN]... [--agg COLUMN=FUNC]... [--tier AGE:BUCKET]... [--remove-tier AGE]...
                        [--replace] [--clear] [compactor options]

Rows of one (bucket, keys) fold into one on maintenance rewrites. Every column is the timestamp, a
--key or an --agg; FUNC is sum, min, max or count (a column holding counts; an average is a sum
and a count). --tier 7d:1h folds rows older than 7 days into 1h buckets. set changes only what it
names (a --tier replaces the tier of its age) and prints the change; --replace drops the rest.
See docs/folding.md.`

// runFold is `siglake fold show|set`.
func runFold(args []string) error {
	return tableSubcommand("fold", foldUsage, args, map[string]func(table string, args []string) error{
		"show": foldShow, "set": foldSet})
}

// parseFoldFlags builds a specification from the flags of `fold set`.
func parseFoldFlags(bucket string, keys, aggs, tiers []string) (fold.Spec, error) {
	s := fold.Spec{Bucket: bucket, Keys: keys}
	for _, a := range aggs {
		col, fn, ok := strings.Cut(a, "=")
		if !ok || col == "" || fn == "" {
			return s, fmt.Errorf("--agg %q: accepted: COLUMN=FUNC with FUNC sum, min, max or count", a)
		}
		s.Aggregates = append(s.Aggregates, fold.Aggregate{Column: col, Func: fn})
	}
	for _, t := range tiers {
		age, b, ok := strings.Cut(t, ":")
		if !ok || age == "" || b == "" {
			return s, fmt.Errorf("--tier %q: accepted: AGE:BUCKET, e.g. 7d:1h", t)
		}
		s.Tiers = append(s.Tiers, fold.Tier{After: age, Bucket: b})
	}
	return s, nil
}

func foldSet(table string, args []string) error {
	fs := flag.NewFlagSet("siglake fold set", flag.ContinueOnError)
	withSynopsis(fs, "siglake fold set TABLE [--bucket BUCKET] [--key COLUMN]... [--agg COLUMN=FUNC]... [--tier AGE:BUCKET]... [--remove-tier AGE]... [--replace] [--clear] [--dir DIR | catalog options]")
	bucket := fs.String("bucket", "", "the fold `BUCKET`: a duration that divides a day (1m, 5m, 1h, 1d); default: the stored one")
	var keys, aggs, tiers, removeTiers multiFlag
	fs.Var(&keys, "key", "a key `COLUMN`: folded rows share its value (repeatable; added to the stored keys)")
	fs.Var(&aggs, "agg", "`COLUMN=FUNC`: an aggregated column and its function, sum, min, max or count (repeatable; replaces the column's stored function)")
	fs.Var(&tiers, "tier", "`AGE:BUCKET`: rows older than AGE fold into BUCKET (repeatable; replaces the stored tier of that age, else adds one)")
	fs.Var(&removeTiers, "remove-tier", "`AGE`: remove the stored tier of that age (repeatable)")
	replace := fs.Bool("replace", false, "start from an empty specification: keys, aggregates and tiers the command does not give are dropped (default: kept)")
	clear := fs.Bool("clear", false, "remove the table's specification: it is no longer folded (folded rows stay folded)")
	cfg, help, err := toolConfig(fs, args)
	if help || err != nil {
		return err
	}
	if table == "" {
		return fmt.Errorf("a table is required: siglake fold set TABLE --bucket 1m --key service --agg events=count")
	}
	s, err := parseFoldFlags(*bucket, keys, aggs, tiers)
	if err != nil {
		return err
	}
	e := fold.Edit{Bucket: s.Bucket, Keys: s.Keys, Aggregates: s.Aggregates, Tiers: s.Tiers, RemoveTiers: removeTiers, Replace: *replace}
	set := tableSetting[fold.Spec]{noun: "specification", clear: *clear, replace: *replace, read: fold.SpecProperty.Read, update: fold.Update,
		apply: func(cur fold.Spec) (fold.Spec, error) {
			next, err := cur.Apply(e)
			if err == nil && next.Bucket == "" {
				err = fmt.Errorf("--bucket is required: the table has no fold specification yet (or --clear to remove one)")
			}
			return next, err
		},
		lines: fold.Spec.Lines}
	given := e.Bucket != "" || len(e.Keys) > 0 || len(e.Aggregates) > 0 || len(e.Tiers) > 0 || len(e.RemoveTiers) > 0
	if err := set.checkFlags(given, "--bucket", "--key", "--agg", "--tier", "--remove-tier"); err != nil {
		return err
	}
	ctx, l, done, err := openLake(cfg)
	if err != nil {
		return err
	}
	defer done()
	if _, _, err := set.check(ctx, l, table); err != nil {
		return err
	}
	return set.commit(ctx, l, table, func(next fold.Spec) string {
		if *clear {
			return fmt.Sprintf("removed the fold specification of %s: it is no longer folded", table)
		}
		return fmt.Sprintf("stored the fold specification of %s: %s", table, next.Describe())
	})
}

// foldReport is one table in `fold show`.
type foldReport struct {
	Name  string     `json:"table"`
	Spec  *fold.Spec `json:"spec,omitempty"`
	Error string     `json:"error,omitempty"` // a bad specification: the table is not folded
}

func foldShow(table string, args []string) error {
	fs := flag.NewFlagSet("siglake fold show", flag.ContinueOnError)
	withSynopsis(fs, "siglake fold show [TABLE] [--json] [--dir DIR | catalog options]")
	asJSON := fs.Bool("json", false, "print the specifications as JSON")
	cfg, help, err := toolConfig(fs, args)
	if help || err != nil {
		return err
	}
	ctx, l, tables, done, err := openTables(cfg, table)
	if err != nil {
		return err
	}
	defer done()
	var reps []foldReport
	var firstErr error
	for _, name := range tables {
		rep := foldReport{Name: name}
		t, err := l.LoadTable(ctx, name)
		if err == nil {
			var s fold.Spec
			var ok bool
			if s, ok, err = fold.Load(t); ok {
				rep.Spec = &s
			}
		}
		if err != nil {
			rep.Error = err.Error()
			if firstErr == nil {
				firstErr = fmt.Errorf("table %s: %w", name, err)
			}
		}
		if table == "" && rep.Spec == nil && rep.Error == "" {
			continue // listing: only rollup tables
		}
		reps = append(reps, rep)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reps); err != nil {
			return err
		}
		return firstErr
	}
	if len(reps) == 0 {
		fmt.Println("no table has a fold specification")
	}
	for _, r := range reps {
		switch {
		case r.Error != "":
			fmt.Printf("table %s: NOT FOLDED: %s\n", r.Name, r.Error)
		case r.Spec == nil:
			fmt.Printf("table %s: no fold specification\n", r.Name)
		default:
			fmt.Printf("table %s: %s\n", r.Name, r.Spec.Describe())
		}
	}
	return firstErr
}
