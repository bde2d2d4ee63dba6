package maintain

import (
	"sort"
	"time"

	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/plan/level"
)

// Partition is one partition's live files as `siglake inspect` and the status pages show them:
// the one computation of levels, depth and clusters per partition, so the picture on a page, the
// CLI's timeline and the gauges cannot disagree.
type Partition struct {
	Partition     string          `json:"partition"`
	Files         []PartitionFile `json:"files"`
	FilesPerLevel map[string]int  `json:"files_per_level"`
	Bytes         int64           `json:"bytes"`
	Rows          int64           `json:"rows"`
	OverlapDepth  int             `json:"overlap_depth"`
	Clusters      int             `json:"overlap_clusters"`
	MaxGeneration int             `json:"max_generation"`
	LateFiles     int             `json:"late_files"`
	// Omitted counts files left out of Files (the status pages keep a bounded number per
	// partition); the counts above include them.
	Omitted int `json:"omitted_files,omitempty"`
}

// PartitionFile is one live file of a Partition.
type PartitionFile struct {
	Path       string    `json:"path"`
	Level      string    `json:"level"`
	Generation int       `json:"generation"`
	Late       bool      `json:"late"` // a file of the late stream (docs/compaction.md, "Late rows")
	Bytes      int64     `json:"bytes"`
	Rows       int64     `json:"rows"`
	Min        time.Time `json:"min_time"`
	Max        time.Time `json:"max_time"`
}

// Partitions groups files by partition, sorted by partition name, each partition's files in the
// order given (lake.LiveFiles sorts them by time).
func Partitions(files []level.File, pc plan.Config) []Partition {
	by := map[string][]level.File{}
	for _, f := range files {
		by[f.Partition] = append(by[f.Partition], f)
	}
	out := make([]Partition, 0, len(by))
	for name, fs := range by {
		p := Partition{Partition: name, FilesPerLevel: map[string]int{}, Files: make([]PartitionFile, 0, len(fs))}
		for _, f := range fs {
			lvl := pc.LevelOf(f.SizeBytes).String()
			p.FilesPerLevel[lvl]++
			p.Bytes += f.SizeBytes
			p.Rows += f.Rows
			p.MaxGeneration = max(p.MaxGeneration, f.Generation)
			if f.Late {
				p.LateFiles++
			}
			p.Files = append(p.Files, PartitionFile{Path: f.Path, Level: lvl, Generation: f.Generation, Late: f.Late, Bytes: f.SizeBytes,
				Rows: f.Rows, Min: time.UnixMicro(f.MinTime).UTC(), Max: time.UnixMicro(f.MaxTime).UTC()})
		}
		p.OverlapDepth, _ = level.Depth(fs)
		p.Clusters = len(level.Clusters(fs))
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
	return out
}

// maxPageFiles and maxPageTableFiles bound the files a published state keeps for the status
// pages, per partition and per table: a picture of more rows is unreadable, and the state (and
// the page) of a large table stays small.
const (
	maxPageFiles      = 1000
	maxPageTableFiles = 5000
)

// capFiles returns parts with at most perPart files each and perTable in all, the newest
// partitions (by name: days sort by time) served first; the partitions are copied where cut.
func capFiles(parts []Partition, perPart, perTable int) []Partition {
	out := make([]Partition, len(parts))
	left := perTable
	for i := len(parts) - 1; i >= 0; i-- {
		p := parts[i]
		if keep := max(min(perPart, left), 0); len(p.Files) > keep {
			p.Omitted += len(p.Files) - keep
			p.Files = p.Files[:keep:keep]
		}
		left -= len(p.Files)
		out[i] = p
	}
	return out
}
