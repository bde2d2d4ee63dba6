package plan

import (
	"fmt"
	"testing"

	"github.com/siglake/siglake/sidecar/plan/level"
)

// TestPlanRetention: partitions whose every file is past the whole cutoff drop as partitions,
// single such files drop as files, files older than the latest cutoff are rewritten oldest
// first inside the caps (the first always, and a file mayHold rules out never), and with no whole
// cutoff (a class kept for ever) nothing drops.
func TestPlanRetention(t *testing.T) {
	c := func(v int64) *int64 { return &v }
	f := func(part string, min, max, size int64) level.File {
		return level.File{Path: fmt.Sprintf("%s/%d-%d", part, min, max), Partition: part, MinTime: min, MaxTime: max, SizeBytes: size}
	}
	files := []level.File{
		f("d1", 0, 9, 10), f("d1", 5, 19, 10), // d1 wholly before 20: a partition drop
		f("d2", 10, 15, 10), f("d2", 30, 40, 10), // d2: one file drops, one straddles the latest cutoff
		f("d3", 36, 50, 10), // newer than the latest cutoff: untouched
		f("d4", 25, 60, 100),
	}
	type want struct {
		drops, rewrites, capped string
	}
	for _, tc := range []struct {
		name    string
		cut     RetentionCutoffs
		caps    RetentionCaps
		mayHold func(string) bool
		want    want
	}{
		{"drops and rewrites", RetentionCutoffs{Whole: c(20), Latest: c(35)}, RetentionCaps{MaxFiles: 8, MaxBytes: 1 << 20}, nil,
			want{"d1/0-9:partition d1/5-19:partition d2/10-15:file", "d4/25-60 d2/30-40", ""}},
		{"file cap", RetentionCutoffs{Whole: c(20), Latest: c(35)}, RetentionCaps{MaxFiles: 1, MaxBytes: 1 << 20}, nil,
			want{"d1/0-9:partition d1/5-19:partition d2/10-15:file", "d4/25-60", "d2/30-40"}},
		{"byte cap: the first file always goes", RetentionCutoffs{Whole: c(20), Latest: c(35)}, RetentionCaps{MaxFiles: 8, MaxBytes: 50}, nil,
			want{"d1/0-9:partition d1/5-19:partition d2/10-15:file", "d4/25-60", "d2/30-40"}},
		{"no caps", RetentionCutoffs{Whole: c(20), Latest: c(35)}, RetentionCaps{MaxFiles: 1, MaxBytes: 1, NoCaps: true}, nil,
			want{"d1/0-9:partition d1/5-19:partition d2/10-15:file", "d4/25-60 d2/30-40", ""}},
		{"kept for ever: no drops", RetentionCutoffs{Latest: c(35)}, RetentionCaps{MaxFiles: 8, MaxBytes: 1 << 20}, nil,
			want{"", "d1/0-9 d1/5-19 d2/10-15 d4/25-60 d2/30-40", ""}},
		{"mayHold rules files out", RetentionCutoffs{Latest: c(35)}, RetentionCaps{MaxFiles: 1, MaxBytes: 1 << 20},
			func(p string) bool { return p == "d2/30-40" }, want{"", "d2/30-40", ""}},
		{"keep everything", RetentionCutoffs{}, RetentionCaps{MaxFiles: 8, MaxBytes: 1 << 20}, nil, want{"", "", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanRetention(files, tc.cut, tc.caps, tc.mayHold)
			got := want{}
			for _, d := range p.Drops {
				got.drops += " " + d.File.Path + ":" + d.Path.String()
			}
			for _, r := range p.Rewrites {
				got.rewrites += " " + r.File.Path
			}
			for _, r := range p.Capped {
				got.capped += " " + r.File.Path
			}
			trim := func(s string) string {
				if len(s) > 0 {
					return s[1:]
				}
				return s
			}
			got = want{trim(got.drops), trim(got.rewrites), trim(got.capped)}
			if got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
