// Package duration reads siglake's one duration syntax (DESIGN.md section 5): a decimal number
// with s, m, h, d (24h) or w (7d), or Go's units (1h30m, 500ms), and combinations of them with
// weeks and days first (1w2d, 1d12h, 2d30m). It is a pure function so every option and stored
// setting refuses the same inputs.
package duration

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// Units names the units, for errors and usage texts that list them.
const Units = "s, m, h, d, w"

// Examples lists accepted forms, for errors and usage texts.
const Examples = "90s, 30m, 1h30m, 24h, 2d, 1d12h or 1w"

// accepted describes the syntax, for errors that name the input.
const accepted = "a duration such as " + Examples + " (" + Units + "; weeks and days first when combined), or 0"

// ErrSyntax is returned for anything but a non-negative duration that fits in time.Duration.
var ErrSyntax = errors.New("accepted: " + accepted)

// Parse reads v. It refuses NaN, infinities, exponents and negative numbers, and a value past
// time.Duration's range (about 292 years): converting such a float wraps to a negative duration,
// which callers read as "none" and act on at once.
func Parse(v string) (time.Duration, error) {
	s := strings.TrimSpace(v)
	switch s {
	case "0":
		return 0, nil
	case "":
		return 0, ErrSyntax
	}
	days, rest, ok := weeksAndDays(s)
	if !ok {
		return 0, ErrSyntax
	}
	if rest == "" {
		return days, nil
	}
	// time.ParseDuration refuses overflow itself, but takes a sign (-0s, +1h) and a bare "0",
	// which are refused here (1d0, 1d-2h).
	if rest == "0" || rest[0] == '-' || rest[0] == '+' {
		return 0, ErrSyntax
	}
	d, err := time.ParseDuration(rest)
	if err != nil || d < 0 || d > math.MaxInt64-days {
		return 0, ErrSyntax
	}
	return days + d, nil
}

// weeksAndDays reads the leading weeks and days of s (at most one of each, weeks first) and
// returns their sum and the rest of s, for Go's units. ok is false for a malformed number before
// w or d and for a sum past time.Duration's range.
func weeksAndDays(s string) (sum time.Duration, rest string, ok bool) {
	var total float64
	units := []struct {
		letter byte
		length time.Duration
	}{{'w', 7 * 24 * time.Hour}, {'d', 24 * time.Hour}}
	rest = s
	for _, u := range units {
		end := strings.IndexFunc(rest, func(c rune) bool { return c != '.' && (c < '0' || c > '9') })
		if end < 0 || rest[end] != u.letter || (end+1 < len(rest) && isLetter(rest[end+1])) {
			continue // no number, or a number with another unit (2h, 5ms): Go's part
		}
		num := rest[:end]
		if !decimal(num) {
			return 0, "", false
		}
		f, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return 0, "", false
		}
		total += f * float64(u.length)
		rest = rest[end+1:]
	}
	// Compare in float before converting: the conversion of an out-of-range float is undefined.
	if total >= math.MaxInt64 {
		return 0, "", false
	}
	return time.Duration(total), rest, true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

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
