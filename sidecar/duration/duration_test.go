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
		"-0s", "1.2.3d", "0x10d", "1_0d", "3y", "10", "9999999999h"} {
		if got, err := Parse(in); err == nil {
			t.Errorf("%q: accepted as %v", in, got)
		}
	}
}

// TestParseCompound: weeks and days combine with each other and with Go's units as 1h30m does,
// largest first, with the same refusals as a single unit (review finding: 1d12h was refused while
// 1h30m was accepted).
func TestParseCompound(t *testing.T) {
	day := 24 * time.Hour
	for in, want := range map[string]time.Duration{
		"1w2d": 9 * day, "1d12h": 36 * time.Hour, "2d30m": 2*day + 30*time.Minute, "1d2h": 26 * time.Hour,
		"1w1d1h1m1s": 8*day + time.Hour + time.Minute + time.Second, "1w12h": 7*day + 12*time.Hour,
		"1.5w.5d": 11 * day, "0w0d0s": 0, "1d500ms": day + 500*time.Millisecond, "15000w2000h": 15000*7*day + 2000*time.Hour,
	} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	for in, why := range map[string]string{
		"1d1w": "weeks after days", "1w1w": "weeks twice", "1d1d": "days twice", "12h1d": "days after hours",
		"1d-2h": "a negative part", "-1d2h": "a negative sum", "1d+2h": "a signed part", "1d0": "a bare number after days",
		"1d2": "a number without a unit", "1dd": "an unknown unit", "1d 2h": "a space inside", "1e2d3h": "an exponent",
		"NaNd1h": "NaN", "1wInfd": "Inf", "1w1.2.3d": "two decimal points", "15000w100000h": "past time.Duration's range",
		"20000w1d": "weeks past the range", "1w2d9999999999h": "Go's part past the range", "1d2y": "an unknown unit after days",
	} {
		if got, err := Parse(in); err == nil {
			t.Errorf("%q (%s): accepted as %v", in, why, got)
		}
	}
}
