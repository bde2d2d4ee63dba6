package main

import (
	"regexp"
	"strings"
	"testing"
)

// subcommandLines is every command line that reaches a flag set: the commands, and the actions
// of retention, fold and skipped (the compactor has TestCompactorHelp).
func subcommandLines() [][]string {
	var out [][]string
	for _, c := range commands() {
		switch c.name {
		case "compactor":
		case "retention", "fold":
			out = append(out, []string{c.name, "set"}, []string{c.name, "show"})
		case "skipped":
			out = append(out, []string{c.name, "list"}, []string{c.name, "clear"})
		default:
			out = append(out, []string{c.name})
		}
	}
	return out
}

// TestSubcommandHelpPlaceholders: each subcommand's -h names the subcommand, and every flag's
// placeholder is a word that says what goes there (status -h showed "-dir siglake demo --dir
// DIR", taken from a back-quoted phrase of its usage; Var flags showed "value").
func TestSubcommandHelpPlaceholders(t *testing.T) {
	placeholder := regexp.MustCompile(`^([A-Z][A-Z0-9_:=,.&\[\]-]*|string|int|uint|float)$`)
	flagLine := regexp.MustCompile(`(?m)^  -(\S+)(?: (.*))?$`)
	for _, args := range subcommandLines() {
		name := "siglake " + strings.Join(args, " ")
		r := siglake(t, append(args, "-h")...)
		if r.code != 0 || r.stderr != "" {
			t.Errorf("%s -h: exit %d, stderr %q", name, r.code, head(r.stderr))
			continue
		}
		if first, _, _ := strings.Cut(r.stdout, "\n"); !strings.Contains(first, name) {
			t.Errorf("%s -h: the first line %q does not name the subcommand", name, first)
		}
		if strings.Contains(r.stdout, "`") {
			t.Errorf("%s -h shows a back quote", name)
		}
		for _, m := range flagLine.FindAllStringSubmatch(r.stdout, -1) {
			if m[2] != "" && !placeholder.MatchString(m[2]) {
				t.Errorf("%s -h: flag -%s has the placeholder %q", name, m[1], m[2])
			}
		}
	}
}

// TestBadFlagShowsSubcommandUsage: an unknown flag prints the error and that subcommand's usage,
// short, to stderr with exit 2: not "Usage of siglake compactor:" and its 130 lines of options
// (what inspect and tail printed, their unknown flags going on to the compactor's parser).
func TestBadFlagShowsSubcommandUsage(t *testing.T) {
	for _, args := range subcommandLines() {
		name := "siglake " + strings.Join(args, " ")
		line := append([]string{}, args...)
		if args[0] == "tail" || args[0] == "search" || args[0] == "inspect" {
			line = append(line, "events")
		}
		for _, bad := range [][]string{{"--no-such-flag"}, {"--no-such-flag=1"}} {
			r := siglake(t, append(line, bad...)...)
			switch {
			case r.code != 2 || r.stdout != "":
				t.Errorf("%s %s: exit %d, stdout %q; want exit 2 and nothing on stdout", name, bad[0], r.code, head(r.stdout))
			case !strings.Contains(r.stderr, "-no-such-flag"):
				t.Errorf("%s %s: stderr does not name the flag:\n%s", name, bad[0], r.stderr)
			case strings.Contains(r.stderr, "Usage of siglake compactor") || strings.Contains(r.stderr, "-backpressure-compact-every") || !strings.Contains(r.stderr, "Usage: "+name) && !strings.Contains(r.stderr, "Usage of "+name):
				t.Errorf("%s %s: not the subcommand's usage:\n%s", name, bad[0], head(r.stderr))
			case strings.Count(r.stderr, "\n") > 60:
				t.Errorf("%s %s: %d lines on stderr", name, bad[0], strings.Count(r.stderr, "\n"))
			}
		}
	}
	// A compactor option without its value is refused the same way.
	if r := siglake(t, "gc", "--catalog"); r.code != 2 || !strings.Contains(r.stderr, "flag needs an argument: -catalog") || !strings.Contains(r.stderr, "Usage: siglake gc") {
		t.Errorf("gc --catalog: exit %d\n%s", r.code, r.stderr)
	}
}
