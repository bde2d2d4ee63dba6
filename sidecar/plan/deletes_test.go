package plan

import (
	"fmt"
	"testing"

	"github.com/siglake/siglake/sidecar/plan/level"
)

func TestPlanDeletes(t *testing.T) {
	mib := int64(1) << 20
	c := func(path string, mb int64, open ...string) DeleteCandidate {
		return DeleteCandidate{Path: path, Bytes: mb * mib, Open: open}
	}
	caps := DeleteCaps{MaxFiles: 2, MaxBytes: 100 * mib}
	for _, tc := range []struct {
		name  string
		cands []DeleteCandidate
		caps  DeleteCaps
		want  string // actions in order: E examine, C clean, X capped
		files int
		capd  bool
	}{
		{"none", nil, caps, "", 0, false},
		{"clean ones cost nothing", []DeleteCandidate{c("a", 10), c("b", 10, "r1"), c("c", 10)}, caps, "CEC", 1, false},
		{"file cap", []DeleteCandidate{c("a", 1, "r1"), c("b", 1, "r1"), c("c", 1, "r1")}, caps, "EEX", 2, true},
		{"byte cap", []DeleteCandidate{c("a", 60, "r1"), c("b", 60, "r1")}, caps, "EX", 1, true},
		{"the first file always, however big", []DeleteCandidate{c("a", 500, "r1"), c("b", 1, "r1")}, caps, "EX", 1, true},
		{"capped then clean", []DeleteCandidate{c("a", 1, "r1"), c("b", 1, "r2"), c("c", 1, "r1"), c("d", 1)}, caps, "EEXC", 2, true},
		{"no caps", []DeleteCandidate{c("a", 500, "r1"), c("b", 500, "r1"), c("c", 500, "r1")}, DeleteCaps{NoCaps: true}, "EEE", 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanDeletes(tc.cands, tc.caps)
			got := ""
			for _, pk := range p.Picks {
				got += string("ECX"[pk.Action])
				if pk.Reason == "" {
					t.Errorf("%s: no reason", pk.Path)
				}
			}
			if got != tc.want || p.Files != tc.files || p.Capped != tc.capd {
				t.Fatalf("plan %q files %d capped %v, want %q %d %v (%+v)", got, p.Files, p.Capped, tc.want, tc.files, tc.capd, p.Picks)
			}
			// Pure: the same input, the same plan.
			if again := PlanDeletes(tc.cands, tc.caps); fmt.Sprint(again) != fmt.Sprint(p) {
				t.Fatalf("not deterministic: %+v then %+v", p, again)
			}
		})
	}
	if level.KindDeleteTask.String() != "delete-task" {
		t.Fatalf("kind name %q", level.KindDeleteTask)
	}
}
