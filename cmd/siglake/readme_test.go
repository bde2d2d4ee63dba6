package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeExamplesOnDemoData runs the README's `siglake search`, `tail` and `inspect` examples
// (not the --follow ones, which never end) on a demo lake through --dir: each must succeed and
// print something; a search example must match rows the demo writes.
func TestReadmeExamplesOnDemoData(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := demoLakeDir(t)
	ran := 0
	for _, line := range strings.Split(string(raw), "\n") {
		cmdline, _, _ := strings.Cut(line, " #")
		if !strings.HasPrefix(cmdline, "siglake ") {
			continue
		}
		args := shellWords(t, strings.TrimSpace(cmdline))
		if len(args) < 2 || args[0] != "siglake" || strings.Contains(cmdline, "--follow") {
			continue
		}
		switch args[1] {
		case "search", "inspect", "tail":
		default:
			continue
		}
		args = append(args[1:], "--dir", dir)
		for i := range args[:len(args)-1] {
			if args[i] == "--svg" && args[i+1] != "-" { // a file the example names: never in the source tree
				args[i+1] = filepath.Join(t.TempDir(), filepath.Base(args[i+1]))
			}
		}
		if args[0] == "tail" {
			args = append(args, "--buffer", "none") // no sidecar runs on the lake
		}
		ran++
		r := siglake(t, args...)
		if r.code != 0 || strings.TrimSpace(r.stdout) == "" {
			t.Errorf("README example %q on demo data: exit %d\nstdout:\n%s\nstderr:\n%s", cmdline, r.code, r.stdout, r.stderr)
			continue
		}
		if args[0] == "search" && len(strings.Split(strings.TrimSpace(r.stdout), "\n")) < 2 {
			t.Errorf("README example %q matches no row of the demo's data:\n%s\n%s", cmdline, r.stdout, r.stderr)
		}
	}
	if ran < 2 {
		t.Fatalf("found %d README examples to run: did the README change?", ran)
	}
}

// shellWords splits a POSIX-like command line: spaces separate words, quotes group them.
func shellWords(t *testing.T, s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
