package rewrite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/codec"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/density"
	"github.com/siglake/siglake/merge/folding"
	"github.com/siglake/siglake/merge/rowfilter"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/tableprops"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
	"github.com/siglake/siglake/sidecar/work"
)

func plainNames(int) string { return merge.DataFileName(0) }

// secondProcess opens cfg's catalog and warehouse again: the lake of another process.
func secondProcess(t *testing.T, cfg lake.Config) *lake.Lake {
	t.Helper()
	l, err := lake.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// overTheWire is what a worker's result message does to a merge: the outputs encoded against
// the worker's table and decoded against the owner's (iceberg-go's cross-process encoding), the
// statistics through JSON.
func overTheWire(t *testing.T, worker, owner *table.Table, m Merged) Merged {
	t.Helper()
	b, err := json.Marshal(m.Stats())
	if err != nil {
		t.Fatal(err)
	}
	var st Stats
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	files := make([]iceberg.DataFile, len(m.Files()))
	for i, f := range m.Files() {
		enc, err := codec.EncodeDataFile(f, worker.Spec(), worker.Schema(), worker.Metadata().Version())
		if err != nil {
			t.Fatal(err)
		}
		if files[i], err = codec.DecodeDataFile(enc, owner.Spec(), owner.Schema(), owner.Metadata().Version()); err != nil {
			t.Fatal(err)
		}
	}
	return Received(files, st)
}

// viaLease is j as a worker reads it from a leases message (the format's one codec).
func viaLease(t *testing.T, j work.Job) work.Job {
	t.Helper()
	msg, err := work.OwnerMessage{V: work.Version, Type: work.TypeLeases, Catalog: "cat",
		Leases: []work.Grant{{ID: strings.Repeat("ab", 16), Table: "events", Job: j, DurationMs: 1000}}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := work.DecodeOwner(msg)
	if err != nil {
		t.Fatal(err)
	}
	return got.Leases[0].Job
}

// outputSum fingerprints the rows of written files, read back from the warehouse.
func outputSum(t *testing.T, outs []merge.Output) rowsum.Sum {
	t.Helper()
	var sum rowsum.Sum
	for _, o := range outs {
		f, err := file.OpenParquetFile(strings.TrimPrefix(o.Path, "file://"), false)
		if err != nil {
			t.Fatal(err)
		}
		r, err := pqarrow.NewFileReader(f, pqarrow.ArrowReadProperties{BatchSize: 1 << 14}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := r.ReadTable(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		tr := array.NewTableReader(tbl, 0)
		for tr.Next() {
			if err := sum.Add(tr.RecordBatch(), walgen.Columns...); err != nil {
				t.Fatal(err)
			}
		}
		tr.Release()
		tbl.Release()
		f.Close()
	}
	return sum
}

func tableSum(t *testing.T, l *lake.Lake) rowsum.Sum {
	t.Helper()
	tbl, _, _ := live(t, l)
	s, err := rowsum.Table(context.Background(), tbl, walgen.Columns...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func exists(p string) bool {
	_, err := os.Stat(strings.TrimPrefix(p, "file://"))
	return err == nil
}

// TestMergeOnWorkerCommitOnOwner: the owner leases a bin as a work.Job (through a message), a worker (its
// own lake on the same catalog and warehouse) merges it and commits nothing, and the owner
// commits the outputs it receives as encoded data files: the table then holds exactly the
// outputs, with exactly the inputs' rows.
func TestMergeOnWorkerCommitOnOwner(t *testing.T) {
	ctx := context.Background()
	wl, cfg := testTableConfig(t, 4, 500, plainNames)
	ol := secondProcess(t, cfg)
	owner, files, _ := live(t, ol)
	before := tableSum(t, ol)
	ownerJob := job(owner, files)
	leased, err := Leasable(ownerJob)
	if err != nil {
		t.Fatal(err)
	}
	worker, _, _ := live(t, wl)
	wjob, err := FromLease(worker, viaLease(t, leased))
	if err != nil {
		t.Fatal(err)
	}
	m, out := executor(wl).Merge(ctx, worker, wjob)
	if out.Status != Uncommitted || len(out.Merge.Outputs) == 0 || len(m.Files()) != len(out.Merge.Outputs) {
		t.Fatalf("merge: %s %v, %d outputs, %d data files", out.Status, out.Err, len(out.Merge.Outputs), len(m.Files()))
	}
	if got := outputSum(t, out.Merge.Outputs); got != before {
		t.Fatalf("the worker's outputs hold %+v, the inputs %+v", got, before)
	}
	if _, now, _ := live(t, ol); len(now) != len(files) || now[0].Path != files[0].Path {
		t.Fatalf("Merge changed the table: %d live files", len(now))
	}
	var rebuilt []string
	e := executor(ol)
	e.AfterCommit = func(_ context.Context, _ *table.Table, _ icebergio.WriteFileIO, _ int64, outs []merge.Output) {
		for _, o := range outs {
			rebuilt = append(rebuilt, o.Path)
		}
	}
	res := e.Commit(ctx, owner, ownerJob, overTheWire(t, worker, owner, m))
	if res.Status != Committed {
		t.Fatalf("commit: %s %v", res.Status, res.Err)
	}
	if got := tableSum(t, ol); got != before {
		t.Fatalf("after the commit the table holds %+v, before %+v", got, before)
	}
	_, now, _ := live(t, ol)
	want := map[string]bool{}
	for _, o := range out.Merge.Outputs {
		want[o.Path] = true
	}
	for _, f := range now {
		if !want[f.Path] || f.Generation != 1 {
			t.Fatalf("live file %s (generation %d) is not one of the worker's outputs", f.Path, f.Generation)
		}
	}
	if len(now) != len(want) || len(rebuilt) != len(want) {
		t.Fatalf("%d live files, %d rebuilt, want the %d outputs", len(now), len(rebuilt), len(want))
	}
	props := res.Table.CurrentSnapshot().Summary.Properties
	if props[tableprops.SumRewritePath] != string(out.Merge.Path) || props[tableprops.SumRewriteInputs] != "4" {
		t.Fatalf("snapshot summary %v, want the worker's merge path %s and 4 inputs", props, out.Merge.Path)
	}
}

// TestCommitAfterInputsReplacedIsConflict: while a worker merged, the owner replaced some of the
// bin's inputs; the worker's result then commits nothing, and its outputs leave the warehouse.
func TestCommitAfterInputsReplacedIsConflict(t *testing.T) {
	ctx := context.Background()
	wl, cfg := testTableConfig(t, 4, 500, plainNames)
	ol := secondProcess(t, cfg)
	owner, files, rows := live(t, ol)
	ownerJob := job(owner, files)
	worker, wfiles, _ := live(t, wl)
	m, out := executor(wl).Merge(ctx, worker, job(worker, wfiles))
	if out.Status != Uncommitted {
		t.Fatalf("merge: %s %v", out.Status, out.Err)
	}
	if o := executor(ol).Run(ctx, owner, job(owner, files[:2])); o.Status != Committed {
		t.Fatalf("the owner's own rewrite: %s %v", o.Status, o.Err)
	}
	res := executor(ol).Commit(ctx, owner, ownerJob, overTheWire(t, worker, owner, m))
	if res.Status != Conflict || !errors.Is(res.Err, lake.ErrInputsGone) || !errors.Is(res.Error(), ErrConflict) {
		t.Fatalf("commit after the inputs changed: %s %v, want a conflict", res.Status, res.Err)
	}
	for _, o := range out.Merge.Outputs {
		if exists(o.Path) {
			t.Fatalf("output %s of the lost commit is still in the warehouse", o.Path)
		}
	}
	if _, _, got := live(t, ol); got != rows {
		t.Fatalf("%d rows after the conflict, want %d", got, rows)
	}
}

// TestCommitRefusesBadOutputs: outputs a worker names that fail CheckOutputs are not committed
// and not removed (they need not be the job's: one here is a live input).
func TestCommitRefusesBadOutputs(t *testing.T) {
	ctx := context.Background()
	l, _ := testTable(t, 3, 300)
	tbl, files, rows := live(t, l)
	j := job(tbl, files[1:])
	res := executor(l).Commit(ctx, tbl, j, Received([]iceberg.DataFile{files[0].DataFile}, Stats{}))
	if res.Status != Failed || res.Err == nil || !strings.Contains(res.Err.Error(), files[0].Path) {
		t.Fatalf("commit of a live file as an output: %s %v, want a failure naming it", res.Status, res.Err)
	}
	if !exists(files[0].Path) {
		t.Fatalf("the refused output %s, a live file, was removed", files[0].Path)
	}
	// Outputs merged for generation 1, offered for a job of generation 2.
	m, out := executor(l).Merge(ctx, tbl, j)
	if out.Status != Uncommitted {
		t.Fatalf("merge: %s %v", out.Status, out.Err)
	}
	j2 := j
	j2.Generation = 2
	res = executor(l).Commit(ctx, tbl, j2, Received(m.Files(), m.Stats()))
	if res.Status != Failed || !strings.Contains(res.Err.Error(), "not named for the job") {
		t.Fatalf("commit of outputs of another generation: %s %v, want a failure", res.Status, res.Err)
	}
	for _, o := range out.Merge.Outputs {
		if !exists(o.Path) {
			t.Fatalf("refused output %s was removed", o.Path)
		}
	}
	if _, now, got := live(t, l); got != rows || len(now) != len(files) {
		t.Fatalf("table changed: %d rows in %d files", got, len(now))
	}
}

// TestCommitRefusesLeasedJob: Commit needs the owner's job (its inputs' data files); one rebuilt
// from a lease fails before the catalog, and the outputs are removed.
func TestCommitRefusesLeasedJob(t *testing.T) {
	ctx := context.Background()
	l, _ := testTable(t, 3, 300)
	tbl, files, rows := live(t, l)
	leased, err := Leasable(job(tbl, files))
	if err != nil {
		t.Fatal(err)
	}
	j, err := FromLease(tbl, leased)
	if err != nil {
		t.Fatal(err)
	}
	e := executor(l)
	m, out := e.Merge(ctx, tbl, j)
	if out.Status != Uncommitted {
		t.Fatalf("merge: %s %v", out.Status, out.Err)
	}
	res := e.Commit(ctx, tbl, j, m)
	if res.Status != Failed || !strings.Contains(res.Err.Error(), "no data file") {
		t.Fatalf("commit of a job rebuilt from a lease: %s %v", res.Status, res.Err)
	}
	for _, o := range out.Merge.Outputs {
		if exists(o.Path) {
			t.Fatalf("output %s of the refused commit is still in the warehouse", o.Path)
		}
	}
	if _, _, got := live(t, l); got != rows {
		t.Fatalf("%d rows, want %d", got, rows)
	}
}

// TestCheckOutputs: the owner accepts exactly the names merge gives a job's outputs, in the
// job's directory, as Parquet data, and refuses everything else naming the file and what is
// accepted.
func TestCheckOutputs(t *testing.T) {
	l, _ := testTable(t, 2, 100)
	tbl, files, _ := live(t, l)
	onTime := job(tbl, files) // generation 1
	dir := onTime.Dir
	late := onTime
	late.Inputs = []lake.File{{Path: dir + "/" + merge.LateFileName(0)}}
	fold := onTime
	fold.Fold, fold.FoldTier = &folding.Fold{}, 2
	otherDir := onTime
	otherDir.Dir = lake.DataDir(tbl, "2026-11-28")
	df := func(p string, content iceberg.ManifestEntryContent, format iceberg.FileFormat) iceberg.DataFile {
		b, err := iceberg.NewDataFileBuilder(tbl.Spec(), content, p, format, nil, nil, nil, 10, 100)
		if err != nil {
			t.Fatal(err)
		}
		return b.Build()
	}
	data := func(p string) iceberg.DataFile { return df(p, iceberg.EntryContentData, iceberg.ParquetFile) }
	plain1 := dir + "/" + merge.DataFileName(1)
	for _, c := range []struct {
		name  string
		job   Job
		files []iceberg.DataFile
		want  string // "" accepted, else in the error
	}{
		{"on-time output", onTime, []iceberg.DataFile{data(plain1)}, ""},
		{"late head of an on-time bin", onTime, []iceberg.DataFile{data(dir + "/" + merge.LateFileName(1))}, ""},
		{"late bin", late, []iceberg.DataFile{data(dir + "/" + merge.LateFileName(1))}, ""},
		{"fold bin", fold, []iceberg.DataFile{data(dir + "/" + merge.FoldedFileName(1, 2))}, ""},
		{"no outputs", onTime, nil, ""},
		{"another partition", onTime, []iceberg.DataFile{data(lake.DataDir(tbl, "2026-11-28") + "/" + merge.DataFileName(1))}, "not in the job's directory"},
		{"a subdirectory", onTime, []iceberg.DataFile{data(dir + "/x/" + merge.DataFileName(1))}, "not in the job's directory"},
		{"another table", onTime, []iceberg.DataFile{data(strings.Replace(plain1, "/events/", "/other/", 1))}, "not in the job's directory"},
		{"generation above", onTime, []iceberg.DataFile{data(dir + "/" + merge.DataFileName(2))}, "not named for the job"},
		{"generation of the inputs", onTime, []iceberg.DataFile{data(dir + "/" + merge.DataFileName(0))}, "not named for the job"},
		{"not merge's naming", onTime, []iceberg.DataFile{data(dir + "/g0001-x.parquet")}, "not named for the job"},
		{"on-time name in a late bin", late, []iceberg.DataFile{data(dir + "/" + merge.DataFileName(1))}, "g0001-l-<uuid>.parquet"},
		{"folded name, no fold", onTime, []iceberg.DataFile{data(dir + "/" + merge.FoldedFileName(1, 0))}, "not named for the job"},
		{"fold at another tier", fold, []iceberg.DataFile{data(dir + "/" + merge.FoldedFileName(1, 1))}, "g0001-f2-<uuid>.parquet"},
		{"unfolded name in a fold bin", fold, []iceberg.DataFile{data(plain1)}, "not named for the job"},
		{"position deletes", onTime, []iceberg.DataFile{df(plain1, iceberg.EntryContentPosDeletes, iceberg.ParquetFile)}, "Parquet data"},
		{"Avro", onTime, []iceberg.DataFile{df(plain1, iceberg.EntryContentData, iceberg.AvroFile)}, "Parquet data"},
		{"an input", onTime, []iceberg.DataFile{files[0].DataFile}, "one of the job's inputs"},
		{"twice", onTime, []iceberg.DataFile{data(plain1), data(plain1)}, "named twice"},
		{"job of another partition's directory", otherDir, []iceberg.DataFile{data(otherDir.Dir + "/" + merge.DataFileName(1))}, "is not table"},
	} {
		err := CheckOutputs(tbl, c.job, c.files)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want == "":
		case err == nil:
			t.Errorf("%s: accepted, want refused with %q", c.name, c.want)
		case !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "accepted"):
			t.Errorf("%s: %v, want %q and what is accepted", c.name, err, c.want)
		case c.job.Dir == dir && !strings.Contains(err.Error(), c.files[len(c.files)-1].FilePath()):
			t.Errorf("%s: %v does not name the file", c.name, err)
		}
	}
}

// TestLeasableRefuses: what a message cannot carry, or the format refuses, keeps a job on its
// owner, saying why.
func TestLeasableRefuses(t *testing.T) {
	ok := Job{Kind: "l0", Partition: "2026-11-29", Inputs: []lake.File{{Path: "a"}}, Generation: 1, Dir: "d"}
	for _, c := range []struct {
		name string
		edit func(*Job)
		want string
	}{
		{"delete task", func(j *Job) { j.DeleteTask = true }, "delete task"},
		{"row filter", func(j *Job) { j.RowFilter = &rowfilter.Filter{} }, "row filter"},
		{"stage", func(j *Job) {
			j.Stage = func(merge.RewriteResult, *table.Table, *table.Transaction) error { return nil }
		}, "stages"},
		{"props", func(j *Job) { j.Props = func(merge.RewriteResult) iceberg.Properties { return nil } }, "properties"},
		{"no inputs", func(j *Job) { j.Inputs = nil }, "no inputs"},
		{"generation not above", func(j *Job) { j.Generation = 0 }, "generation"},
		{"retention kind", func(j *Job) { j.Kind = "retention" }, "stay on the owner"},
		{"too large for a message", func(j *Job) { j.Inputs = manyInputs(20_000) }, "encodes to"},
	} {
		j := ok
		c.edit(&j)
		_, err := Leasable(j)
		if !errors.Is(err, ErrNotLeasable) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %v saying %q", c.name, err, ErrNotLeasable, c.want)
		}
	}
	if _, err := Leasable(ok); err != nil {
		t.Fatalf("a level bin: %v", err)
	}
}

// manyInputs is n distinct generation-0 inputs.
func manyInputs(n int) []lake.File {
	out := make([]lake.File, n)
	for i := range out {
		out[i] = lake.File{Path: fmt.Sprintf("file:///wh/events/data/day=2026-11-29/g0000-%08d.parquet", i)}
	}
	return out
}

// TestFromLeaseRefuses: a job from the network makes no job that writes outside the table's
// partition directory, at or below an input's generation, or over one input twice.
func TestFromLeaseRefuses(t *testing.T) {
	l, _ := testTable(t, 2, 100)
	tbl, files, _ := live(t, l)
	good, err := Leasable(job(tbl, files))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := FromLease(tbl, good); err != nil {
		t.Fatalf("a good job: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(*work.Job)
		want string
	}{
		{"another directory", func(s *work.Job) { s.Dir = lake.DataDir(tbl, "2026-11-28") }, "not table"},
		{"outside the table", func(s *work.Job) { s.Dir = "file:///tmp/x" }, "not table"},
		{"generation not above", func(s *work.Job) { s.Generation = 0 }, "one above the newest input"},
		{"input twice", func(s *work.Job) { s.Inputs = append(s.Inputs, s.Inputs[0]) }, "each input once"},
		{"no inputs", func(s *work.Job) { s.Inputs = nil }, "at least one input"},
		{"negative size", func(s *work.Job) { s.Inputs[0].Size = -1 }, ">= 0"},
		{"tier without a fold", func(s *work.Job) { s.FoldTier = 1 }, "0 without a fold"},
	} {
		s := viaLease(t, good) // a copy: the inputs too
		c.edit(&s)
		if _, err := FromLease(tbl, s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a refusal saying %q", c.name, err, c.want)
		}
	}
}

// TestLeasedJobMergesTheSame: the job a worker makes from a lease (through a message) is the owner's job
// but for what only the owner needs (the inputs' data files and time ranges), and its merge
// writes the same rows into outputs of the same shape.
func TestLeasedJobMergesTheSame(t *testing.T) {
	ctx := context.Background()
	l, _ := testTable(t, 3, 2_000)
	tbl, files, _ := live(t, l)
	before := tableSum(t, l)
	j := job(tbl, files)
	j.TargetFileBytes, j.SplitSparse, j.Reason = 16<<10, density.DefaultSplitSparse, "l0 overlap"
	j.Metadata = lake.WriteMetadata(tbl, false, 1<<20)
	leased, err := Leasable(j)
	if err != nil {
		t.Fatal(err)
	}
	sj, err := FromLease(tbl, viaLease(t, leased))
	if err != nil {
		t.Fatal(err)
	}
	want := j
	want.Inputs = make([]lake.File, len(j.Inputs))
	for i, f := range j.Inputs {
		f.DataFile, f.MinTime, f.MaxTime = nil, 0, 0
		want.Inputs[i] = f
	}
	if !reflect.DeepEqual(sj, want) {
		t.Fatalf("job from the lease\n%+v\nwant\n%+v", sj, want)
	}
	withFold := j
	withFold.Fold, withFold.FoldTier = &folding.Fold{Keys: []string{"service"}, Aggregates: []folding.Aggregate{{Column: "n", Func: folding.AggSum}},
		Bucket: 60e6, Tiers: []folding.FoldTier{{Before: 1, Bucket: 3600e6}}}, 1
	leased, err = Leasable(withFold)
	if err != nil {
		t.Fatal(err)
	}
	if fj, err := FromLease(tbl, viaLease(t, leased)); err != nil || !reflect.DeepEqual(fj.Fold, withFold.Fold) || fj.FoldTier != 1 {
		t.Fatalf("fold from the lease %+v tier %d (%v), want %+v tier 1", fj.Fold, fj.FoldTier, err, withFold.Fold)
	}
	shape := func(j Job) (rowsum.Sum, []string) {
		_, out := executor(l).Merge(ctx, tbl, j)
		if out.Status != Uncommitted {
			t.Fatalf("merge: %s %v", out.Status, out.Err)
		}
		var s []string
		for _, o := range out.Merge.Outputs {
			s = append(s, fmt.Sprintf("late=%v rows=%d", merge.ParseLate(o.Path), o.Rows))
		}
		return outputSum(t, out.Merge.Outputs), s
	}
	sum1, shape1 := shape(j)
	sum2, shape2 := shape(sj)
	if sum1 != before || sum2 != before || !reflect.DeepEqual(shape1, shape2) {
		t.Fatalf("outputs of the owner's job %v hold %+v, of the lease's %v hold %+v; the inputs %+v", shape1, sum1, shape2, sum2, before)
	}
}

// TestCommitKeepsLiveOutputs: a result naming a live file of the table as its output (here the
// output of a bin committed before, of the same generation, which CheckOutputs cannot tell from
// a new one) is refused by the catalog's staging, and no file it names is removed.
func TestCommitKeepsLiveOutputs(t *testing.T) {
	ctx := context.Background()
	l, _ := testTable(t, 4, 300)
	tbl, files, _ := live(t, l)
	if out := executor(l).Run(ctx, tbl, job(tbl, files[:2])); out.Status != Committed {
		t.Fatalf("first bin: %s %v", out.Status, out.Err)
	}
	tbl, now, rows := live(t, l)
	var earlier lake.File
	var rest []lake.File
	for _, f := range now {
		if f.Generation == 1 {
			earlier = f
		} else {
			rest = append(rest, f)
		}
	}
	j := job(tbl, rest)
	m, out := executor(l).Merge(ctx, tbl, j)
	if out.Status != Uncommitted {
		t.Fatalf("merge: %s %v", out.Status, out.Err)
	}
	res := executor(l).Commit(ctx, tbl, j, Received(append(m.Files(), earlier.DataFile), m.Stats()))
	if !exists(earlier.Path) {
		t.Fatalf("the live file %s was removed with the refused outputs (%s %v)", earlier.Path, res.Status, res.Err)
	}
	if res.Status != Failed || !strings.Contains(res.Err.Error(), "already live") {
		t.Fatalf("commit naming a live file: %s %v, want a failure", res.Status, res.Err)
	}
	if _, _, got := live(t, l); got != rows {
		t.Fatalf("%d rows, want %d", got, rows)
	}
}
