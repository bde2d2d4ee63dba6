package main

import (
	"strings"
	"testing"
)

// TestNoOutputBeforeError: a command that fails on its input fails before it prints anything
// (gc --older-than 0s printed a result first; tail --columns with a column the table lacks
// printed rows without it and exited 0), and its error names the input.
func TestNoOutputBeforeError(t *testing.T) {
	dir := demoLakeDir(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"gc", "--older-than", "0s"}, "-older-than"},
		{[]string{"gc", "--older-than", "1h"}, "--older-than 1h"},
		{[]string{"gc", "--older-than", "1h", "--json"}, "--older-than 1h"},
		{[]string{"search", "events", "--since", "1h", "--from", "2026-01-01"}, "--since and --from"},
		{[]string{"search", "events", "--columns", "nosuch"}, `--columns "nosuch"`},
		{[]string{"tail", "events", "--buffer", "none", "--columns", "service,nosuch"}, `--columns "nosuch"`},
		{[]string{"tail", "events", "--buffer", "none", "--where", "nosuch=1"}, `column "nosuch"`},
		{[]string{"tail", "events", "--buffer", "none", "--since", "-1h"}, "-since"},
		{[]string{"delete-request", "--table", "events", "--where", "nosuch=1"}, `column "nosuch"`},
		{[]string{"retention", "set", "events", "--period", "30d", "--rule", "nosuch=1:3d"}, `column "nosuch"`},
		{[]string{"fold", "set", "events", "--bucket", "1m"}, "no key columns"},
	} {
		r := siglake(t, append(c.args, "--dir", dir)...)
		if r.code == 0 || r.stdout != "" || !strings.Contains(r.stderr, c.want) {
			t.Errorf("siglake %s: exit %d, stdout %q, stderr %q; want an error naming %q and nothing on stdout",
				strings.Join(c.args, " "), r.code, head(r.stdout), head(r.stderr), c.want)
		}
	}
}
