package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/maintain"
	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/plan/level"
	"github.com/siglake/siglake/sidecar/statuspage"
)

// inspectPartition is one partition in `siglake inspect`: the maintenance loop's own view
// (maintain.Partitions), which the status pages draw too.
type inspectPartition = maintain.Partition

func runInspect(args []string) error {
	fs := flag.NewFlagSet("siglake inspect", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: siglake inspect [TABLE] [--json] [--all] [--svg FILE] [--dir DIR | catalog options]\n\n"+
			"With a TABLE: its live files per partition and level, generations, overlap depth and a timeline of\n"+
			"file time ranges (--svg FILE also draws it as a picture, a panel per partition, as the status\n"+
			"pages do). Without: the tables of the namespace, with their live files, rows and depth.\n\n")
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, "print JSON")
	all := fs.Bool("all", false, "show every file (default: the first 40 of each partition)")
	svgFile := fs.String("svg", "", "also write the overlap timeline of TABLE as an SVG picture to `FILE` (- for stdout, then nothing else is printed)")
	cfg, positional, help, err := toolConfigArgs(fs, args)
	if help || err != nil {
		return err
	}
	if len(positional) > 1 {
		err := fmt.Errorf("one TABLE at most, got %q", positional)
		fmt.Fprintf(os.Stderr, "siglake inspect: %v\nusage: siglake inspect [TABLE] [--json] [--all] [--dir DIR | catalog options] (-h for more)\n", err)
		return usageError{err}
	}
	if *svgFile != "" && len(positional) == 0 {
		err := fmt.Errorf("--svg draws one table's timeline: name the TABLE")
		fmt.Fprintf(os.Stderr, "siglake inspect: %v\nusage: siglake inspect TABLE --svg FILE [--dir DIR | catalog options] (-h for more)\n", err)
		return usageError{err}
	}
	if err := requireCatalog(cfg); err != nil {
		return err
	}
	maxRows := 40
	if *all {
		maxRows = 1 << 30
	}
	ctx := context.Background()
	l, err := lake.Open(ctx, config.LakeConfig(cfg))
	if err != nil {
		return err
	}
	defer l.Close()
	pc, err := config.PlanConfig(cfg)
	if err != nil {
		return err
	}
	if len(positional) == 0 {
		return listTables(ctx, l, pc, *asJSON)
	}
	table := positional[0]
	t, err := loadTable(ctx, l, table)
	if err != nil {
		return err
	}
	files, err := lake.LiveFiles(ctx, t)
	if err != nil {
		return err
	}
	parts := inspectPartitions(files, pc)
	skipped := lake.SortedSkipped(lake.SkippedFiles(t.Properties()))
	if *svgFile != "" {
		title := fmt.Sprintf("%s.%s · snapshot %d · %d live files", l.Namespace(), table, snapshotID(t.CurrentSnapshot()), len(files))
		svg := []byte(statuspage.TimelineSVG(title, parts))
		if *svgFile == "-" {
			_, err := os.Stdout.Write(svg)
			return err
		}
		if err := os.WriteFile(*svgFile, svg, 0o644); err != nil {
			return fmt.Errorf("writing the timeline picture: %w", err)
		}
		fmt.Fprintf(os.Stderr, "siglake inspect: wrote the timeline of %d partitions to %s\n", len(parts), *svgFile)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Table      string             `json:"table"`
			Location   string             `json:"location"`
			Snapshot   int64              `json:"snapshot_id"`
			Partitions []inspectPartition `json:"partitions"`
			Skipped    []lake.Skipped     `json:"skipped_files,omitempty"`
		}{table, t.Location(), snapshotID(t.CurrentSnapshot()), parts, skipped})
	}
	fmt.Printf("table %s.%s at %s, snapshot %d, %d live files\n", l.Namespace(), table, t.Location(), snapshotID(t.CurrentSnapshot()), len(files))
	for _, p := range parts {
		printPartition(os.Stdout, p, maxRows)
	}
	if len(skipped) > 0 {
		fmt.Printf("\n%d file(s) set aside after failed rewrites (left out of planning; siglake skipped clear %s PATH once repaired):\n", len(skipped), table)
		for _, s := range skipped {
			fmt.Printf("  %s\n    %s, %d failures, %s: %s\n", s.Path, s.Class, s.Failures, s.At.Format(time.RFC3339), s.Cause)
		}
	}
	return nil
}

