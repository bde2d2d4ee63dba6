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
	mem, err := BuildIndexes(context.Background(), localFS, written[PathInMemory].Path, cols, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(mem.Built) != 0 || fmt.Sprint(mem.InFooter) != "[trace_id service]" || fmt.Sprint(mem.NotInFile) != "[nosuch]" {
		t.Fatalf("in-memory output: built %d, in footer %v, not in file %v", len(mem.Built), mem.InFooter, mem.NotInFile)
	}
	st, err := BuildIndexes(context.Background(), localFS, written[PathPageBounded].Path, cols, nil)
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
