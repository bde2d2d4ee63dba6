package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/siglake/siglake/sidecar/commit/sim"
)

// groupCommitMode reports whether simulate's arguments ask for the group commit simulator.
func groupCommitMode(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return a == "--group-commit" || a == "-group-commit" })
}

// runSimulateGroupCommit is `siglake simulate --group-commit`: direct commits against group commit
// on one table, per pod count (sidecar/commit/sim, docs/benchmarks.md "Group commit (simulated)").
func runSimulateGroupCommit(args []string) error {
	s := sim.Base(1, sim.Direct)
	fs := flag.NewFlagSet("siglake simulate --group-commit", flag.ContinueOnError)
	fs.Bool("group-commit", true, "simulate direct commits against group commit on one table")
	podList := fs.String("pods", "16,100,1000", "comma-separated pod counts, one row per count and mode")
	fs.Float64Var(&s.RequestsPerPodPerSec, "rate", s.RequestsPerPodPerSec, "batches per pod per second")
	batchMB := fs.Float64("batch-mb", s.BytesPerRequest/(1<<20), "MiB per batch")
	fs.IntVar(&s.FilesPerRequest, "files", s.FilesPerRequest, "data files per batch")
	durationVar(fs, &s.Interval, "interval", false, "group-commit-interval")
	durationVar(fs, &s.MaxWait, "max-wait", true, "group-commit-max-wait (0: a commit every interval)")
	targetMB := fs.Float64("target-mb", s.TargetBytes/(1<<20), "group-commit-target-mb")
	fs.IntVar(&s.MaxFiles, "max-files", s.MaxFiles, "group-commit-max-files")
	fs.IntVar(&s.MergeMinCount, "merge-min-count", s.MergeMinCount, "manifest-merge-min-count (0: no merging)")
	perMin := fs.Float64("maintenance-per-min", s.MaintenanceCommitsPerSec*60, "maintenance commits per minute racing the appends")
	durationVar(fs, &s.FailoverAt, "failover-at", true, "kill the committer then, losing its queue (0: never)")
	durationVar(fs, &s.FailoverGap, "failover-gap", true, "until a new owner takes over")
	durationVar(fs, &s.FallbackAfter, "fallback-after", false, "group-commit-fallback-after")
	durationVar(fs, &s.Duration, "duration", false, "simulated time")
	fs.Uint64Var(&s.Seed, "seed", s.Seed, "random seed (same seed, same results)")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	s.BytesPerRequest = *batchMB * (1 << 20)
	s.TargetBytes = *targetMB * (1 << 20)
	s.MaintenanceCommitsPerSec = *perMin / 60
	var results []sim.Result
	for _, f := range strings.Split(*podList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("--pods %q: want comma-separated counts above 0", *podList)
		}
		for _, mode := range []sim.Mode{sim.Direct, sim.Group} {
			s.Pods, s.Mode, s.Name = n, mode, fmt.Sprintf("%s-%d", mode, n)
			if err := s.Validate(); err != nil {
				return err
			}
			results = append(results, sim.Run(s))
		}
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(results)
	}
	fmt.Printf("one table, %.2g batches/s per pod of %.0f MiB in %d files, interval %s, max wait %s, %s simulated, seed %d (simulated, fitted to the measured direct runs)\n\n",
		s.RequestsPerPodPerSec, *batchMB, s.FilesPerRequest, s.Interval, s.MaxWait, s.Duration, s.Seed)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PODS\tMODE\tCOMMITS/S\tCONFLICTS\tLAG P50\tLAG P99\tMETADATA READ MB/GB\tOBJECTS/GB\tCOMMITTER CPU\tFALLBACKS\tWAITING AT END")
	for _, r := range results {
		fmt.Fprintf(tw, "%d\t%s\t%.2f\t%.1f%%\t%.1fs\t%.1fs\t%.1f\t%.1f\t%.1f%%\t%d\t%d\n", r.Pods, r.Mode, r.CommitsPerSec,
			100*r.ConflictFraction, r.LagP50, r.LagP99, r.MetadataReadPerGB, r.ObjectsPerGB, 100*r.CommitterCPU, r.Fallbacks, r.Waiting)
	}
	return tw.Flush()
}
