package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/fold"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/retention"
)

const retentionUsage = `usage: siglake retention show [TABLE] [--json] [compactor options]
       siglake retention set TABLE [--period 30d] [--rule COND[&COND]:PERIOD[:PRIORITY]]... [--remove-rule COND[&COND]]...
                             [--replace] [--clear] [--dry-run] [compactor options]

COND is COLUMN=VALUE or COLUMN=V1,V2 (one of the values), as in delete-request; a rule keeps the
rows it matches for its own PERIOD (0 = for ever). The highest PRIORITY wins (default 0), ties
take the shortest period. Periods: 30d, 4w, 36h, at least 1d; 0 keeps for ever. set changes only
what it names (a --rule replaces the rule with the same conditions) and prints the change; --replace
drops the rest. See docs/retention.md.`

// runRetention is `siglake retention show|set`.
func runRetention(args []string) error {
	return tableSubcommand("retention", retentionUsage, args, map[string]func(table string, args []string) error{
		"show": retentionShow, "set": retentionSet})
}

// tableSubcommand runs `siglake NAME ACTION [TABLE] ...`: the action's function gets the table
// (empty when the first argument after the action is a flag) and the rest.
func tableSubcommand(name, usage string, args []string, actions map[string]func(table string, args []string) error) error {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprintln(os.Stdout, usage)
		if len(args) == 0 {
			return usageError{fmt.Errorf("a subcommand is required")}
		}
		return nil
	}
	action, rest := args[0], args[1:]
	var table string
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		table, rest = rest[0], rest[1:]
	}
	if f, ok := actions[action]; ok {
		return f(table, rest)
	}
	names := make([]string, 0, len(actions))
	for a := range actions {
		names = append(names, a)
	}
	sort.Strings(names)
	fmt.Fprintln(os.Stderr, usage)
	return usageError{fmt.Errorf("%s %q: accepted subcommands: %s", name, action, strings.Join(names, ", "))}
}

// tableOrAll is table, or every table of l in name order when it is empty.
func tableOrAll(ctx context.Context, l *lake.Lake, table string) ([]string, error) {
	if table != "" {
		return []string{table}, requireTables(ctx, l, table)
	}
	tables, err := l.ListTables(ctx)
	sort.Strings(tables)
	return tables, err
}

// ruleFlag parses --rule COND[&COND]:PERIOD[:PRIORITY].
func parseRule(v string) (retention.Rule, error) {
	bad := func(why string) error {
		return fmt.Errorf("--rule %q: %s; accepted: COLUMN=VALUE[&COLUMN=V1,V2]:PERIOD[:PRIORITY], e.g. severity=debug:3d", v, why)
	}
	parts := strings.Split(v, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return retention.Rule{}, bad("conditions and a period separated by ':'")
	}
	r := retention.Rule{Period: parts[1]}
	if _, err := retention.ParsePeriod("--rule period", parts[1]); err != nil {
		return retention.Rule{}, err
	}
	if len(parts) == 3 {
		p, err := strconv.Atoi(parts[2])
		if err != nil {
			return retention.Rule{}, bad("the priority is a whole number")
		}
		r.Priority = p
	}
	where, why := parseConditions(parts[0])
	if why != "" {
		return retention.Rule{}, bad(why)
	}
	r.Where = where
	return r, nil
}

// parseConditions reads COND[&COND] (COLUMN=VALUE or COLUMN=V1,V2); why says what is wrong.
func parseConditions(v string) (where []deletes.Condition, why string) {
	for _, c := range strings.Split(v, "&") {
		col, vals, ok := strings.Cut(c, "=")
		if !ok || col == "" || vals == "" {
			return nil, fmt.Sprintf("condition %q is not COLUMN=VALUE", c)
		}
		where = append(where, deletes.Condition{Column: col, Values: strings.Split(vals, ",")})
	}
	return where, ""
}

// printDiff writes a before/after diff of a policy's lines: "- " for a line only before, "+ "
// for one only after, "  " for one kept. It returns whether anything changed.
func printDiff(w io.Writer, before, after []string) bool {
	changed := false
	for _, l := range before {
		if !slices.Contains(after, l) {
			fmt.Fprintf(w, "  - %s\n", l)
			changed = true
		}
	}
	for _, l := range after {
		if slices.Contains(before, l) {
			fmt.Fprintf(w, "    %s\n", l)
		} else {
			fmt.Fprintf(w, "  + %s\n", l)
			changed = true
		}
	}
	return changed
}

