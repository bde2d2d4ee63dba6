package sidecar

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink is a Markdown inline link's target: [text](target), target without spaces.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinksResolve: every relative link in README.md and docs/*.md names a file or directory
// of the repository, and an anchor, when it has one, names a heading of the Markdown file it
// points into (GitHub's anchors: lower case, punctuation other than - and _ dropped, spaces to -).
// A reader of a fresh clone follows them.
func TestDocLinksResolve(t *testing.T) {
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, "../README.md")
	anchors := map[string]map[string]bool{}
	headingsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := map[string]bool{}
		if raw, err := os.ReadFile(path); err == nil {
			fenced := false
			for _, line := range strings.Split(string(raw), "\n") {
				if strings.HasPrefix(line, "```") {
					fenced = !fenced
				}
				if !fenced && strings.HasPrefix(line, "#") {
					a[githubAnchor(strings.TrimLeft(line, "#"))] = true
				}
			}
		}
		anchors[path] = a
		return a
	}
	checked := 0
	for _, doc := range docs {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		fenced := false
		for n, line := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(line, "```") {
				fenced = !fenced
			}
			if fenced {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				path := doc
				if file != "" {
					path = filepath.Join(filepath.Dir(doc), file)
				}
				checked++
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s:%d: link %q: no such file or directory", doc, n+1, target)
					continue
				}
				if anchor != "" && strings.HasSuffix(path, ".md") && !headingsOf(path)[anchor] {
					t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", doc, n+1, target, file, anchor)
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d relative links found: is the pattern wrong?", checked)
	}
}

// githubAnchor is the anchor GitHub gives a heading.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdName is a Markdown file named in prose, e.g. docs/search.md or DESIGN.md.
var mdName = regexp.MustCompile(`[A-Za-z0-9_./-]+\.md\b`)

// TestDocNamedFilesExist: a Markdown file that README.md or docs/*.md names in prose, linked or
// not, exists in the repository (next to the naming file, at the root or in docs/): the README
// once sent readers to a DESIGN.md that is not in it.
func TestDocNamedFilesExist(t *testing.T) {
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, "../README.md")
	for _, doc := range docs {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(raw), "\n") {
			for _, name := range mdName.FindAllString(line, -1) {
				name = strings.TrimPrefix(strings.TrimPrefix(name, "./"), "../")
				found := false
				for _, dir := range []string{filepath.Dir(doc), "..", "../docs"} {
					if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("%s:%d: names %s, which is not in the repository", doc, n+1, name)
				}
			}
		}
	}
}
