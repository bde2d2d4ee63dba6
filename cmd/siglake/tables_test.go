package main

import (
	"strings"
	"testing"
)

// TestUnknownTableListsTables: every command that takes a TABLE refuses one the catalog does not
// have before it prints or writes anything, naming it and listing the tables there are (inspect
// said "table does not exist: [siglake nosuch]"; tail printed nothing and exited 0).
func TestUnknownTableListsTables(t *testing.T) {
	dir := demoLakeDir(t)
	for _, args := range [][]string{
		{"inspect", "nosuch"},
		{"search", "nosuch"},
		{"tail", "nosuch", "--buffer", "none"},
		{"tail", "nosuch", "--buffer", "127.0.0.1:1"},
		{"gc", "--table", "nosuch"},
		{"delete-request", "--table", "nosuch", "--where", "service=api"},
		{"delete-cancel", "--table", "nosuch", "d-1"},
		{"delete-sweep", "--table", "nosuch"},
		{"retention", "show", "nosuch"},
		{"retention", "set", "nosuch", "--period", "30d"},
		{"fold", "show", "nosuch"},
		{"fold", "set", "nosuch", "--bucket", "1m", "--key", "service"},
		{"skipped", "list", "nosuch"},
		{"skipped", "clear", "nosuch"},
	} {
		r := siglake(t, append(args, "--dir", dir)...)
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "table nosuch is not in the catalog") || !strings.Contains(r.stderr, "audit, events") {
			t.Errorf("siglake %s: exit %d, stdout %q, stderr %q; want exit 1, nothing on stdout, the table named and the tables listed",
				strings.Join(args, " "), r.code, head(r.stdout), r.stderr)
		}
	}
}
