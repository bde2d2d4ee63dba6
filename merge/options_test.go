package merge

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/siglake/siglake/merge/index"
	"github.com/siglake/siglake/merge/writer"
)

func footerKeys(t *testing.T, o Output) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	for _, kv := range o.Meta.KeyValueMetadata() {
		keys[kv.Key] = true
	}
	return keys
}

// TestIndexSwitches: index_at_flush gates the whole-file structures of
// generation-0 writes; the inverted-index switch drops only the indexes.
func TestIndexSwitches(t *testing.T) {
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(8, 9))
	rec := randRecord(r, sc, 2000, 1_700_000_000_000_000, 3, true, true)
	defer rec.Release()
	inv := index.KeyInvertedPrefix + "trace_id"
	for _, c := range []struct {
		name        string
		gen         int
		md          MetadataOptions
		wantTri     bool
		wantInv     bool
		wantSkipped bool
	}{
		{"flush default", 0, MetadataOptions{IndexColumns: []string{"trace_id"}}, false, false, false},
		{"flush index_at_flush", 0, MetadataOptions{IndexColumns: []string{"trace_id"}, IndexAtFlush: true}, true, true, false},
		{"rewrite gen", 3, MetadataOptions{IndexColumns: []string{"trace_id"}}, true, true, false},
		{"inverted off", 3, MetadataOptions{IndexColumns: []string{"trace_id"}, InvertedIndexOff: true}, true, false, false},
		{"over footer cap", 3, MetadataOptions{IndexColumns: []string{"trace_id"}, FooterMaxBytes: 100}, true, false, true},
	} {
		outs, err := writer.WriteSorted(context.Background(), localFS, pathGen(t.TempDir(), c.gen), sc, []arrow.RecordBatch{rec},
			WriterOptions{Generation: c.gen, Metadata: c.md})
		if err != nil {
			t.Fatal(err)
		}
		keys := footerKeys(t, outs[0])
		if keys[index.KeyFileTrigrams] != c.wantTri || keys[inv] != c.wantInv || (len(outs[0].SkippedIndexes) > 0) != c.wantSkipped {
			t.Errorf("%s: trigram %v inverted %v skipped %v; want %v %v %v", c.name, keys[index.KeyFileTrigrams], keys[inv],
				outs[0].SkippedIndexes, c.wantTri, c.wantInv, c.wantSkipped)
		}
		for _, k := range []string{index.KeyGroups, index.KeyTimeBuckets, index.KeyRowGroups, writer.FooterGenerationKey} {
			if !keys[k] {
				t.Errorf("%s: footer lacks %s", c.name, k)
			}
		}
	}
}

