package plan

import (
	"fmt"
	"sort"

	"github.com/siglake/siglake/sidecar/plan/level"
)

// RetentionCutoffs are a table's retention cutoffs at one instant, in microseconds of the
// timestamp column: a row older than its class's cutoff is past retention.
type RetentionCutoffs struct {
	// Whole: every row older than it is past retention whatever its class (the cutoff of the
	// longest period); nil when some class is kept for ever, so no file is dropped whole.
	Whole *int64
	// Latest: no row at or after it is past retention (the cutoff of the shortest period); nil
	// when the policy keeps everything.
	Latest *int64
}

// RetentionCaps bound the rewrites of one retention run of a table
// (SIGLAKE_RETENTION_MAX_FILES, SIGLAKE_RETENTION_MAX_MB), so retention cannot starve the drain.
// The first rewrite is always planned, so a run always makes progress. Drops are metadata only
// and never capped. NoCaps lifts both (`siglake retention show`'s dry run).
type RetentionCaps struct {
	MaxFiles int
	MaxBytes int64
	NoCaps   bool
}

// RetentionPath is how retention removes rows of a file.
type RetentionPath uint8

const (
	// RetentionPartition: every file of the partition is past the whole cutoff, and the
	// partition goes in the metadata-only replace.
	RetentionPartition RetentionPath = iota
	// RetentionFile: the file is past the whole cutoff; it goes in the same replace although
	// its partition still holds newer files.
	RetentionFile
	// RetentionRewrite: the file may hold rows past some class's cutoff beside rows that stay;
	// it is rewritten with the row filter (KindRetention).
	RetentionRewrite
	// RetentionCapped: a rewrite left for a later run; this one reached its caps.
	RetentionCapped
)

var retentionPathNames = [...]string{"partition", "file", "rewrite", "capped"}

func (p RetentionPath) String() string {
	if int(p) < len(retentionPathNames) {
		return retentionPathNames[p]
	}
	return fmt.Sprintf("retention_path(%d)", p)
}

// MarshalText renders the path by name for JSON status pages.
func (p RetentionPath) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// RetentionPick is the decision for one live file, with a reason for status pages.
type RetentionPick struct {
	File   level.File
	Path   RetentionPath
	Reason string
}

// RetentionPlan is one retention run's decisions.
type RetentionPlan struct {
	// Drops go in one metadata-only replace (no outputs): partitions first, then single files.
	Drops []RetentionPick
	// Rewrites are the files to rewrite with the row filter, oldest first, inside the caps;
	// Capped ones wait for a later run.
	Rewrites []RetentionPick
	Capped   []RetentionPick
	// DropBytes and RewriteBytes add up the picks.
	DropBytes, RewriteBytes int64
}

// PlanRetention decides what one retention run removes: files whose newest row is older than the
// whole cutoff are dropped without reading them (a partition whose every file is, as a partition);
// files whose oldest row is older than the latest cutoff may hold rows past their class's cutoff
// and are rewritten, oldest first, inside the caps. mayHold, when set, rules out rewrite
// candidates that scan planning proved hold no row of a class past its cutoff (column bounds).
// Pure: the same files and cutoffs give the same plan.
func PlanRetention(files []level.File, c RetentionCutoffs, caps RetentionCaps, mayHold func(path string) bool) RetentionPlan {
	var p RetentionPlan
	if c.Latest == nil {
		return p
	}
	whole := func(f level.File) bool { return c.Whole != nil && f.MaxTime < *c.Whole }
	parts := map[string][]level.File{}
	var order []string
	for _, f := range files {
		if _, ok := parts[f.Partition]; !ok {
			order = append(order, f.Partition)
		}
		parts[f.Partition] = append(parts[f.Partition], f)
	}
	sort.Strings(order)
	var single, rewrite []level.File
	for _, part := range order {
		fs := parts[part]
		all := true
		for _, f := range fs {
			all = all && whole(f)
		}
		if all {
			for _, f := range fs {
				p.Drops = append(p.Drops, RetentionPick{File: f, Path: RetentionPartition,
					Reason: fmt.Sprintf("partition %s: every file's newest row is past the cutoff", part)})
				p.DropBytes += f.SizeBytes
			}
			continue
		}
		for _, f := range fs {
			switch {
			case whole(f):
				single = append(single, f)
			case f.MinTime < *c.Latest && (mayHold == nil || mayHold(f.Path)):
				rewrite = append(rewrite, f)
			}
		}
	}
	for _, f := range single {
		p.Drops = append(p.Drops, RetentionPick{File: f, Path: RetentionFile, Reason: "newest row past the cutoff"})
		p.DropBytes += f.SizeBytes
	}
	sort.Slice(rewrite, func(i, j int) bool {
		if rewrite[i].MinTime != rewrite[j].MinTime {
			return rewrite[i].MinTime < rewrite[j].MinTime
		}
		return rewrite[i].Path < rewrite[j].Path
	})
	for _, f := range rewrite {
		n := len(p.Rewrites)
		if !caps.NoCaps && n > 0 && (n >= caps.MaxFiles || p.RewriteBytes+f.SizeBytes > caps.MaxBytes) {
			reason := fmt.Sprintf("not rewritten: run cap reached (%d files)", caps.MaxFiles)
			if n < caps.MaxFiles {
				reason = fmt.Sprintf("not rewritten: run cap reached (%d of %d bytes)", p.RewriteBytes, caps.MaxBytes)
			}
			p.Capped = append(p.Capped, RetentionPick{File: f, Path: RetentionCapped, Reason: reason})
			continue
		}
		p.Rewrites = append(p.Rewrites, RetentionPick{File: f, Path: RetentionRewrite, Reason: "oldest row past a cutoff, newest row not past every cutoff"})
		p.RewriteBytes += f.SizeBytes
	}
	return p
}
