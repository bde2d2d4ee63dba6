package statuspage

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/commit"
)

// gcRow reads a group commit row's cells: committer, queue, last commit, complete through, live
// streams, pods heard (markup removed, spaces collapsed).
var gcRow = regexp.MustCompile(`(?s)<tr class="gc-table" data-table="([^"]*)">.*?<td class="gc-committer"[^>]*>(.*?)</td>\s*` +
	`<td class="n gc-queue[^"]*"[^>]*>(.*?)</td>\s*<td class="gc-last[^"]*">(.*?)</td>\s*<td class="gc-through[^"]*">(.*?)</td>\s*` +
	`<td class="n gc-live[^"]*">(.*?)</td>\s*<td class="gc-heard[^"]*">(.*?)</td>\s*</tr>`)

var markup = regexp.MustCompile(`<[^>]*>`)

// text is what a browser shows of an HTML fragment, with spaces collapsed.
func text(html string) string {
	s := markup.ReplaceAllString(html, " ")
	s = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'", "&amp;", "&").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}

// gcRows are the group commit rows of a page by table, each its cells' text.
func gcRows(page string) map[string][]string {
	out := map[string][]string{}
	for _, m := range gcRow.FindAllStringSubmatch(page, -1) {
		var cells []string
		for _, c := range m[2:] {
			cells = append(cells, text(c))
		}
		out[m[1]] = cells
	}
	return out
}

func groupCommitReport(now time.Time) Report {
	return Report{Node: "pod-a", Role: "all", Version: "v", StartedAt: now.Add(-time.Hour), Now: now, CatalogReady: true,
		Tables: []Table{{Name: "audit", Owner: "pod-b"}, {Name: "events", Owner: "pod-a", Owned: true}, {Name: "lonely"}},
		GroupCommit: &GroupCommit{Enabled: true, IntervalSeconds: 0.5,
			Committer: &commit.CommitterStatus{Tables: []commit.CommitterTable{
				{Table: "events", QueueRequests: 3, QueueBytes: 2048, BehindIntervals: 2.5, LiveStreams: 12, CompleteThrough: now.Add(-20 * time.Second),
					LastCommit: &commit.LastCommit{Time: now.Add(-2 * time.Second), Requests: 5, Streams: 4, Files: 9, SnapshotID: 77, Seconds: 0.25, Outcome: commit.CommitCommitted},
					Members:    []commit.MemberHeard{{Name: "pod-c", Streams: 2, LastHeard: now.Add(-4 * time.Second)}, {Name: "pod-a", Streams: 1, LastHeard: now.Add(-time.Second)}}},
				{Table: "metrics", LiveStreams: 1, LastCommit: &commit.LastCommit{Time: now.Add(-time.Minute), Requests: 1, Streams: 1, Seconds: 3, Outcome: commit.CommitConflict}},
			}},
			Pod: &commit.ClientStatus{Fallbacks: map[string]int64{commit.FallbackTimeout: 2, commit.FallbackNoCommitter: 1},
				Outstanding: []commit.Outstanding{{ID: "9f2c", Table: "audit", Stream: "s1", First: "1:4", Last: "1:9", To: "pod-b",
					Since: now.Add(-3 * time.Second), Sends: 2, LastAnswer: "ack"}}}}}
}

// TestIndexShowsGroupCommit: the overview's group commit section gives every table's committer,
// and for the tables this process commits their queue, last commit, watermark, live streams and
// the pods heard; then this pod's direct commits by reason and its hand-offs waiting for an
// answer. The values are those of the report, as `siglake status` prints them.
func TestIndexShowsGroupCommit(t *testing.T) {
	now := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	page := indexPage(t, groupCommitReport(now))
	rows := gcRows(page)
	want := map[string][]string{
		"audit":  {"pod-b", "–", "–", "–", "–", "–"},
		"events": {"pod-a here", "3 req · 2.0 KiB 2.5 intervals behind", "committed 5 req · 4 streams · 9 files in 0.25s · snapshot 77 2s ago", "2026-12-04 02:59:40Z 20s ago", "12", "2 pods pod-c 2 streams · 4s ago pod-a 1 streams · 1s ago"},
		"lonely": {"none known", "–", "–", "–", "–", "–"},
		// Committed here, though no other loop has reported the table yet.
		"metrics": {"pod-a here", "0 req · 0 B", "conflict 1 req · 1 streams · 0 files in 3.00s 1m ago", "–", "1", "none"},
	}
	for table, cells := range want {
		if strings.Join(rows[table], " | ") != strings.Join(cells, " | ") {
			t.Errorf("group commit row %s:\n got %q\nwant %q", table, rows[table], cells)
		}
	}
	if len(rows) != len(want) {
		t.Errorf("%d group commit rows, want %d: %v", len(rows), len(want), rows)
	}
	if order := regexp.MustCompile(`<tr class="gc-table" data-table="([^"]*)"`).FindAllStringSubmatch(page, -1); len(order) != 4 ||
		order[0][1] != "audit" || order[3][1] != "metrics" {
		t.Errorf("rows not in table order: %v", order)
	}
	for _, s := range []string{`id="group-commit" data-enabled="true"`, `at most every <span id="group-commit-interval">500ms</span>`,
		`<span class="gc-fallback" data-reason="no_committer">no_committer <b>1</b></span>, <span class="gc-fallback" data-reason="timeout">timeout <b>2</b></span>`,
		`<span class="b ok">on</span></div><div class="s">committer of 2 tables · 1 hand-offs waiting`} {
		if !strings.Contains(page, s) {
			t.Errorf("the page lacks %s", s)
		}
	}
	out := regexp.MustCompile(`(?s)<tr class="gc-outstanding" data-id="9f2c">(.*?)</tr>`).FindStringSubmatch(page)
	if out == nil || text(out[1]) != "9f2c audit s1 1:4..1:9 pod-b 3s 2 ack" {
		t.Errorf("the waiting hand-off: %q", out)
	}
}

// TestIndexGroupCommitOffAndIdle: off, the section says why and shows no tables; on without
// fallbacks or hand-offs it says so; a process that published nothing has no section.
func TestIndexGroupCommitOffAndIdle(t *testing.T) {
	now := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	r := groupCommitReport(now)
	const why = "no gossip: --gossip-bind / SIGLAKE_GOSSIP_BIND is empty"
	r.GroupCommit = &GroupCommit{DisabledReason: why}
	page := indexPage(t, r)
	if !strings.Contains(page, `data-enabled="false"`) || !strings.Contains(page, `<span id="group-commit-off">`+why+`</span>`) ||
		strings.Contains(page, "gc-table") || strings.Contains(page, "hand-off") {
		t.Errorf("group commit off:\n%s", page)
	}
	r.GroupCommit = &GroupCommit{Enabled: true, IntervalSeconds: 1, Pod: &commit.ClientStatus{}}
	page = indexPage(t, r)
	for _, s := range []string{"This pod committed no batch directly since start.", "This pod waits on no hand-off.", "committer of none"} {
		if !strings.Contains(page, s) {
			t.Errorf("idle group commit: the page lacks %q", s)
		}
	}
	if rows := gcRows(page); len(rows) != 3 || rows["events"][0] != "pod-a" {
		t.Errorf("idle group commit rows: %v", rows)
	}
	r.GroupCommit = nil
	if page := indexPage(t, r); strings.Contains(page, "group-commit") || strings.Contains(page, "Group commit") {
		t.Errorf("no report, yet a section")
	}
}

// TestTablePageShowsGroupCommit: a table's page has a group commit card: on the committer its
// queue, live streams, last commit and watermark; elsewhere the committer's name. Off, none.
func TestTablePageShowsGroupCommit(t *testing.T) {
	now := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	r := groupCommitReport(now)
	card := regexp.MustCompile(`(?s)<div class="card" id="table-group-commit">(.*?)</div></div>`)
	for table, want := range map[string]string{
		"events": "Group commit pod-a here 3 req · 2.0 KiB queued · 12 live streams · last committed 2s ago · complete through 2026-12-04 02:59:40Z",
		"audit":  "Group commit pod-b committer · overview",
		"lonely": "Group commit no committer known committer · overview",
	} {
		var b strings.Builder
		if err := tablePage(&b, r, table); err != nil {
			t.Fatal(err)
		}
		if m := card.FindStringSubmatch(b.String()); m == nil || text(m[1]) != want {
			t.Errorf("%s: group commit card %q, want %q", table, m, want)
		}
	}
	r.GroupCommit = &GroupCommit{DisabledReason: "off"}
	var b strings.Builder
	if err := tablePage(&b, r, "events"); err != nil || strings.Contains(b.String(), "table-group-commit") {
		t.Errorf("group commit off, yet a card on the table page (%v)", err)
	}
}