// TestRewriteGenerationsAndResult: output generation is max input + 1, a
// delete task writes 0, and the result says what the caller's metrics count
// (sidecar/instrument records them: TestMergeMetricsFromResults).
func TestRewriteGenerationsAndResult(t *testing.T) {
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(10, 11))
	dir := t.TempDir()
	var inputs []Input
	var inputBytes int64
	for i, g := range []int{2, 5, 0} {
		rec := randRecord(r, sc, 1000, 1_700_000_000_000_000+int64(i), 3, true, true)
		inputs = append(inputs, writeInput(t, dir, sc, rec, g, 400))
		inputBytes += inputs[len(inputs)-1].Size
		rec.Release()
	}
	res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, "a"), 6), RewriteOptions{ForcePath: PathKWay})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outputs[0].Generation != 6 {
		t.Fatalf("generation %d, want 6", res.Outputs[0].Generation)
	}
	if res.Path != PathKWay || res.Took <= 0 {
		t.Fatalf("path %s took %v", res.Path, res.Took)
	}
	if res.BytesRead <= 0 || res.BytesRead > 2*inputBytes {
		t.Fatalf("bytes read %d of inputs of %d bytes", res.BytesRead, inputBytes)
	}
	if res.BytesWritten != res.Outputs[0].Size || len(res.Outputs) != 1 {
		t.Fatalf("bytes written %d, outputs %d of %d bytes", res.BytesWritten, len(res.Outputs), res.Outputs[0].Size)
	}
	res, err = Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, "b"), 0),
		RewriteOptions{DeleteTask: true, WriterOptions: WriterOptions{Metadata: MetadataOptions{IndexColumns: []string{"trace_id"}, FooterMaxBytes: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outputs[0].Generation != 0 || res.Path != PathInMemory {
		t.Fatalf("delete task: generation %d path %s", res.Outputs[0].Generation, res.Path)
	}
	// A delete task follows index_at_flush (false): no index work, nothing skipped.
	if s := res.Outputs[0].SkippedIndexes; len(s) != 0 {
		t.Fatalf("index skipped on a delete task without index_at_flush: %v", s)
	}
	res, err = Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, "c"), 6),
		RewriteOptions{WriterOptions: WriterOptions{Metadata: MetadataOptions{IndexColumns: []string{"trace_id"}, FooterMaxBytes: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Outputs[0].SkippedIndexes; len(s) != 1 || s[0] != "trace_id" {
		t.Fatalf("skipped indexes %v, want [trace_id]", s)
	}
	// No inputs: nothing written, no error.
	res, err = Rewrite(context.Background(), localFS, nil, sc, pathGen(filepath.Join(dir, "d"), 1), RewriteOptions{})
	if err != nil || len(res.Outputs) != 0 {
		t.Fatalf("empty bin: %v, %d outputs", err, len(res.Outputs))
	}
}

// rangeFS records the largest single read, to show streamed paths use ranged
// reads rather than downloading whole objects.
type rangeFS struct {
	icebergio.LocalFS
	mu      sync.Mutex
	maxRead int
}

type rangeFile struct {
	icebergio.File
	fs *rangeFS
}

func (f *rangeFS) Open(name string) (icebergio.File, error) {
	file, err := f.LocalFS.Open(name)
	if err != nil {
		return nil, err
	}
	return rangeFile{File: file, fs: f}, nil
}

func (f rangeFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	f.fs.maxRead = max(f.fs.maxRead, len(p))
	f.fs.mu.Unlock()
	return f.File.ReadAt(p, off)
}

func TestStreamedPathsUseRangedReads(t *testing.T) {
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(12, 13))
	dir := t.TempDir()
	var inputs []Input
	var smallestData int64 = 1 << 62
	for i := 0; i < 2; i++ {
		rec := randRecord(r, sc, 60_000, 1_700_000_000_000_000, 3, true, true)
		in := writeInput(t, dir, sc, rec, 1, 60_000)
		rec.Release()
		inputs = append(inputs, in)
		// The footer (with its blooms) is read whole; the data must not be.
		b, err := os.ReadFile(in.Path)
		if err != nil {
			t.Fatal(err)
		}
		footer := int64(binary.LittleEndian.Uint32(b[len(b)-8:])) + 8
		smallestData = min(smallestData, in.Size-footer)
	}
	for _, path := range []PathKind{PathKWay, PathPageBounded} {
		fs := &rangeFS{}
		_, err := Rewrite(context.Background(), fs, inputs, sc, pathGen(filepath.Join(dir, string(path)), 2),
			RewriteOptions{ForcePath: path, MemoryBudget: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		// Column chunks are larger than the read-ahead, so no read covers one.
		if int64(fs.maxRead) >= smallestData/2 {
			t.Fatalf("%s: largest read %d bytes; input data sections from %d bytes", path, fs.maxRead, smallestData)
		}
		t.Logf("%s: largest read %d bytes; input data sections from %d bytes", path, fs.maxRead, smallestData)
	}
}

// TestStreamedPathsWriteNoFileTrigramBloom: only the in-memory path holds the whole decoded output
// the whole-file raw trigram bloom is defined over (docs/file-format.md "Which path writes
// what"). The k-way, page-bounded and splice paths must write none, not even when their inputs
// carry one (a splice copies footer entries of row groups, never a file's): a bloom over part of
// the rows would make a reader skip a file that holds the substring. Every path keeps the
// row-group blooms, and through the footer every raw value of the output may be present.
func TestStreamedPathsWriteNoFileTrigramBloom(t *testing.T) {
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(30, 31))
	dir := t.TempDir()
	var inputs []Input
	var raws []string
	next := int64(1_700_000_000_000_000)
	for i := 0; i < 3; i++ {
		rec := randRecord(r, sc, 3000, next+100, 3, true, true)
		next = lastTs(rec)
		col := rec.Column(sc.FieldIndices("raw")[0]).(*array.String)
		for j := 0; j < col.Len(); j += 97 {
			if !col.IsNull(j) && len(col.Value(j)) >= 3 {
				raws = append(raws, col.Value(j))
			}
		}
		in := writeInput(t, dir, sc, rec, 1, 1000) // generation 1: the inputs carry a file bloom
		rec.Release()
		if !footerKeys(t, Output{Meta: readMeta(t, in.Path)})[index.KeyFileTrigrams] {
			t.Fatal("setup: an input without a whole-file trigram bloom")
		}
		inputs = append(inputs, in)
	}
	for _, path := range []PathKind{PathInMemory, PathKWay, PathPageBounded, PathSplice} {
		res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, string(path)), 2),
			RewriteOptions{ForcePath: path, ChunkRows: 700, SpliceMinRows: 100, WriterOptions: WriterOptions{RowGroupRows: 1000}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Path != path || len(res.Outputs) != 1 {
			t.Fatalf("forced %s, took %s with %d outputs; the test needs the forced path and one output", path, res.Path, len(res.Outputs))
		}
		for _, o := range res.Outputs {
			meta := readMeta(t, o.Path) // what a reader finds in the file
			keys := footerKeys(t, Output{Meta: meta})
			if got, want := keys[index.KeyFileTrigrams], path == PathInMemory; got != want {
				t.Errorf("%s: %s has a whole-file trigram bloom: %v, want %v", path, filepath.Base(o.Path), got, want)
			}
			if !keys[index.KeyRowGroups] {
				t.Errorf("%s: %s has no row-group blooms", path, filepath.Base(o.Path))
			}
			kv := map[string]string{}
			for _, e := range meta.KeyValueMetadata() {
				kv[e.Key] = *e.Value
			}
			f, err := index.Decode(kv)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range raws {
				if !f.MayContainSubstring(s) {
					t.Fatalf("%s: the footer of %s rules out %q, which the rows hold", path, filepath.Base(o.Path), s)
				}
			}
		}
	}
}

// readMeta reads the Parquet footer of the file at path.
func readMeta(t *testing.T, path string) *metadata.FileMetaData {
	t.Helper()
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	return rdr.MetaData()
}
