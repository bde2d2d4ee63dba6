package main

import (
	"errors"
	"flag"
	"time"

	"github.com/siglake/siglake/sidecar/duration"
	"github.com/siglake/siglake/sidecar/lake/orphans"
)

// durationValue is a duration flag in the one duration syntax (package duration: s, m, h, d, w,
// and combinations such as 1h30m or 1d12h), so every subcommand reads `--since 2d` as the options and
// stored settings do. Negative durations never parse; zero only where the flag gives it a meaning.
type durationValue struct {
	d         *time.Duration
	allowZero bool
}

// errZeroDuration is the flag package's "invalid value" cause for a zero that means nothing.
var errZeroDuration = errors.New("accepted: a duration above 0 such as " + duration.Examples + " (" + duration.Units + ")")

func (v durationValue) String() string {
	if v.d == nil || *v.d == 0 {
		return "0"
	}
	return orphans.FormatAge(*v.d)
}

func (v durationValue) Set(s string) error {
	d, err := duration.Parse(s)
	switch {
	case err != nil && !v.allowZero:
		return errZeroDuration
	case err != nil:
		return errors.New("accepted: 0 or a duration such as " + duration.Examples + " (" + duration.Units + ")")
	case d == 0 && !v.allowZero:
		return errZeroDuration
	}
	*v.d = d
	return nil
}

// durationHint ends a duration flag's usage; its back-quoted word is the placeholder -h shows.
const durationHint = " (`DURATION`: 90s, 30m, 1h30m, 2d, 1d12h, 1w)"

// durationFlag defines --name on fs with default def. usage should not hold a back-quoted word:
// the placeholder is DURATION. allowZero says whether 0 has a meaning (usage says which).
func durationFlag(fs *flag.FlagSet, name string, def time.Duration, allowZero bool, usage string) *time.Duration {
	d := def
	fs.Var(durationValue{&d, allowZero}, name, usage+durationHint)
	return &d
}

// durationVar is durationFlag into an existing variable, whose value is the default.
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, allowZero bool, usage string) {
	fs.Var(durationValue{p, allowZero}, name, usage+durationHint)
}
