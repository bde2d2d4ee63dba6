package commit

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/sidecar/commit/filecheck"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/walgen"
	"github.com/siglake/siglake/test/testenv"
)

// TestRefusedUnverifiedFiles: a request is refused, and nothing of it committed, when one of its
// files is not in the object store (a dead pod's files that gc removed), has another size than the
// request claims, or carries a partition that disagrees with its directory or with its rows; a
// request of real files beside them commits.
func TestRefusedUnverifiedFiles(t *testing.T) {
	cl := newCluster(t)
	cl.committer("owner", nil)
	p := cl.pod("", nil) // creates the table, committing directly
	cl.seal(p, 1, 300, day)
	cl.drainAll()
	tbl := cl.table()
	in := func(d string, gen int) string { return lake.DataDir(tbl, d) + "/" + merge.DataFileName(gen) }
	dayOf := func(d string) iceberg.Date {
		tm, _ := time.Parse("2006-01-02", d)
		return iceberg.Date(tm.Unix() / 86400)
	}
	cases := map[string]struct {
		file func() iceberg.DataFile
		why  string
	}{
		"good": {func() iceberg.DataFile { return describe(t, tbl, writeOut(t, tbl, in("2026-11-28", 0)), nil, 0) }, ""},
		"gone": {func() iceberg.DataFile {
			o := writeOut(t, tbl, in("2026-11-28", 0))
			if err := os.Remove(testlake.LocalPath(o.Path)); err != nil {
				t.Fatal(err)
			}
			return describe(t, tbl, o, nil, 0)
		}, "does not exist"},
		"resized":  {func() iceberg.DataFile { return describe(t, tbl, writeOut(t, tbl, in("2026-11-28", 0)), nil, 1) }, "the request says"},
		"wrongdir": {func() iceberg.DataFile { return describe(t, tbl, writeOut(t, tbl, in("2026-11-29", 0)), nil, 0) }, "disagrees with its directory"},
		"outside": {func() iceberg.DataFile {
			return describe(t, tbl, writeOut(t, tbl, in("2026-11-29", 0)), map[int]any{1000: dayOf("2026-11-29")}, 0)
		}, "bound of timestamp"},
	}
	done := answers(cl.hub, "pod-x", KindDone)
	x := cl.hub.Member("pod-x")
	for stream, c := range cases {
		enc, err := EncodeFiles(tbl, []iceberg.DataFile{c.file()})
		if err != nil {
			t.Fatal(err)
		}
		r := Request{V: Version, ID: newID(), From: "pod-x", Catalog: testCatalog, Table: "events", Stream: stream, First: "1:1", Last: "1:1",
			Format: tbl.Metadata().Version(), SchemaID: tbl.Schema().ID, SpecID: specID(tbl), Files: enc, Segments: 1, WrittenMs: time.Now().UnixMilli()}
		if err := x.Send("owner", mustEncode(t, r)); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]Answer{}
	for len(got) < len(cases) {
		select {
		case a := <-done:
			got[a.Stream] = a
		case <-time.After(20 * time.Second):
			t.Fatalf("answers %v, want %d", got, len(cases))
		}
	}
	after := cl.table()
	for stream, c := range cases {
		a := got[stream]
		_, marked, _ := marks.ReadMark(after, stream)
		if c.why == "" {
			if a.Outcome != OutcomeCommitted || !marked {
				t.Errorf("%s: answer %+v, marked %v: want committed", stream, a, marked)
			}
			continue
		}
		if a.Outcome != OutcomeRefused || !strings.Contains(a.Error, c.why) || marked {
			t.Errorf("%s: answer %+v, marked %v: want refused: %s", stream, a, marked, c.why)
		}
	}
	if rows := cl.base.Sum("events").Rows; rows != cl.want.Rows+100 {
		t.Fatalf("%d rows, want the drain's %d and the good file's 100", rows, cl.want.Rows)
	}
	if n := len(after.Metadata().Snapshots()); n != 2 {
		t.Fatalf("%d snapshots, want the drain's and the good request's", n)
	}
}

// writeOut writes a real Parquet file of walgen rows of day at path.
func writeOut(t testing.TB, tbl *table.Table, path string) merge.Output {
	t.Helper()
	ctx := context.Background()
	rec := walgen.New(walgen.Options{Seed: 5}).Batch(memory.DefaultAllocator, day, 100, time.Millisecond)
	defer rec.Release()
	fields := append([]arrow.Field(nil), rec.Schema().Fields()...)
	for i := range fields {
		fields[i].Metadata = arrow.Metadata{}
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	outs, err := writer.WriteSorted(ctx, fsys.(icebergio.WriteFileIO), func(int) string { return path }, arrow.NewSchema(fields, nil),
		[]arrow.RecordBatch{rec}, merge.WriterOptions{TimestampColumn: lake.TimestampColumn})
	if err != nil || len(outs) != 1 {
		t.Fatalf("%d files: %v", len(outs), err)
	}
	return outs[0]
}

// describe describes o as a data file of tbl, with the given partition values (nil: from its
// bounds) and its size off by extra bytes.
func describe(t testing.TB, tbl *table.Table, o merge.Output, part map[int]any, extra int64) iceberg.DataFile {
	t.Helper()
	df, err := table.DataFileFromMetadata(table.DataFileArgs{Schema: tbl.Schema(), Spec: tbl.Spec(), Format: iceberg.ParquetFile,
		Metadata: o.Meta, FilePath: o.Path, FileSize: o.Size + extra, Content: iceberg.EntryContentData, PartitionValues: part,
		SortOrderID: tbl.SortOrder().OrderID(), Properties: tbl.Properties(), FormatVersion: tbl.Metadata().Version()})
	if err != nil {
		t.Fatal(err)
	}
	return df
}

// TestFileStatsOnS3: on an S3 warehouse (versitygw) the check is one HEAD per file through the
// table's FileIO: a file written is found at its size, one of another size and one removed are not.
func TestFileStatsOnS3(t *testing.T) {
	s3 := testenv.S3(t)
	env := testlake.NewWith(t, func(c *lake.Config) {
		c.Warehouse = s3.Warehouse(t)
		c.S3Endpoint, c.S3Region, c.S3AccessKey, c.S3SecretKey, c.S3PathStyle = s3.Endpoint, s3.Region, s3.AccessKey, s3.SecretKey, true
	})
	env.SealRows("events", 1, 100, 1, day)
	env.DrainAll()
	tbl := env.Table("events")
	dir := lake.DataDir(tbl, "2026-11-28") + "/"
	good := writeOut(t, tbl, dir+merge.DataFileName(0))
	gone := writeOut(t, tbl, dir+merge.DataFileName(0))
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.Remove(gone.Path); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		f   iceberg.DataFile
		why string
	}{
		"good":    {describe(t, tbl, good, nil, 0), ""},
		"resized": {describe(t, tbl, good, nil, 7), "the request says"},
		"gone":    {describe(t, tbl, gone, nil, 0), "does not exist"},
	} {
		err := filecheck.NewStats(context.Background(), nil).Check(tbl, []iceberg.DataFile{c.f})
		if c.why == "" && err != nil || c.why != "" && (err == nil || !strings.Contains(err.Error(), c.why)) {
			t.Errorf("%s: %v, want %q", name, err, c.why)
		}
	}
}
