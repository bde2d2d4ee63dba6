package merge

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCorruptInputFailsWithoutOutput: a truncated file, a bad footer and
// damaged page data each fail the merge on every path with an error naming
// the input, and leave no output behind.
func TestCorruptInputFailsWithoutOutput(t *testing.T) {
	sc := testArrowSchema(t)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(21, 22))
	var good []Input
	for i := 0; i < 3; i++ {
		rec := randRecord(r, sc, 6000, 1_700_000_000_000_000, 3, true, true)
		good = append(good, writeInput(t, dir, sc, rec, 0, 1000))
		rec.Release()
	}
	src, err := os.ReadFile(good[1].Path)
	if err != nil {
		t.Fatal(err)
	}
	damage := map[string][]byte{
		"truncated":   src[:len(src)/2],
		"bad-footer":  append(append([]byte{}, src[:len(src)-8]...), 0xff, 0xff, 0xff, 0x7f, 'P', 'A', 'R', '1'),
		"not-parquet": []byte("this is not a parquet file at all"),
		"bad-pages": func() []byte {
			b := append([]byte{}, src...)
			for i := 200; i < len(b)/2; i += 97 {
				b[i] ^= 0x5a
			}
			return b
		}(),
	}
	for name, data := range damage {
		bad := filepath.Join(dir, name+".parquet")
		if err := os.WriteFile(bad, data, 0o644); err != nil {
			t.Fatal(err)
		}
		inputs := []Input{good[0], {Path: bad, Size: int64(len(data))}, good[2]}
		for _, path := range allPaths {
			out := filepath.Join(dir, "out", name, string(path))
			res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(out, 1),
				RewriteOptions{ForcePath: path, ChunkRows: 500, SpliceMinRows: 100, WriterOptions: WriterOptions{RowGroupRows: 1000, TargetFileBytes: 30_000}})
			if err == nil {
				t.Fatalf("%s/%s: merge succeeded with %d outputs", name, path, len(res.Outputs))
			}
			if !strings.Contains(err.Error(), bad) {
				t.Errorf("%s/%s: error does not name the input: %v", name, path, err)
			}
			if left, _ := os.ReadDir(out); len(left) != 0 {
				t.Fatalf("%s/%s: %d output files left behind", name, path, len(left))
			}
		}
	}
}

// TestRandomCorruptionNeverPanics flips random bytes of one input and checks
// that every path either fails with an error and no output, or (when the
// damage hit bytes nobody reads) succeeds.
func TestRandomCorruptionNeverPanics(t *testing.T) {
	sc := testArrowSchema(t)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(31, 32))
	rec := randRecord(r, sc, 3000, 1_700_000_000_000_000, 3, true, true)
	good := writeInput(t, dir, sc, rec, 0, 700)
	rec.Release()
	src, _ := os.ReadFile(good.Path)
	for i := 0; i < 40; i++ {
		b := append([]byte{}, src...)
		for j := 0; j < 1+r.IntN(20); j++ {
			b[r.IntN(len(b))] ^= byte(1 + r.IntN(255))
		}
		bad := filepath.Join(dir, "fuzz.parquet")
		if err := os.WriteFile(bad, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, path := range allPaths {
			out := filepath.Join(dir, "out", string(path))
			_, err := Rewrite(context.Background(), localFS, []Input{good, {Path: bad}}, sc, pathGen(out, 1),
				RewriteOptions{ForcePath: path, ChunkRows: 300, SpliceMinRows: 100, WriterOptions: WriterOptions{RowGroupRows: 500}})
			if err != nil {
				if left, _ := os.ReadDir(out); len(left) != 0 {
					t.Fatalf("iteration %d %s: failed but left %d files", i, path, len(left))
				}
			}
			_ = os.RemoveAll(out)
		}
	}
}
