package rows

import (
	"fmt"
	"time"
)

// ParseTime accepts RFC 3339 (2026-11-29T10:00:00Z, fractions allowed) or a UTC day (2026-11-29);
// flag names the option in errors.
func ParseTime(flag, v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%s %q: accepted: RFC 3339 (2026-11-29T10:00:00Z) or a UTC day (2026-11-29)", flag, v)
}

// ParseMicros is ParseTime in microseconds, refusing a time finer than the table's timestamps:
// flooring it would move a bound past rows the user meant to keep or to delete.
func ParseMicros(flag, v string) (int64, error) {
	t, err := ParseTime(flag, v)
	if err != nil {
		return 0, err
	}
	if t.Nanosecond()%1000 != 0 {
		return 0, fmt.Errorf("%s %q: timestamps are stored to the microsecond; give at most 6 fractional digits", flag, v)
	}
	return t.UnixMicro(), nil
}

// FormatMicros renders µs since the epoch as RFC 3339 UTC with six fractional digits, which
// ParseTime reads back exactly.
func FormatMicros(us int64) string {
	return time.UnixMicro(us).UTC().Format("2006-01-02T15:04:05.000000Z")
}
