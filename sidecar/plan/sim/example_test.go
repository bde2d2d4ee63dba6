package sim_test

import (
	"fmt"
	"time"

	"github.com/siglake/siglake/sidecar/plan/sim"
)

// Two hours of a small table, leveled against legacy.
func ExampleCompare() {
	s := sim.Base()
	s.Name = "example"
	s.Pods = 4
	s.IngestBytesPerSec = 2e6
	s.Duration = 2 * time.Hour
	leveled, legacy := sim.Compare(s)
	for _, r := range []sim.Result{leveled, legacy} {
		fmt.Printf("%s: write amplification %.1f, settled depth p50 %d, files p50 %d\n",
			r.Strategy, r.WriteAmp, r.SettledDepthP50, r.FilesP50)
	}
	// Output:
	// leveled: write amplification 7.2, settled depth p50 4, files p50 34
	// legacy: write amplification 72.8, settled depth p50 1, files p50 33
}
