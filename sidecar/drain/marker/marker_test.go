package marker

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRead: Read returns every marker, clears marker writes that never finished, names the table
// of an unreadable marker from its file name, and leaves the markers until Remove (a kill before
// the report leaves them for the next start).
func TestRead(t *testing.T) {
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
	got := Read(dir)
	if len(got) != 2 || got[0].Table != "audit" || got[0].Node != "" || got[1].Node != "drain-0" || len(got[1].Files) != 1 || !got[1].Started.Equal(m.Started) {
		t.Fatalf("Read = %+v", got)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, Prefix+"*")); len(left) != 2 {
		t.Fatalf("after Read want the two markers and no .tmp, have %v", left)
	}
	if again := Read(dir); len(again) != 2 {
		t.Fatalf("second Read before Remove = %+v", again)
	}
	for _, m := range got {
		Remove(dir, m.Table)
	}
	if again := Read(dir); len(again) != 0 {
		t.Fatalf("Read after Remove = %+v", again)
	}
}
