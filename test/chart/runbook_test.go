package chart

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdAnchors are the heading anchors of the markdown file p as GitHub makes them, outside code blocks.
func mdAnchors(t *testing.T, p string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	fenced := false
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if m := regexp.MustCompile(`^#{1,6} (.+)$`).FindStringSubmatch(line); m != nil && !fenced {
			out[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), ""), " ", "-")] = true
		}
	}
	return out
}

// TestRunbookFirstResponse: docs/operations.md opens with a one-screen table, symptom -> alert ->
// first command -> section, that names every alert the chart renders, and whose section links
// (and every other in-page link of the runbook) lead to a heading.
func TestRunbookFirstResponse(t *testing.T) {
	p := filepath.Join(repoRoot(t), "docs", "operations.md")
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	first := regexp.MustCompile(`(?m)^## .+$`).FindString(doc)
	if first != "## First response" {
		t.Fatalf("the runbook's first section is %q, want the First response table", first)
	}
	section := doc[strings.Index(doc, first)+len(first):]
	section = section[:strings.Index(section, "\n## ")]
	var rows [][]string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) != 4 {
			t.Errorf("row %q: %d cells, want symptom | alert | first command | section", line, len(cells))
			continue
		}
		rows = append(rows, cells)
	}
	if len(rows) < 2 || rows[0][0] != "symptom" {
		t.Fatalf("no symptom table under %s", first)
	}
	rows = rows[1:]
	if len(rows) > 20 {
		t.Errorf("the table has %d rows: more than one screen", len(rows))
	}
	anchors := mdAnchors(t, p)
	inTable := map[string]bool{}
	link := regexp.MustCompile(`\]\(#([a-z0-9_-]+)\)`)
	for _, r := range rows {
		if a := strings.Trim(strings.TrimSpace(r[1]), "`"); a != "" {
			inTable[a] = true
		}
		if strings.TrimSpace(r[2]) == "" {
			t.Errorf("%q: no first command", r[0])
		}
		if !link.MatchString(r[3]) {
			t.Errorf("%q: the section cell %q links to no section", r[0], r[3])
		}
	}
	for _, m := range link.FindAllStringSubmatch(doc, -1) {
		if !anchors[m[1]] {
			t.Errorf("docs/operations.md links to #%s, which is no heading of it", m[1])
		}
	}
	alerts, _ := ruleAlerts(t)
	for a := range alerts {
		if !inTable[a] {
			t.Errorf("alert %s is not in the First response table", a)
		}
	}
	for a := range inTable {
		if alerts[a] == nil {
			t.Errorf("the First response table names %s, which the chart does not render", a)
		}
	}
}

// TestLinksIntoRunbookResolve: links into operations.md and benchmarks.md from the docs, the
// READMEs and the chart (runbook_url anchors) lead to a heading, so moving text between the two
// keeps every anchor others use.
func TestLinksIntoRunbookResolve(t *testing.T) {
	root := repoRoot(t)
	targets := map[string]map[string]bool{
		"operations.md": mdAnchors(t, filepath.Join(root, "docs", "operations.md")),
		"benchmarks.md": mdAnchors(t, filepath.Join(root, "docs", "benchmarks.md")),
	}
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"), filepath.Join(chartDir(t), "README.md"))
	ref := regexp.MustCompile(`(operations|benchmarks)\.md#([a-z0-9_-]+)`)
	checked := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ref.FindAllStringSubmatch(string(raw), -1) {
			checked++
			if !targets[m[1]+".md"][m[2]] {
				rel, _ := filepath.Rel(root, f)
				t.Errorf("%s links to %s.md#%s, which is no heading there", rel, m[1], m[2])
			}
		}
	}
	// The PrometheusRule's runbook_url: the alert's name in lower case.
	alerts, _ := ruleAlerts(t)
	for a := range alerts {
		checked++
		if !targets["operations.md"][strings.ToLower(a)] {
			t.Errorf("alert %s: its runbook_url anchor #%s is no heading of docs/operations.md", a, strings.ToLower(a))
		}
	}
	if checked == 0 {
		t.Fatal("no link checked")
	}
}