func retentionSet(table string, args []string) error {
	fs := flag.NewFlagSet("siglake retention set", flag.ContinueOnError)
	withSynopsis(fs, "siglake retention set TABLE [--period PERIOD] [--rule COND[&COND]:PERIOD[:PRIORITY]]... [--remove-rule COND[&COND]]... [--replace] [--clear] [--dry-run] [--dir DIR | catalog options]")
	period := fs.String("period", "", "the table's `PERIOD` (30d, 4w, 36h; at least 1d; 0 keeps for ever; default: the process default, --retention-period)")
	var rules, remove multiFlag
	fs.Var(&rules, "rule", "`COND[&COND]:PERIOD[:PRIORITY]`: rows matching the conditions keep PERIOD; replaces the rule with the same conditions, else adds one (repeatable)")
	fs.Var(&remove, "remove-rule", "`COND[&COND]`: remove the rule with these conditions (repeatable)")
	replace := fs.Bool("replace", false, "start from an empty policy: rules and period the command does not give are dropped (default: kept)")
	clear := fs.Bool("clear", false, "remove the table's own policy: the process default (--retention-period) applies")
	dry := fs.Bool("dry-run", false, "show what would change and what the policy would remove now, and write nothing")
	cfg, help, err := toolConfig(fs, args)
	if help || err != nil {
		return err
	}
	if table == "" {
		return fmt.Errorf("a table is required: siglake retention set TABLE --period 30d")
	}
	var e retention.Edit
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "period" {
			e.Period = period
		}
	})
	if e.Period != nil && *period != "default" {
		if _, err := retention.ParsePeriod("--period", *period); err != nil {
			return err
		}
	} else if e.Period != nil {
		*e.Period = "" // the process default
	}
	for _, v := range rules {
		r, err := parseRule(v)
		if err != nil {
			return err
		}
		e.Rules = append(e.Rules, r)
	}
	for _, v := range remove {
		w, why := parseConditions(v)
		if why != "" {
			return fmt.Errorf("--remove-rule %q: %s; accepted: COLUMN=VALUE[&COLUMN=V1,V2], the conditions of a rule", v, why)
		}
		e.Remove = append(e.Remove, w)
	}
	e.Replace = *replace
	given := e.Period != nil || len(e.Rules) > 0 || len(e.Remove) > 0
	switch {
	case *clear && (given || *replace):
		return fmt.Errorf("--clear removes the policy; it takes no --period, --rule, --remove-rule or --replace")
	case !*clear && !given:
		return fmt.Errorf("give --period, --rule or --remove-rule (or --clear to remove the table's policy)")
	}
	ctx, l, done, err := openLake(cfg)
	if err != nil {
		return err
	}
	defer done()
	t, err := loadTable(ctx, l, table)
	if err != nil {
		return err
	}
	before, _, err := retention.PolicyProperty.Read(t.Properties())
	if err != nil && !*clear && !*replace {
		return fmt.Errorf("%w; --replace sets a new policy over it, --clear removes it", err)
	}
	p := retention.Policy{}
	if !*clear {
		if p, err = before.Apply(e); err != nil {
			return err
		}
	}
	log, err := sidecar.NewLogger("console", "warn")
	if err != nil {
		return err
	}
	if *dry {
		r := sidecar.RetentionRunner(l, cfg, log)
		rep, err := r.Run(ctx, table, retention.Options{NoCaps: true, Policy: &p})
		if err != nil {
			return err
		}
		fmt.Printf("dry run: nothing written (\"process default\" is this command's --retention-period, %s)\n", retention.FormatPeriod(cfg.RetentionPeriod))
		fmt.Printf("retention policy of %s would change:\n", table)
		printDiff(os.Stdout, before.Lines(cfg.RetentionPeriod), p.Lines(cfg.RetentionPeriod))
		printRetention([]retention.Report{rep}, cfg.RetentionInterval.Seconds() > 0)
		return nil
	}
	// The edit is applied to the policy stored at commit time (a concurrent `retention set`
	// makes the commit retry on its result) and the diff is printed from what it replaced.
	before, p, err = retention.Update(ctx, l, table, func(cur retention.Policy, curErr error) (retention.Policy, error) {
		switch {
		case *clear:
			return retention.Policy{}, nil
		case curErr != nil && !*replace:
			return retention.Policy{}, fmt.Errorf("%w; --replace sets a new policy over it, --clear removes it", curErr)
		}
		return cur.Apply(e)
	}, fold.CheckRetention)
	if err != nil {
		return err
	}
	if *clear {
		fmt.Printf("removed the retention policy of %s: the process default (%s) applies\n", table, retention.FormatPeriod(cfg.RetentionPeriod))
	} else {
		fmt.Printf("stored the retention policy of %s:\n", table)
	}
	if !printDiff(os.Stdout, before.Lines(cfg.RetentionPeriod), p.Lines(cfg.RetentionPeriod)) {
		fmt.Println("  (unchanged)")
	}
	if cfg.RetentionInterval <= 0 {
		fmt.Println("note: --retention-interval-secs / SIGLAKE_RETENTION_INTERVAL_SECS is 0 here, so no sidecar with these options runs retention")
	}
	return nil
}

