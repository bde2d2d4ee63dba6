package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/fold"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/retention"
	"github.com/siglake/siglake/sidecar/rows"
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
func parseConditions(v string) (where []rows.Condition, why string) {
	for _, c := range strings.Split(v, "&") {
		col, vals, ok := strings.Cut(c, "=")
		if !ok || col == "" || vals == "" {
			return nil, fmt.Sprintf("condition %q is not COLUMN=VALUE", c)
		}
		where = append(where, rows.Condition{Column: col, Values: strings.Split(vals, ",")})
	}
	return where, ""
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
	var periodGiven *string
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "period" {
			periodGiven = period
		}
	})
	e, err := retentionEdit(periodGiven, rules, remove)
	if err != nil {
		return err
	}
	e.Replace = *replace
	set := tableSetting[retention.Policy]{noun: "policy", clear: *clear, replace: *replace,
		read: retention.PolicyProperty.Read, apply: func(p retention.Policy) (retention.Policy, error) { return p.Apply(e) },
		update: func(ctx context.Context, l *lake.Lake, table string, edit func(retention.Policy, error) (retention.Policy, error)) (retention.Policy, retention.Policy, error) {
			return retention.Update(ctx, l, table, edit, fold.CheckRetention)
		},
		lines: func(p retention.Policy) []string { return p.Lines(cfg.RetentionPeriod) }}
	if err := set.checkFlags(e.Period != nil || len(e.Rules) > 0 || len(e.Remove) > 0, "--period", "--rule", "--remove-rule"); err != nil {
		return err
	}
	ctx, l, done, err := openLake(cfg)
	if err != nil {
		return err
	}
	defer done()
	before, p, err := set.check(ctx, l, table)
	if err != nil {
		return err
	}
	if *dry {
		return retentionDryRun(ctx, l, cfg, table, before, p)
	}
	if err := set.commit(ctx, l, table, func(retention.Policy) string {
		if *clear {
			return fmt.Sprintf("removed the retention policy of %s: the process default (%s) applies", table, retention.FormatPeriod(cfg.RetentionPeriod))
		}
		return fmt.Sprintf("stored the retention policy of %s:", table)
	}); err != nil {
		return err
	}
	if cfg.RetentionInterval <= 0 {
		fmt.Println("note: --retention-interval-secs / SIGLAKE_RETENTION_INTERVAL_SECS is 0 here, so no sidecar with these options runs retention")
	}
	return nil
}

// retentionEdit reads the edit flags of `retention set`: period is nil when --period is not given
// ("default" is the process default).
func retentionEdit(period *string, rules, remove []string) (retention.Edit, error) {
	var e retention.Edit
	if period != nil && *period != "default" {
		if _, err := retention.ParsePeriod("--period", *period); err != nil {
			return e, err
		}
		e.Period = period
	} else if period != nil {
		e.Period = new(string) // the process default
	}
	for _, v := range rules {
		r, err := parseRule(v)
		if err != nil {
			return e, err
		}
		e.Rules = append(e.Rules, r)
	}
	for _, v := range remove {
		w, why := parseConditions(v)
		if why != "" {
			return e, fmt.Errorf("--remove-rule %q: %s; accepted: COLUMN=VALUE[&COLUMN=V1,V2], the conditions of a rule", v, why)
		}
		e.Remove = append(e.Remove, w)
	}
	return e, nil
}

// retentionDryRun shows how p would change the stored policy before and what it would remove now.
func retentionDryRun(ctx context.Context, l *lake.Lake, cfg config.Config, table string, before, p retention.Policy) error {
	log, err := sidecar.NewLogger("console", "warn")
	if err != nil {
		return err
	}
	rep, err := sidecar.RetentionRunner(l, cfg, log).Run(ctx, table, retention.Options{NoCaps: true, Policy: &p})
	if err != nil {
		return err
	}
	fmt.Printf("dry run: nothing written (\"process default\" is this command's --retention-period, %s)\n", retention.FormatPeriod(cfg.RetentionPeriod))
	fmt.Printf("retention policy of %s would change:\n", table)
	printDiff(os.Stdout, before.Lines(cfg.RetentionPeriod), p.Lines(cfg.RetentionPeriod))
	printRetention([]retention.Report{rep}, cfg.RetentionInterval.Seconds() > 0)
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
	ctx, l, tables, done, err := openTables(cfg, table)
	if err != nil {
		return err
	}
	defer done()
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
