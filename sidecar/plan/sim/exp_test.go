package sim

import (
	"testing"
	"time"
)

func TestExp(t *testing.T) {
	s := Documented()[0]
	s.Duration = 4 * time.Hour
	for _, m := range []float64{200e6, 600e6} {
		for _, sp := range []float64{0, 0.05} {
			s.MergeBytesPerSec = m
			s.SplitSparse = sp
			
			st := time.Now()
			r := Run(s)
			t.Logf("merge=%v split=%v %v (%v)", m, sp, r, time.Since(st).Round(time.Millisecond))
		}
	}
}
