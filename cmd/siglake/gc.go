package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/lake/deadline"
	"github.com/siglake/siglake/sidecar/lake/orphans"
)

// runGC is `siglake gc --older-than DURATION [--min-age-floor DURATION] [--apply] [--table T]...
// [--json] [compactor options]`. The catalog, warehouse and S3 options are the compactor's (flags
// or SIGLAKE_* env), --commit-timeout among them: the floor must stay far above it.
func runGC(args []string) error {
	gcFlags := flag.NewFlagSet("siglake gc", flag.ContinueOnError)
	withSynopsis(gcFlags, "siglake gc [--older-than DURATION] [--min-age-floor DURATION] [--apply] [--table TABLE]... [--json] [--dir DIR | catalog options]")
	olderThan := durationFlag(gcFlags, "older-than", orphans.DefaultOlderThan, false,
		"only objects older than this are removed; at least the floor (--min-age-floor)")
	floor := durationFlag(gcFlags, "min-age-floor", orphans.DefaultMinAge, false,
		"the least --older-than gc accepts; lower it only knowing no commit or rewrite runs that long, never below 12 times --commit-timeout")
	apply := gcFlags.Bool("apply", false, "delete the orphans (default: dry run, list them)")
	asJSON := gcFlags.Bool("json", false, "print the result as JSON")
	var tables multiFlag
	gcFlags.Var(&tables, "table", "limit gc to this `TABLE` (repeatable; default: every table)")

	cfg, help, err := toolConfig(gcFlags, args)
	if help || err != nil {
		return err
	}
	// Refused before the catalog is even opened: a young limit is an error of the command line.
	if err := orphans.CheckAge(*olderThan, *floor, cfg.CommitTimeout); err != nil {
		return err
	}
	// gc cannot see the compactor's deadline: it assumes its own --commit-timeout, and says so.
	commitTimeout := cfg.CommitTimeout
	if commitTimeout <= 0 {
		commitTimeout = deadline.DefaultCommitTimeout
	}
	ctx, l, done, err := openLake(cfg)
	if err != nil {
		return err
	}
	defer done()
	if err := requireTables(ctx, l, tables...); err != nil {
		return err
	}
	results, err := orphans.Run(ctx, l, orphans.Options{OlderThan: *olderThan, MinAge: *floor, Apply: *apply, Tables: tables, Keep: sidecar.GCKeep})
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(map[string]any{"apply": *apply, "older_than": orphans.FormatAge(*olderThan), "min_age_floor": orphans.FormatAge(*floor),
			"commit_timeout": orphans.FormatAge(commitTimeout), "tables": results}); jerr != nil {
			return jerr
		}
		return err
	}
	fmt.Printf("assuming the compactor's --commit-timeout is %s (pass gc the same value): the floor is at least %s\n",
		orphans.FormatAge(commitTimeout), orphans.FormatAge(orphans.FloorMin(commitTimeout)))
	verb := "would delete"
	if *apply {
		verb = "deleted"
	}
	var files int
	var bytes int64
	for _, r := range results {
		for _, o := range r.Orphans {
			fmt.Printf("%s\t%s\t%d\n", verb, o.Path, o.SizeBytes)
		}
		fmt.Printf("table %s: %d orphans, %d bytes, older than %s\n", r.Table, len(r.Orphans), r.Bytes, r.Cutoff.UTC().Format(time.RFC3339))
		files += len(r.Orphans)
		bytes += r.Bytes
	}
	fmt.Printf("%s %d objects, %d bytes", verb, files, bytes)
	if !*apply && files > 0 {
		fmt.Print(" (dry run: add --apply to delete)")
	}
	fmt.Println()
	return err
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// toolConfig parses a tool's own flags (those fs defines, plus --dir) and reads the compactor
// options (flags or SIGLAKE_* env) from the rest, so tools reach the catalog and warehouse the
// sidecar uses. help is true when -h was asked for and printed. A tool takes no positional
// argument; an embedded catalog must exist (requireCatalog).
func toolConfig(fs *flag.FlagSet, args []string) (cfg config.Config, help bool, err error) {
	cfg, positional, help, err := toolConfigArgs(fs, args)
	if help || err != nil {
		return cfg, help, err
	}
	if len(positional) > 0 {
		err := fmt.Errorf("unexpected arguments %q: %s takes only flags", positional, fs.Name())
		fmt.Fprintf(os.Stderr, "%v\n", err)
		return cfg, false, usageError{err}
	}
	return cfg, false, requireCatalog(cfg)
}

// toolConfigArgs is toolConfig for a tool that takes positional arguments: it returns them, and
// leaves requireCatalog to the caller, after it has checked them.
func toolConfigArgs(fs *flag.FlagSet, args []string) (cfg config.Config, positional []string, help bool, err error) {
	dir := fs.Lookup("dir")
	if dir == nil {
		fs.String("dir", "", dirUsage)
		dir = fs.Lookup("dir")
	}
	own, rest, positional, help := splitArgs(fs, args)
	if help {
		toolHelp(fs)
		return cfg, nil, true, nil
	}
	// A flag neither the tool nor the compactor has is refused here with the tool's usage: Load
	// would print the compactor's 130 lines of options under "Usage of siglake compactor".
	if err := checkOptionFlags(rest); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", fs.Name(), err)
		fs.SetOutput(os.Stderr)
		fs.Usage()
		fmt.Fprintln(os.Stderr, "\nCatalog, warehouse and S3 options are the compactor's: see 'siglake compactor -h'.")
		return cfg, nil, false, usageError{err}
	}
	if _, err := parseFlags(fs, own); err != nil {
		return cfg, nil, false, err
	}
	if rest, err = withDir(dir.Value.String(), rest); err != nil {
		return cfg, nil, false, err
	}
	cfg, err = config.Load(rest, nil)
	if errors.Is(err, flag.ErrHelp) {
		return cfg, nil, true, nil
	}
	if err != nil {
		return cfg, nil, false, loadError(err)
	}
	return cfg, positional, false, nil
}

// loadError marks an error of config.Load that is a wrong command line (an unknown flag, a
// stray argument: Load printed it with the usage) as a usageError; any other error, such as a bad
// option value, stays an error of the command, which main prints.
func loadError(err error) error {
	var fe *config.FlagError
	if errors.As(err, &fe) {
		return usageError{err}
	}
	return err
}
