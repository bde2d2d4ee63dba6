package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
)

func runWalgen(args []string) error {
	fs := flag.NewFlagSet("siglake walgen", flag.ContinueOnError)
	var o walgen.RunOptions
	fs.StringVar(&o.WALDir, "wal-dir", envOr("SIGLAKE_WAL_DIR", "./wal"), "WAL directory to write segments into (env SIGLAKE_WAL_DIR)")
	fs.StringVar(&o.Stream, "stream", envOr("SIGLAKE_NODE_NAME", "walgen"), "stream id of this WAL (the pod name); must match the directory's STREAM file if it has one")
	tables := fs.String("tables", walgen.EventsTable, "comma-separated tables the rows go to, round-robin by batch")
	fs.Int64Var(&o.Rows, "rows", 100000, "rows to write in total; 0 runs until interrupted")
	fs.Int64Var(&o.Rate, "rate", 0, "rows per second; 0 = as fast as possible")
	fs.IntVar(&o.BatchRows, "batch-rows", 1000, "rows per appended record batch")
	segMB := fs.Float64("segment-mb", 4, "roll a segment once it reaches this many MiB")
	o.RollAge = 5 * time.Second
	durationVar(fs, &o.RollAge, "roll-age", false, "roll a segment once it is this old")
	fs.Float64Var(&o.Gen.LateFraction, "late-fraction", 0.02, "fraction of rows timestamped up to --max-lateness in the past (makes files overlap)")
	o.Gen.MaxLateness = 5 * time.Minute
	durationVar(fs, &o.Gen.MaxLateness, "max-lateness", true, "how late a late row can be")
	fs.Uint64Var(&o.Gen.Seed, "seed", 1, "random seed; the same seed gives the same rows")
	start := fs.String("start", "", "timestamp of the first row (RFC 3339); default: the rows end now, none later than the clock")
	durationVar(fs, &o.Step, "step", true, "timestamp step between a table's consecutive rows; 0: with --rate, each table's timestamps keep pace with the clock, else 1ms")
	fs.StringVar(&o.Rollup, "rollup", "", "also write each events batch's per-minute rollup (counts and bytes per service and severity) to this table, as ingest pods write partial rows; "+walgen.RollupTable+" is the built-in one (docs/folding.md)")
	fs.IntVar(&o.WALVersion, "wal-version", 2, "segment format version to write: 2, or 1 while drains older than version 2 still read this WAL (docs/wal-format.md, \"Upgrading\")")
	asJSON := fs.Bool("json", false, "print the result, with a row fingerprint, as JSON")
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	for _, t := range strings.Split(*tables, ",") {
		if t = strings.TrimSpace(t); t != "" {
			o.Tables = append(o.Tables, t)
		}
	}
	if o.WALVersion != 1 && o.WALVersion != 2 {
		return fmt.Errorf("--wal-version %d: accepted: 1 or 2", o.WALVersion)
	}
	if *segMB <= 0 {
		return fmt.Errorf("--segment-mb %v: accepted: a size above 0", *segMB)
	}
	o.SegmentSize = int64(*segMB * (1 << 20))
	if *start != "" {
		t, err := time.Parse(time.RFC3339Nano, *start)
		if err != nil {
			return fmt.Errorf("--start %q: accepted: an RFC 3339 timestamp such as 2026-11-29T00:00:00Z", *start)
		}
		o.Start = t
	}
	if err := os.MkdirAll(o.WALDir, 0o755); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var sum rowsum.Sum
	var sumErr error
	res, err := walgen.Run(ctx, o, func(_ string, rec arrow.RecordBatch) {
		if err := sum.Add(rec, walgen.Columns...); err != nil && sumErr == nil {
			sumErr = fmt.Errorf("fingerprint of the sealed rows: %w", err)
		}
	})
	if err == nil {
		err = sumErr
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(struct {
			walgen.Result
			Fingerprint rowsum.Sum `json:"fingerprint"`
		}{res, sum})
	}
	fmt.Printf("sealed %d rows in %d segments (%s) into %s\n", res.Rows, res.Segments, sidecar.HumanBytes(res.Bytes), o.WALDir)
	if o.Rollup != "" {
		fmt.Printf("and %d partial rollup rows for %s\n", res.RollupRows, o.Rollup)
	}
	return nil
}
