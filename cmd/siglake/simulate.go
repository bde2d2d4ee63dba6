package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/siglake/siglake/merge/density"
	"github.com/siglake/siglake/sidecar/plan/sim"
)

// progressLine returns a sim.Scenario Progress that rewrites one stderr line at most every half
// second: the strategy, simulated time done of the total, and the wall time so far.
func progressLine(now func() time.Time, w io.Writer) func(string, time.Duration, time.Duration) {
	began := now()
	var last time.Time
	return func(strategy string, done, total time.Duration) {
		if t := now(); t.Sub(last) >= 500*time.Millisecond || done >= total {
			last = t
			fmt.Fprintf(w, "\r\033[Ksimulating %s: %s of %s simulated (%.0f%%), %s", strategy, done.Round(time.Minute), total,
				100*float64(done)/float64(max(total, 1)), t.Sub(began).Round(time.Second))
		}
	}
}

func runSimulate(args []string) error {
	if groupCommitMode(args) {
		return runSimulateGroupCommit(args)
	}
	s := sim.Base()
	fs := flag.NewFlagSet("siglake simulate", flag.ContinueOnError)
	fs.StringVar(&s.Name, "name", "custom", "scenario name in the report")
	fs.IntVar(&s.Pods, "pods", s.Pods, "ingest pods (each drains its own WAL)")
	mbps := fs.Float64("ingest-mbps", s.IngestBytesPerSec/1e6, "table ingest rate, MB/s over all pods")
	durationVar(fs, &s.Duration, "duration", false, "simulated time")
	fs.Float64Var(&s.LateFraction, "late-fraction", s.LateFraction, "fraction of rows that arrive late")
	durationVar(fs, &s.LateMean, "late-mean", true, "mean lateness of a late row (exponential)")
	durationVar(fs, &s.CommitMaxAge, "commit-max-age", true, "commitBatch.maxAgeSecs of each pod")
	targetMB := fs.Float64("commit-target-mb", s.CommitTargetBytes/(1<<20), "commitBatch.targetMb of each pod")
	mergeMBps := fs.Float64("merge-mbps", s.MergeBytesPerSec/1e6, "rewrite throughput of one rewriter, MB/s")
	fs.IntVar(&s.Workers, "workers", 1, "rewriters running the table's bins in parallel, each at --merge-mbps: the owner plans, workers take its bins (issue 34's bin leases)")
	splice := fs.Float64("splice-mbps", 0, "copy rate of merge's splice path, MB/s (bytes no other input of a bin overlaps are copied at it); 0 re-encodes every byte")
	durationVar(fs, &s.Tick, "tick", false, "maintenance tick (simulated)")
	fs.IntVar(&s.Config.MaxBinsPerPass, "max-bins-per-pass", s.Config.MaxBinsPerPass, "most bins one planner pass takes per worker (a pass with --workers N takes N times it)")
	fs.IntVar(&s.Config.MaxFilesPerPass, "max-files-per-pass", s.Config.MaxFilesPerPass, "most input files one planner pass takes per worker (the process raises it to the fan-in)")
	split := fs.Float64("split-sparse", density.DefaultSplitSparse, "SIGLAKE_COMPACTOR_SPLIT_SPARSE of the modelled drain and rewriter (0: cut by size only)")
	fs.BoolVar(&s.Config.Leveled, "leveled", true, "false simulates only the legacy flat pass")
	fs.BoolVar(&s.PassTimeLimit, "pass-time-limit", true, "give the planner the rewriter's measured speed and busy share, as the process does, so a busy rewriter's pass holds about one L0 check interval (docs/compaction.md)")
	both := fs.Bool("compare", true, "simulate leveled and legacy side by side")
	svg := fs.String("svg", "", "write a plot of depth and file count over time to this SVG file")
	asJSON := fs.Bool("json", false, "print the results as JSON (without the time series)")
	progress := fs.Bool("progress", false, "show progress on stderr (default: when stderr is a terminal)")
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	s.IngestBytesPerSec = *mbps * 1e6
	s.CommitTargetBytes = *targetMB * (1 << 20)
	s.MergeBytesPerSec = *mergeMBps * 1e6
	s.SpliceBytesPerSec = *splice * 1e6
	s.SplitSparse, s.DrainSplitSparse, s.LateStream = *split, *split, *split > 0
	if err := checkScenario(s, *split); err != nil {
		return err
	}
	if fi, err := os.Stderr.Stat(); *progress || (err == nil && fi.Mode()&os.ModeCharDevice != 0) {
		s.Progress = progressLine(time.Now, os.Stderr)
		defer fmt.Fprint(os.Stderr, "\r\033[K")
	}
	began := time.Now()
	var results []sim.Result
	if *both {
		lev, leg := sim.Compare(s)
		results = []sim.Result{lev, leg}
	} else {
		results = []sim.Result{sim.Run(s)}
	}
	if *svg != "" {
		if err := writeSimSVG(*svg, results); err != nil {
			return err
		}
	}
	if *asJSON {
		for i := range results {
			results[i].Samples = nil
		}
		return json.NewEncoder(os.Stdout).Encode(results)
	}
	if err := printSimResults(s, results, time.Since(began)); err != nil {
		return err
	}
	if *svg != "" {
		fmt.Printf("\nplot: %s\n", *svg)
	}
	return nil
}

