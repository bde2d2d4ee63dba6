package marker

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestTake: Take returns every marker once and removes it, clears marker writes that never
// finished, and names the table of an unreadable marker from its file name.
func TestTake(t *testing.T) {
	dir := t.TempDir()
	m := Marker{Table: "events", Node: "drain-0", Started: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), PID: 7, Files: []string{"a.parquet"}}
	if err := Write(dir, m, os.WriteFile); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, Prefix+"audit.json"), []byte("{torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(Path(dir, "logs")+".tmp", []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := Take(dir)
	if len(got) != 2 || got[0].Table != "audit" || got[0].Node != "" || got[1].Node != "drain-0" || len(got[1].Files) != 1 || !got[1].Started.Equal(m.Started) {
		t.Fatalf("Take = %+v", got)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, Prefix+"*")); len(left) != 0 {
		t.Fatalf("left after Take: %v", left)
	}
	if again := Take(dir); len(again) != 0 {
		t.Fatalf("second Take = %+v", again)
	}
}