// tableSummary is one table in `siglake inspect` without a TABLE.
type tableSummary struct {
	Table        string `json:"table"`
	Snapshot     int64  `json:"snapshot_id"`
	Files        int    `json:"live_files"`
	Bytes        int64  `json:"bytes"`
	Rows         int64  `json:"rows"`
	Partitions   int    `json:"partitions"`
	OverlapDepth int    `json:"overlap_depth"`
}

// listTables prints the namespace's tables, one line each, and how to look at one.
func listTables(ctx context.Context, l *lake.Lake, pc plan.Config, asJSON bool) error {
	names, err := l.ListTables(ctx)
	if err != nil {
		return err
	}
	sort.Strings(names)
	out := []tableSummary{}
	for _, name := range names {
		t, err := l.LoadTable(ctx, name)
		if err != nil {
			return err
		}
		files, err := lake.LiveFiles(ctx, t)
		if err != nil {
			return err
		}
		s := tableSummary{Table: name, Snapshot: snapshotID(t.CurrentSnapshot()), Files: len(files)}
		for _, p := range inspectPartitions(files, pc) {
			s.Bytes += p.Bytes
			s.Rows += p.Rows
			s.Partitions++
			s.OverlapDepth = max(s.OverlapDepth, p.OverlapDepth)
		}
		out = append(out, s)
	}
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Namespace string         `json:"namespace"`
			Tables    []tableSummary `json:"tables"`
		}{l.Namespace(), out})
	}
	if len(out) == 0 {
		fmt.Printf("namespace %s has no tables yet (the drain creates a table with its first commit)\n", l.Namespace())
		return nil
	}
	fmt.Printf("namespace %s: %d tables\n\n", l.Namespace(), len(out))
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TABLE\tSNAPSHOT\tFILES\tBYTES\tROWS\tPARTITIONS\tDEPTH")
	for _, s := range out {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%d\t%d\n", s.Table, s.Snapshot, s.Files, sidecar.HumanBytes(s.Bytes), s.Rows, s.Partitions, s.OverlapDepth)
	}
	tw.Flush()
	fmt.Printf("\nsiglake inspect TABLE (with the same catalog options) shows a table's files and their overlap.\n")
	return nil
}

func snapshotID(s *table.Snapshot) int64 {
	if s == nil {
		return 0
	}
	return s.SnapshotID
}

func inspectPartitions(files []lake.File, pc plan.Config) []inspectPartition {
	pf := make([]level.File, 0, len(files))
	for _, f := range files {
		pf = append(pf, maintain.PlanFile(f))
	}
	return maintain.Partitions(pf, pc)
}

// printPartition prints a partition's summary and a timeline: one line per file, its time range
// drawn on a common axis, so overlap is visible at a glance.
func printPartition(w io.Writer, p inspectPartition, maxRows int) {
	var levels []string
	for l, n := range p.FilesPerLevel {
		levels = append(levels, fmt.Sprintf("%s:%d", l, n))
	}
	sort.Strings(levels)
	fmt.Fprintf(w, "\npartition %s: %d files (%s, %d late), %s, %d rows, overlap depth %d in %d clusters, max generation %d\n",
		p.Partition, len(p.Files), strings.Join(levels, " "), p.LateFiles, sidecar.HumanBytes(p.Bytes), p.Rows, p.OverlapDepth, p.Clusters, p.MaxGeneration)
	if len(p.Files) == 0 {
		return
	}
	lo, hi := p.Files[0].Min, p.Files[0].Max
	for _, f := range p.Files {
		if f.Min.Before(lo) {
			lo = f.Min
		}
		if f.Max.After(hi) {
			hi = f.Max
		}
	}
	const width = 60
	span := hi.Sub(lo)
	col := func(t time.Time) int {
		if span <= 0 {
			return 0
		}
		return min(width-1, int(float64(t.Sub(lo))/float64(span)*width))
	}
	fmt.Fprintf(w, "  %-44s %-3s %4s %10s  %s .. %s\n", "file", "lvl", "gen", "bytes", lo.Format("15:04:05"), hi.Format("15:04:05"))
	for i, f := range p.Files {
		if i == maxRows {
			fmt.Fprintf(w, "  ... %d more files (--all shows every file)\n", len(p.Files)-maxRows)
			break
		}
		bar := []byte(strings.Repeat(" ", width))
		mark := byte('=')
		if f.Late {
			mark = '-' // the late stream: few rows over a wide range
		}
		for c := col(f.Min); c <= col(f.Max); c++ {
			bar[c] = mark
		}
		fmt.Fprintf(w, "  %-44s %-3s %4d %10s  |%s|\n", truncate(path.Base(f.Path), 44), f.Level, f.Generation, sidecar.HumanBytes(f.Bytes), bar)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