// checkScenario checks the flags that sim.Scenario cannot take (s after the flags are read).
func checkScenario(s sim.Scenario, split float64) error {
	if s.Pods <= 0 || s.IngestBytesPerSec <= 0 || s.MergeBytesPerSec <= 0 || s.Workers <= 0 || s.Duration <= 0 || s.Tick <= 0 ||
		s.LateFraction < 0 || s.LateFraction > 1 || split < 0 || split >= 1 {
		return fmt.Errorf("accepted: --pods, --ingest-mbps, --merge-mbps, --workers, --duration, --tick above 0, --late-fraction in [0,1] and --split-sparse in [0,1)")
	}
	return s.Config.Validate()
}

// writeSimSVG writes the plot of results to path.
func writeSimSVG(path string, results []sim.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := sim.WriteSVG(f, results...); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// printSimResults prints the scenario and one row per strategy; an error when the planner named
// files that were not live.
func printSimResults(s sim.Scenario, results []sim.Result, took time.Duration) error {
	fmt.Printf("scenario %s: %d pods, %.1f MB/s, %s simulated, %.0f%% late (mean %s), merges at %.0f MB/s on %d worker(s), split sparse %g (took %s)\n\n",
		s.Name, s.Pods, s.IngestBytesPerSec/1e6, s.Duration, 100*s.LateFraction, s.LateMean, s.MergeBytesPerSec/1e6, s.Workers, s.SplitSparse,
		took.Round(time.Millisecond))
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STRATEGY\tWRITE AMP\tDEPTH MAX\tDEPTH P50\tSETTLED DEPTH P50\tEDGE DEPTH P50\tFILES P50\tFILES FINAL\tL0/L1/L2 FINAL\tREWRITER BUSY\tSPLICED\tREWRITE S")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%.2f\t%d\t%d\t%d\t%d\t%d\t%d\t%d/%d/%d\t%.0f%%\t%.0f%%\t%.0f\n", r.Strategy, r.WriteAmp, r.DepthMax, r.DepthP50,
			r.SettledDepthP50, r.EdgeDepthP50, r.FilesP50, r.FilesFinal, r.FinalLevels[0], r.FinalLevels[1], r.FinalLevels[2], 100*r.BusyFraction,
			100*r.SplicedBytes/max(r.RewrittenBytes, 1), r.RewriteSeconds)
	}
	tw.Flush()
	for _, r := range results {
		if len(r.Errors) > 0 {
			return fmt.Errorf("%s: the planner named files that were not live: %v", r.Strategy, r.Errors)
		}
	}
	return nil
}
