package plan_test

import (
	"fmt"
	"time"

	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/plan/level"
)

// A table with nine small drain files, two of them overlapping: one L0 bin
// that keeps the overlapping pair together.
func ExamplePlan() {
	var files []level.File
	for i := range 9 {
		start := int64(i) * 10_000_000 // 10 s apart, in microseconds
		files = append(files, level.File{
			Path: fmt.Sprintf("day=1/%d.parquet", i), Partition: "day=1",
			SizeBytes: 1 << 20, MinTime: start, MaxTime: start + 9_999_999, Rows: 5000,
		})
	}
	files[8].MinTime = files[7].MinTime + 1 // late rows: 7 and 8 overlap

	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pass := plan.Plan(plan.DefaultConfig(), plan.Input{Files: files, Now: now})
	fmt.Println(pass)
	fmt.Println("depth:", pass.Depth["day=1"], "L0 checked at:", pass.Next.LastCheck[level.L0].Format(time.TimeOnly))
	// Output:
	// pass run: 1 bins, 9 files
	//   bin l0 L0 partition="day=1" files=9 bytes=9437184 score=1.12: 9 rewrite-eligible L0 files >= 8; 9 files, 9437184 bytes of whole clusters
	// depth: 2 L0 checked at: 00:00:00
}
