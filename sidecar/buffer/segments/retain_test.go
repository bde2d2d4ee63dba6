package segments

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/lake/marks"
)

func TestRetainedNames(t *testing.T) {
	s := localwal.SegmentInfo{Table: "events", Incarnation: 17, Seq: 42}
	name := retainedName(s, marks.Mark{Incarnation: 17, Seq: 40})
	wal, mark, prev, ok := parseRetained(name)
	if !ok || wal != localwal.SegmentName("events", 17, 42) || mark != (marks.Mark{Incarnation: 17, Seq: 42}) || prev != (marks.Mark{Incarnation: 17, Seq: 40}) {
		t.Fatalf("%s: %s %v %v %v", name, wal, mark, prev, ok)
	}
	for _, bad := range []string{"events.wal", localwal.SegmentName("events", 1, 2), "x.1.2.3.4.wal", strings.TrimSuffix(name, ".wal")} {
		if _, _, _, ok := parseRetained(bad); ok {
			t.Errorf("%q parses as a retained segment", bad)
		}
	}
	// Retiring a segment that is gone already is no error; one that cannot be moved is removed.
	dir := t.TempDir()
	r := &Retention{Keep: time.Minute}
	if err := r.Retire(dir, marks.Mark{}, []localwal.SegmentInfo{{Path: filepath.Join(dir, "gone.wal"), Table: "events", Seq: 1}}); err != nil {
		t.Fatal(err)
	}
}
