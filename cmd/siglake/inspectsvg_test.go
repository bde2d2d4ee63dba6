package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInspectSVG: `inspect TABLE --svg FILE` writes the timeline picture the status pages draw, a
// shape per live file of every partition (the files `inspect --json` lists); `--svg -` writes it
// alone to stdout; --svg without a TABLE is a usage error that writes nothing.
func TestInspectSVG(t *testing.T) {
	dir := demoLakeDir(t)
	file := filepath.Join(t.TempDir(), "events.svg")
	r := siglake(t, "inspect", "events", "--dir", dir, "--json", "--svg", file)
	if r.code != 0 {
		t.Fatalf("inspect --svg: exit %d\n%s", r.code, r.stderr)
	}
	var doc struct {
		Partitions []struct {
			Files []json.RawMessage `json:"files"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("inspect --json with --svg printed %q: %v", r.stdout, err)
	}
	files := 0
	for _, p := range doc.Partitions {
		files += len(p.Files)
	}
	svg, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(svg), `<rect class="file"`); files == 0 || n != files || !strings.HasPrefix(string(svg), "<?xml") {
		t.Errorf("the picture draws %d files; inspect --json lists %d", n, files)
	}
	if r := siglake(t, "inspect", "events", "--dir", dir, "--svg", "-"); r.code != 0 || !strings.HasPrefix(r.stdout, "<?xml") ||
		strings.Count(r.stdout, `<rect class="file"`) != files || strings.Contains(r.stdout, "partition ") {
		t.Errorf("inspect --svg -: exit %d, want the picture alone on stdout:\n%.300s%s", r.code, r.stdout, r.stderr)
	}
	none := filepath.Join(t.TempDir(), "none.svg")
	if r := siglake(t, "inspect", "--dir", dir, "--svg", none); r.code != 2 || !strings.Contains(r.stderr, "name the TABLE") {
		t.Errorf("inspect --svg without a table: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(none); err == nil {
		t.Error("inspect --svg without a table wrote a file")
	}
}
