package duration

import (
	"testing"
	"time"
)

// TestParse: the one syntax, and every input that once wrapped to a negative duration (a period
// read as none, so deletions ran at once) refused.
func TestParse(t *testing.T) {
	day := 24 * time.Hour
	for in, want := range map[string]time.Duration{
		"0": 0, " 24h ": 24 * time.Hour, "90s": 90 * time.Second, "1h30m": 90 * time.Minute, "500ms": 500 * time.Millisecond,
		"2d": 2 * day, "1.5d": 36 * time.Hour, "1w": 7 * day, ".5d": 12 * time.Hour, "15000w": 15000 * 7 * day, "0d": 0,
	} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "w", "20000w", "200000d", "1e5w", "1e2d", "NaNd", "nand", "Infd", "+Infw", "-1d", "-1h", "+1h",
		"-0s", "1.2.3d", "0x10d", "1_0d", "3y", "10", "9999999999h", "1d2h"} {
		if got, err := Parse(in); err == nil {
			t.Errorf("%q: accepted as %v", in, got)
		}
	}
}
