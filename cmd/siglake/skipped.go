package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/siglake/siglake/sidecar/lake"
)

const skippedUsage = `usage: siglake skipped list [TABLE] [--json] [compactor options]
       siglake skipped clear TABLE [PATH...] [compactor options]

Data files whose rewrites failed permanently (corrupt, truncated, missing, unreadable) are set
aside: maintenance plans their partition without them. list shows them with their causes; clear
(every file of the table, or the PATHs given) brings them back into planning once repaired.
See docs/operations.md "Skipped files".`

// runSkipped is `siglake skipped list|clear`.
func runSkipped(args []string) error {
	if len(args) == 0 || isHelp(args[0]) {
		if len(args) == 0 {
			fmt.Fprintln(os.Stderr, skippedUsage)
			return usageError{fmt.Errorf("a subcommand is required")}
		}
		fmt.Fprintln(os.Stdout, skippedUsage)
		return nil
	}
	action := args[0]
	switch action {
	case "list", "clear":
	default:
		fmt.Fprintln(os.Stderr, skippedUsage)
		return usageError{fmt.Errorf("skipped %q: accepted subcommands: list, clear", action)}
	}
	fs := flag.NewFlagSet("siglake skipped "+action, flag.ContinueOnError)
	withSynopsis(fs, map[string]string{"list": "siglake skipped list [TABLE] [--json] [--dir DIR | catalog options]",
		"clear": "siglake skipped clear TABLE [PATH...] [--json] [--dir DIR | catalog options]"}[action])
	asJSON := fs.Bool("json", false, "print JSON")
	cfg, pos, help, err := toolConfigArgs(fs, args[1:])
	if help || err != nil {
		return err
	}
	bad := func(err error) error {
		fmt.Fprintf(os.Stderr, "%v\n%s\n", err, skippedUsage)
		return usageError{err}
	}
	if action == "clear" && len(pos) == 0 {
		return bad(fmt.Errorf("a table is required: siglake skipped clear TABLE [PATH...]"))
	}
	if action == "list" && len(pos) > 1 {
		return bad(fmt.Errorf("list takes at most one table, got %q", pos))
	}
	if err := requireCatalog(cfg); err != nil {
		return err
	}
	ctx, l, done, err := openLake(cfg)
	if err != nil {
		return err
	}
	defer done()
	if err := requireTables(ctx, l, pos[:min(len(pos), 1)]...); err != nil {
		return err
	}
	if action == "clear" {
		return skippedClear(ctx, l, pos[0], pos[1:])
	}
	return skippedList(ctx, l, pos, *asJSON)
}

// skippedClear brings paths of table (every set-aside file when none) back into planning.
func skippedClear(ctx context.Context, l *lake.Lake, table string, paths []string) error {
	cleared, err := l.ClearSkipped(ctx, table, paths)
	if err != nil {
		return err
	}
	if len(paths) > 0 && len(cleared) < len(paths) {
		return fmt.Errorf("%d of the %d paths given are not set aside in %s (siglake skipped list %s shows those that are); cleared %v",
			len(paths)-len(cleared), len(paths), table, table, cleared)
	}
	fmt.Printf("cleared %d set-aside file(s) of %s; maintenance plans them again\n", len(cleared), table)
	for _, p := range cleared {
		fmt.Println("  " + p)
	}
	return nil
}

// skippedList prints the set-aside files of tables (every table when none).
func skippedList(ctx context.Context, l *lake.Lake, tables []string, asJSON bool) error {
	if len(tables) == 0 {
		var err error
		if tables, err = l.ListTables(ctx); err != nil {
			return err
		}
		sort.Strings(tables)
	}
	out := map[string][]lake.Skipped{}
	for _, name := range tables {
		t, err := l.LoadTable(ctx, name)
		if err != nil {
			return err
		}
		out[name] = lake.SortedSkipped(lake.SkippedFiles(t.Properties()))
	}
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	n := 0
	for _, name := range tables {
		for _, s := range out[name] {
			n++
			fmt.Printf("%s  %s\n    %s after %d failed %s rewrites, set aside %s: %s\n", name, s.Path, s.Class, s.Failures, s.Kind,
				s.At.Format(time.RFC3339), s.Cause)
		}
	}
	if n == 0 {
		fmt.Println("no file is set aside")
	}
	return nil
}
