package merge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/siglake/siglake/merge/index"
)

// TestBuildIndexesMatchesFooter: the index BuildIndexes rebuilds from a streamed rewrite's output
// (which carries none) equals, byte for byte, the footer index the in-memory path writes for the
// same rows; columns the footer already indexes or the file lacks are reported, not built.
func TestBuildIndexesMatchesFooter(t *testing.T) {
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(21, 22))
	dir := t.TempDir()
	s := randScenario(t, r, sc, dir)
	cols := []string{"trace_id", "service", "nosuch"}
	md := MetadataOptions{IndexColumns: cols}
	written := map[PathKind]Output{}
	for _, p := range []PathKind{PathInMemory, PathPageBounded} {
		res, err := Rewrite(context.Background(), localFS, s.inputs, sc, pathGen(filepath.Join(dir, string(p)), 1),
			RewriteOptions{ForcePath: p, ChunkRows: 300, WriterOptions: WriterOptions{RowGroupRows: 500, Metadata: md}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Outputs) != 1 {
			t.Fatalf("%s: %d outputs", p, len(res.Outputs))
		}
		written[p] = res.Outputs[0]
	}
	mem, err := BuildIndexes(context.Background(), localFS, written[PathInMemory].Path, cols, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(mem.Built) != 0 || fmt.Sprint(mem.InFooter) != "[trace_id service]" || fmt.Sprint(mem.NotInFile) != "[nosuch]" {
		t.Fatalf("in-memory output: built %d, in footer %v, not in file %v", len(mem.Built), mem.InFooter, mem.NotInFile)
	}
	st, err := BuildIndexes(context.Background(), localFS, written[PathPageBounded].Path, cols, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.InFooter) != 0 || len(st.Built) != 2 || st.Rows != int64(len(s.want)) {
		t.Fatalf("streamed output: built %d, in footer %v, %d rows of %d", len(st.Built), st.InFooter, st.Rows, len(s.want))
	}
	for _, c := range []string{"trace_id", "service"} {
		footer, _ := mem.Footer.Inverted(c)
		rebuilt, err := index.DecodeInverted(st.Built[c])
		if err != nil {
			t.Fatal(err)
		}
		if string(rebuilt.Encoded()) != string(footer.Encoded()) || rebuilt.Terms() == 0 {
			t.Fatalf("%s: rebuilt %d bytes / %d terms differ from the footer's %d / %d", c, rebuilt.Size(), rebuilt.Terms(), footer.Size(), footer.Terms())
		}
	}
}

// TestBuildIndexesMemoryCap: a column whose index would outgrow the cap is given up (TooLarge,
// nothing built) while a column whose index fits is built, so a nearly unique column of a large
// file cannot take the process's memory.
func TestBuildIndexesMemoryCap(t *testing.T) {
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(23, 24))
	dir := t.TempDir()
	s := randScenario(t, r, sc, dir)
	res, err := Rewrite(context.Background(), localFS, s.inputs, sc, pathGen(filepath.Join(dir, "out"), 1),
		RewriteOptions{ForcePath: PathKWay})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outputs) != 1 || res.Outputs[0].Rows < 200 {
		t.Skipf("scenario too small (%d outputs)", len(res.Outputs))
	}
	path := res.Outputs[0].Path
	full, err := BuildIndexes(context.Background(), localFS, path, []string{"trace_id", "service"}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A cap between the two columns' needs: service has a handful of values, trace_id one per row.
	small, err := index.DecodeInverted(full.Built["service"])
	if err != nil {
		t.Fatal(err)
	}
	capBytes := int64(small.Terms())*200 + 6*res.Outputs[0].Rows + 1024
	capped, err := BuildIndexes(context.Background(), localFS, path, []string{"trace_id", "service"}, nil, capBytes)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(capped.TooLarge) != "[trace_id]" || len(capped.Built) != 1 {
		t.Fatalf("cap %d: too large %v, built %d columns, want only trace_id given up", capBytes, capped.TooLarge, len(capped.Built))
	}
	if string(capped.Built["service"]) != string(full.Built["service"]) {
		t.Fatal("the service index built under the cap differs from the uncapped one")
	}
}
