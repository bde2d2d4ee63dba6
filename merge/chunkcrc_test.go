package merge

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/siglake/siglake/merge/chunksum"
	"github.com/siglake/siglake/merge/input"
)

// reencodeInput rewrites in as another tool that keeps key-value metadata
// would (parquet-mr's ParquetRewriter, `parquet-cli rewrite`): the same rows
// in the same row groups, encoded anew with codec, and every footer entry of
// the original but arrow-go's own schema entry copied over.
func reencodeInput(t *testing.T, in Input, codec compress.Compression) Input {
	t.Helper()
	b, err := os.ReadFile(in.Path)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := fr.Schema()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(codec), parquet.WithStats(true), parquet.WithPageIndexEnabled(true),
		parquet.WithDictionaryDefault(true), parquet.WithMaxRowGroupLength(1<<30), parquet.WithCreatedBy("another tool"))
	fw, err := pqarrow.NewFileWriter(sc, &out, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(memory.DefaultAllocator), pqarrow.WithCoerceTimestamps(arrow.Microsecond)))
	if err != nil {
		t.Fatal(err)
	}
	leaves := make([]int, pf.MetaData().Schema.NumColumns())
	for i := range leaves {
		leaves[i] = i
	}
	for rg := 0; rg < pf.NumRowGroups(); rg++ {
		tbl, err := fr.ReadRowGroups(context.Background(), leaves, []int{rg})
		if err != nil {
			t.Fatal(err)
		}
		if err := fw.WriteTable(tbl, tbl.NumRows()); err != nil {
			t.Fatal(err)
		}
		tbl.Release()
	}
	kv := pf.MetaData().KeyValueMetadata()
	for i, k := range kv.Keys() {
		if k != "ARROW:schema" {
			if err := fw.AppendKeyValueMetadata(k, kv.Values()[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	p := strings.TrimSuffix(in.Path, ".parquet") + "-rewritten.parquet"
	if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return Input{Path: p, Size: int64(out.Len()), Rows: in.Rows, Generation: in.Generation}
}

// TestSpliceStaleChunkSumsFromAnotherWriter: a valid siglake file that
// another tool re-encoded (another codec, same row groups) keeping its
// footer entries carries chunk sums of bytes it no longer holds. They must
// not be taken for its own: the splice reads its pages instead and gives the
// k-way path's rows.
func TestSpliceStaleChunkSumsFromAnotherWriter(t *testing.T) {
	sc := testArrowSchema(t)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(5, 6))
	inputs := disjointInputs(t, dir, sc, r, 3)
	inputs[1] = reencodeInput(t, inputs[1], compress.Codecs.Snappy)
	pf, err := file.OpenParquetFile(inputs[1].Path, false)
	if err != nil {
		t.Fatal(err)
	}
	md := pf.MetaData()
	if md.KeyValueMetadata().FindValue(chunksum.Key) == nil || md.NumRowGroups() != 3 {
		t.Fatalf("the rewritten input lost the footer entry or its row groups (%d)", md.NumRowGroups())
	}
	_ = pf.Close()
	got := map[PathKind][]string{}
	for _, p := range []PathKind{PathKWay, PathSplice} {
		res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, string(p)), 1),
			RewriteOptions{ForcePath: p, SpliceMinRows: 500, WriterOptions: WriterOptions{RowGroupRows: 1000}})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, o := range res.Outputs {
			got[p] = append(got[p], readFileRows(t, localFS, o.Path, sc)...)
		}
		if p == PathSplice {
			if res.SplicedBytes == 0 {
				t.Fatal("the splice copied nothing")
			}
			if n := res.verifiedRowGroups; n != 3 {
				t.Fatalf("the page check read %d row groups, want the rewritten input's 3", n)
			}
		}
	}
	if !slices.Equal(got[PathSplice], got[PathKWay]) {
		diffRows(t, got[PathSplice], got[PathKWay])
		t.Fatalf("rows differ: splice %d, k-way %d", len(got[PathSplice]), len(got[PathKWay]))
	}
}

// TestChunkCRCsTiedToLayout: a row group's sums count only while every
// chunk's offset, size and value count in the footer are the recorded ones.
func TestChunkCRCsTiedToLayout(t *testing.T) {
	sc := testArrowSchema(t)
	rec := randRecord(rand.New(rand.NewPCG(1, 1)), sc, 3000, 1_700_000_000_000_000, 3, true, true)
	in := writeInput(t, t.TempDir(), sc, rec, 0, 1000)
	rec.Release()
	for _, edit := range []struct {
		name string
		f    func(md *metadata.FileMetaData)
	}{
		{"offset", func(md *metadata.FileMetaData) { md.RowGroups[1].Columns[2].MetaData.DataPageOffset++ }},
		{"size", func(md *metadata.FileMetaData) { md.RowGroups[1].Columns[2].MetaData.TotalCompressedSize++ }},
		{"values", func(md *metadata.FileMetaData) { md.RowGroups[1].Columns[2].MetaData.NumValues++ }},
	} {
		b, err := os.ReadFile(in.Path)
		if err != nil {
			t.Fatal(err)
		}
		pf, err := file.NewParquetReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		md := pf.MetaData()
		if sums := chunksum.RowGroupSums(md); len(sums) != 3 || sums[0] == nil || sums[1] == nil || sums[2] == nil {
			t.Fatalf("a file siglake wrote has sums %v", sums)
		}
		edit.f(md)
		if sums := chunksum.RowGroupSums(md); len(sums) != 3 || sums[0] == nil || sums[1] != nil || sums[2] == nil {
			t.Fatalf("%s changed: sums per row group present %v %v %v, want only row group 1's dropped", edit.name, sums[0] != nil, sums[1] != nil, sums[2] != nil)
		}
	}
}

// TestSpliceDamagedColumnIndexFails: the column index of a copied chunk lies
// outside the chunk and its sum, and is copied as it is; a damaged one fails
// the merge, naming the input, with no output left behind, rather than
// being carried on to mislead readers' pruning.
func TestSpliceDamagedColumnIndexFails(t *testing.T) {
	sc := testArrowSchema(t)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 4))
	inputs := disjointInputs(t, dir, sc, r, 3)
	bad := inputs[1].Path
	b, err := os.ReadFile(bad)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := pf.MetaData().RowGroups[1].Columns[2]
	if c.ColumnIndexOffset == nil || c.ColumnIndexLength == nil {
		t.Fatal("the input has no column index")
	}
	for i := *c.ColumnIndexOffset; i < *c.ColumnIndexOffset+int64(*c.ColumnIndexLength); i++ {
		b[i] ^= 0xff
	}
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(out, 1),
		RewriteOptions{ForcePath: PathSplice, SpliceMinRows: 500, WriterOptions: WriterOptions{RowGroupRows: 1000}})
	if err == nil {
		t.Fatalf("merge succeeded with %d outputs", len(res.Outputs))
	}
	if !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "column index") {
		t.Errorf("error does not name the input and its column index: %v", err)
	}
	if ie := (*input.InputError)(nil); !errors.As(err, &ie) || ie.Path != bad {
		t.Errorf("not classified as the input's fault: %v", err)
	}
	if left, _ := os.ReadDir(out); len(left) != 0 {
		t.Fatalf("%d output files left behind", len(left))
	}
}
