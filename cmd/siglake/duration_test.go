package main

import (
	"strings"
	"testing"
)

// TestDurationFlags: every duration flag of every subcommand reads the one duration syntax (s, m,
// h, d, w, and combinations such as 1h30m or 1d12h); a bad value, a negative one, or a zero where it means nothing is a command
// line error that names the flag and lists the accepted forms, with nothing on stdout.
func TestDurationFlags(t *testing.T) {
	// A tool's own flags are parsed before the catalog is looked at: a --dir that does not exist
	// fails after them (exit 1), so exit 2 is the flag's refusal. The other commands take -h after
	// the flag: help (exit 0) once the value has parsed.
	missing := t.TempDir() + "/none"
	flags := []struct {
		cmd       []string
		flag      string
		zero      bool // 0 has a meaning
		afterHelp bool
	}{
		{[]string{"gc"}, "--older-than", false, false},
		{[]string{"gc"}, "--min-age-floor", false, false},
		{[]string{"search", "events"}, "--since", false, false},
		{[]string{"tail", "events"}, "--since", true, false},
		{[]string{"tail", "events"}, "--interval", false, false},
		{[]string{"walgen"}, "--roll-age", false, true},
		{[]string{"walgen"}, "--max-lateness", true, true},
		{[]string{"walgen"}, "--step", true, true},
		{[]string{"simulate"}, "--duration", false, true},
		{[]string{"simulate"}, "--tick", false, true},
		{[]string{"simulate"}, "--late-mean", true, true},
		{[]string{"simulate"}, "--commit-max-age", true, true},
		{[]string{"demo"}, "--duration", false, true},
	}
	for _, f := range flags {
		line := func(v string) []string {
			args := append(append([]string{}, f.cmd...), f.flag, v)
			if f.afterHelp {
				return append(args, "-h")
			}
			return append(args, "--dir", missing)
		}
		accepted := func(v string) bool {
			r := siglake(t, line(v)...)
			if r.code == 2 {
				if r.stdout != "" {
					t.Errorf("%v: a refused value printed to stdout:\n%s", line(v), r.stdout)
				}
				if !strings.Contains(r.stderr, "-"+strings.TrimLeft(f.flag, "-")) || !strings.Contains(r.stderr, "s, m, h, d, w") {
					t.Errorf("%v: the error does not name the flag and the accepted forms:\n%s", line(v), head(r.stderr))
				}
				return false
			}
			return true
		}
		for _, v := range []string{"2d", "1h30m", "1d12h"} {
			if !accepted(v) {
				t.Errorf("%s %s %s refused", strings.Join(f.cmd, " "), f.flag, v)
			}
		}
		for _, v := range []string{"-1h", "soon"} {
			if accepted(v) {
				t.Errorf("%s %s %s accepted", strings.Join(f.cmd, " "), f.flag, v)
			}
		}
		if got := accepted("0s"); got != f.zero {
			t.Errorf("%s %s 0s: accepted %v, want %v", strings.Join(f.cmd, " "), f.flag, got, f.zero)
		}
	}
}
