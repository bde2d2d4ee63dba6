package rewrite

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/folding"
	"github.com/siglake/siglake/sidecar/lake"
)

// Merged is a merge's outputs, written and not committed: what Executor.Merge wrote in this
// process, or what a worker's result names (Received). Commit takes either.
type Merged struct {
	// Result is the merge: path, outputs, bytes. Outputs received from a worker carry path,
	// size, rows and generation only (no footer, no timestamp range).
	Result merge.RewriteResult
	// files are the outputs as data files of the table, in Result.Outputs' order.
	files []iceberg.DataFile
	// received: the outputs came from another process, so Commit checks them first.
	received bool
	// fs is the FileIO a local merge wrote with; nil for received outputs.
	fs icebergio.WriteFileIO
}

// Files are the outputs as data files of the table (described from their footers by Merge):
// what a worker sends its owner, in iceberg-go's cross-process encoding.
func (m Merged) Files() []iceberg.DataFile { return m.files }

// discard removes the outputs of a rewrite that will not commit and ends it with st.
func (m Merged) discard(st Status, err error) Outcome {
	orphans, rerr := lake.RemoveFiles(m.fs, m.Result.Outputs)
	return Outcome{Status: st, Err: err, Merge: m.Result, Orphans: orphans, OrphanErr: rerr}
}

// Remove removes the outputs of a merge of this process that will not be committed (a worker's
// result its owner refused or could not commit) and returns the paths it could not remove.
// Received outputs are never removed here: RemoveRefused judges those.
func (m Merged) Remove() ([]string, error) {
	if m.fs == nil {
		return nil, nil
	}
	return lake.RemoveFiles(m.fs, m.Result.Outputs)
}

func (m Merged) paths() []string {
	out := make([]string, len(m.Result.Outputs))
	for i, o := range m.Result.Outputs {
		out[i] = o.Path
	}
	return out
}

// Stats is what a merge did, as plain values a worker sends with its outputs: the owner's
// snapshot summary, metrics and logs need them, and its rewrite-rate estimate the time.
type Stats struct {
	Path         merge.PathKind     `json:"path"`
	Reason       string             `json:"reason,omitempty"`
	BytesRead    int64              `json:"bytes_read"`
	BytesWritten int64              `json:"bytes_written"`
	SplicedBytes int64              `json:"spliced_bytes"`
	Fold         *folding.FoldStats `json:"fold,omitempty"`
	TookMS       int64              `json:"took_ms"`
}

// Stats are m's merge statistics.
func (m Merged) Stats() Stats {
	r := m.Result
	return Stats{Path: r.Path, Reason: r.Reason, BytesRead: r.BytesRead, BytesWritten: r.BytesWritten,
		SplicedBytes: r.SplicedBytes, Fold: r.Fold, TookMS: r.Took.Milliseconds()}
}

// Received is the outputs another process merged for a job, as data files decoded from its
// message (against the committing table's schema and spec) and its merge statistics. Commit
// checks them with CheckOutputs before it commits them.
func Received(files []iceberg.DataFile, s Stats) Merged {
	res := merge.RewriteResult{Path: s.Path, Reason: s.Reason, BytesRead: s.BytesRead, BytesWritten: s.BytesWritten,
		SplicedBytes: s.SplicedBytes, Fold: s.Fold, Took: msDuration(s.TookMS)}
	res.Outputs = make([]merge.Output, len(files))
	for i, f := range files {
		gen, _ := merge.ParseGeneration(f.FilePath())
		res.Outputs[i] = merge.Output{Path: f.FilePath(), Size: f.FileSizeBytes(), Rows: f.Count(), Generation: gen}
	}
	return Merged{Result: res, files: files, received: true}
}

// outputName is the shape of every name merge writes (DataFileName, LateFileName with "l-",
// FoldedFileName with "f<tier>-").
var outputName = regexp.MustCompile(`^g[0-9]{4,}-(l-|f[0-9]+-)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.parquet$`)

// CheckOutputs says why files are not outputs job's merge could have written for t; nil if they
// are. The owner commits what a worker names only after this: each file a Parquet data file
// directly in the job's directory, named as merge names the job's outputs (its generation; late
// for a bin of late files, its tier for a fold), none of the job's inputs, none twice. A worker
// is authenticated, not trusted to be right: committing an input, another table's file or one
// named for another generation would lose or duplicate rows, or break promise 5.
func CheckOutputs(t *table.Table, job Job, files []iceberg.DataFile) error {
	if want := lake.DataDir(t, job.Partition); job.Dir != want {
		return fmt.Errorf("job's directory %q is not table %s's for partition %q; accepted: %s", job.Dir, t.Identifier(), job.Partition, want)
	}
	inputs := make(map[string]bool, len(job.Inputs))
	for _, f := range job.Inputs {
		inputs[f.Path] = true
	}
	seen := make(map[string]bool, len(files))
	for _, df := range files {
		p := df.FilePath()
		switch {
		case df.ContentType() != iceberg.EntryContentData || df.FileFormat() != iceberg.ParquetFile:
			return fmt.Errorf("output %q: content %v format %v; accepted: Parquet data files", p, df.ContentType(), df.FileFormat())
		case inputs[p]:
			return fmt.Errorf("output %q is one of the job's inputs; accepted: new files only", p)
		case seen[p]:
			return fmt.Errorf("output %q is named twice; accepted: each output once", p)
		}
		seen[p] = true
		if err := checkOutputName(job, p); err != nil {
			return err
		}
	}
	return nil
}

// checkOutputName says why p is not a name job's merge gives an output (outputNames).
func checkOutputName(job Job, p string) error {
	dir, name := path.Split(p)
	if strings.TrimSuffix(dir, "/") != job.Dir {
		return fmt.Errorf("output %q is not in the job's directory; accepted: files directly in %s", p, job.Dir)
	}
	gen, _ := merge.ParseGeneration(name)
	tier, folded := merge.ParseFoldTier(name)
	late := merge.ParseLate(name)
	g := fmt.Sprintf("g%04d", job.Generation)
	ok := outputName.MatchString(name) && gen == job.Generation && strings.HasPrefix(name, g+"-")
	var accepted string
	switch {
	case job.Fold != nil:
		ok = ok && folded && tier == job.FoldTier
		accepted = fmt.Sprintf("%s-f%d-<uuid>.parquet (the job's generation and fold tier)", g, job.FoldTier)
	case lateInputs(job.Inputs):
		ok = ok && late
		accepted = g + "-l-<uuid>.parquet (the job's generation, late: its inputs are late files)"
	default:
		ok = ok && !folded
		accepted = fmt.Sprintf("%s-<uuid>.parquet or %s-l-<uuid>.parquet (the job's generation)", g, g)
	}
	if !ok {
		return fmt.Errorf("output %q is not named for the job; accepted: %s", p, accepted)
	}
	return nil
}

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }
