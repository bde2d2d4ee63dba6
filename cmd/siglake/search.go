package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/search"
	"github.com/siglake/siglake/sidecar/search/output"
)

// optionalString is a string flag that knows whether it was given (--contains "" is an error,
// not an absent test).
type optionalString struct{ v *string }

func (o *optionalString) String() string {
	if o.v == nil {
		return ""
	}
	return *o.v
}
func (o *optionalString) Set(s string) error { o.v = &s; return nil }

// runSearch is `siglake search TABLE [--from T] [--to T] [--since D] [--where COL=V] [--in COL=V1,V2]
// [--contains S] [--token T] [--limit N] [--order asc|desc] [--columns A,B] [--format table|json|csv]
// [--explain] [--skip-metadata]`: an ordered scan of the table's current snapshot that prunes with
// the search metadata (docs/search.md).
func runSearch(args []string) error {
	fs := flag.NewFlagSet("siglake search", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: siglake search TABLE [flags] [--dir DIR | catalog options]\n\n"+
			"The rows of TABLE's current snapshot that match, in timestamp order, read with as few bytes as the\n"+
			"search metadata allows (docs/search.md).\n\n")
		fs.PrintDefaults()
	}
	var where, in multiFlag
	var contains, token optionalString
	fs.Var(&where, "where", "`COLUMN=VALUE`: only rows whose column equals the value (repeatable; ANDed)")
	fs.Var(&in, "in", "`COLUMN=V1,V2,...`: only rows whose column is one of the values (repeatable)")
	from := fs.String("from", "", "only rows with timestamp >= this (RFC 3339 or YYYY-MM-DD, UTC)")
	to := fs.String("to", "", "only rows with timestamp < this (RFC 3339 or YYYY-MM-DD, UTC)")
	since := durationFlag(fs, "since", 0, false, "only rows of the last DURATION (from = now - DURATION; not with --from)")
	fs.Var(&contains, "contains", "`SUBSTR`: only rows whose raw column contains it (case-sensitive bytes)")
	fs.Var(&token, "token", "`T`: only rows whose raw column holds T as a whole token (runs of ASCII letters, digits, _ and any non-ASCII bytes)")
	limit := fs.Int("limit", 100, "most rows to print; 0 prints every match")
	order := fs.String("order", "asc", "asc (oldest first) or desc (newest first)")
	columns := fs.String("columns", "", "columns to print, comma-separated (default: all; the timestamp is always first)")
	format := fs.String("format", "table", "output: table, json (one object per line) or csv")
	explain := fs.Bool("explain", false, "print to stderr what each stage considered, pruned and read (JSON with --format json)")
	skipMeta := fs.Bool("skip-metadata", false, "ignore siglake's search metadata (footer entries, Puffin sidecars): what a search costs without it; same rows")
	cfg, positional, help, err := toolConfigArgs(fs, args)
	if help || err != nil {
		return err
	}
	if len(positional) != 1 {
		err := fmt.Errorf("one TABLE, got %q", positional)
		fmt.Fprintf(os.Stderr, "siglake search: %v\nusage: siglake search TABLE [flags] (-h for more)\n", err)
		return usageError{err}
	}
	// Refused before anything is read (docs/search.md), the catalog too.
	if !slices.Contains(output.Formats, *format) {
		return fmt.Errorf("--format %q: accepted: %s", *format, strings.Join(output.Formats, ", "))
	}
	if err := requireCatalog(cfg); err != nil {
		return err
	}
	q, err := searchQuery(search.Query{From: *from, To: *to, Contains: contains.v, Token: token.v, Limit: *limit, Columns: columnList(*columns)},
		*order, *since, where, in)
	if err != nil {
		return err
	}
	opts := search.Options{MemoryBudget: cfg.MergeMemoryBytes, SkipMetadata: *skipMeta}
	if opts.MemoryBudget == 0 {
		opts.MemoryBudget = merge.DefaultMemoryBudget()
	}
	return searchTable(cfg, positional[0], q, opts, *format, *explain)
}

// searchQuery completes q with the order, --since (not with --from) and the row conditions.
func searchQuery(q search.Query, order string, since time.Duration, where, in []string) (search.Query, error) {
	switch order {
	case "asc":
	case "desc":
		q.Desc = true
	default:
		return q, fmt.Errorf("--order %q: accepted: asc, desc", order)
	}
	if since > 0 {
		if q.From != "" {
			return q, errors.New("--since and --from both bound the start: give one")
		}
		q.From = time.Now().Add(-since).UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
	}
	var err error
	q.Where, err = conditions(where, in)
	return q, err
}

// searchTable prints the rows of table name that q matches in format, and with explain what each
// stage considered, pruned and read.
func searchTable(cfg config.Config, name string, q search.Query, opts search.Options, format string, explain bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	l, err := lake.Open(ctx, config.LakeConfig(cfg))
	if err != nil {
		return err
	}
	defer l.Close()
	t, err := loadTable(ctx, l, name)
	if err != nil {
		return err
	}
	cols, err := search.Columns(t, q, opts)
	if err != nil {
		return err
	}
	out, err := output.NewWriter(os.Stdout, format, cols)
	if err != nil {
		return err
	}
	ex, err := search.Run(ctx, t, q, opts, out.Row)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil || !explain {
		return err
	}
	if format == "json" {
		return json.NewEncoder(os.Stderr).Encode(ex)
	}
	return ex.Print(os.Stderr)
}
