// Package duration reads siglake's one duration syntax (DESIGN.md section 5): a decimal number
// with s, m, h, d (24h) or w (7d), or Go's units (1h30m, 500ms). It is a pure function so every
// option and stored setting refuses the same inputs.
package duration

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// Accepted describes the syntax, for errors that name the input.
const Accepted = "a duration such as 90s, 30m, 24h, 2d or 1w (s, m, h, d, w), or 0"

// ErrSyntax is returned for anything but a non-negative duration that fits in time.Duration.
var ErrSyntax = errors.New("accepted: " + Accepted)

// Parse reads v. It refuses NaN, infinities, exponents and negative numbers, and a value past
// time.Duration's range (about 292 years): converting such a float wraps to a negative duration,
// which callers read as "none" and act on at once.
func Parse(v string) (time.Duration, error) {
	s := strings.TrimSpace(v)
	if s == "0" {
		return 0, nil
	}
	if n := len(s); n > 1 && (s[n-1] == 'd' || s[n-1] == 'w') {
		num := s[:n-1]
		if !decimal(num) {
			return 0, ErrSyntax
		}
		f, err := strconv.ParseFloat(num, 64)
		unit := 24 * time.Hour
		if s[n-1] == 'w' {
			unit *= 7
		}
		// Compare in float before converting: the conversion of an out-of-range float is undefined.
		if err != nil || f*float64(unit) >= math.MaxInt64 {
			return 0, ErrSyntax
		}
		return time.Duration(f * float64(unit)), nil
	}
	// time.ParseDuration refuses overflow itself; a sign is refused here (-0s, +1h).
	if s == "" || s[0] == '-' || s[0] == '+' {
		return 0, ErrSyntax
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, ErrSyntax
	}
	return d, nil
}

// decimal says whether s is digits with at most one decimal point (1, 1.5, .5): no sign, no
// exponent, no NaN or Inf, which strconv.ParseFloat would all accept.
func decimal(s string) bool {
	digits, dot := 0, false
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !dot:
			dot = true
		default:
			return false
		}
	}
	return digits > 0
}