func retentionShow(table string, args []string) error {
	fs := flag.NewFlagSet("siglake retention show", flag.ContinueOnError)
	withSynopsis(fs, "siglake retention show [TABLE] [--json] [--dir DIR | catalog options]")
	asJSON := fs.Bool("json", false, "print the reports as JSON")
	cfg, help, err := toolConfig(fs, args)
	if help || err != nil {
		return err
	}
	ctx, l, done, err := openLake(cfg)
	if err != nil {
		return err
	}
	defer done()
	tables, err := tableOrAll(ctx, l, table)
	if err != nil {
		return err
	}
	log, err := sidecar.NewLogger("console", "warn")
	if err != nil {
		return err
	}
	r := sidecar.RetentionRunner(l, cfg, log)
	var reps []retention.Report
	var firstErr error
	for _, name := range tables {
		rep, err := r.Run(ctx, name, retention.Options{NoCaps: true})
		if err != nil {
			rep.Error = err.Error()
			if firstErr == nil {
				firstErr = err
			}
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
	fmt.Printf("(\"process default\" is this command's --retention-period / SIGLAKE_RETENTION_PERIOD, %s; the sidecars may run with another: pass theirs)\n\n",
		retention.FormatPeriod(cfg.RetentionPeriod))
	printRetention(reps, cfg.RetentionInterval > 0)
	return firstErr
}

func printRetention(reps []retention.Report, running bool) {
	for _, rep := range reps {
		fmt.Printf("table %s\n", rep.Table)
		if rep.Error != "" {
			fmt.Printf("  error: %s\n", rep.Error)
			if rep.Invalid != "" { // the cause with its values: the error leaves them out for logs
				fmt.Printf("  invalid policy: %s\n", rep.Invalid)
			}
			if rep.Policy == "" {
				continue
			}
		}
		fmt.Printf("  policy: %s\n", rep.Policy)
		if !running {
			fmt.Println("  (retention runs are off: --retention-interval-secs 0)")
		}
		for _, c := range rep.Classes {
			cut := "kept for ever"
			if c.Cutoff != nil {
				cut = "rows before " + c.Cutoff.Format("2006-01-02T15:04:05Z") + " go"
			}
			if c.Fingerprint != "" { // what /debug/status shows in place of the values
				cut += " [" + c.Fingerprint + "]"
			}
			fmt.Printf("  %-40s %-6s %s\n", c.Class, c.Period, cut)
		}
		if rep.OldestRow != nil {
			fmt.Printf("  oldest row: %s\n", rep.OldestRow.Format("2006-01-02T15:04:05Z"))
		}
		tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  would remove\tfiles\trows\tbytes")
		total := 0
		for _, path := range retention.Paths {
			c := rep.Paths[path]
			if c == nil {
				continue
			}
			total += c.Files
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\n", path, c.Files, c.Rows, c.Bytes)
		}
		if total == 0 {
			fmt.Fprintln(tw, "  nothing\t0\t0\t0")
		}
		_ = tw.Flush()
		for _, p := range rep.Pending {
			wait := p.Waiting
			if wait == "" {
				wait = "due: deleted by the next run"
			}
			fmt.Printf("  pending deletion %s: %d objects, %d bytes, removed %s (%s)\n", p.ID, p.Files, p.Bytes, p.RemovedAt.Format("2006-01-02T15:04:05Z"), wait)
		}
	}
}
