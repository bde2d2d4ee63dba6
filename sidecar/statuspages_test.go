package sidecar

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/gossip"
	"github.com/siglake/siglake/sidecar/commit"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/maintain"
	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/plan/level"
	"github.com/siglake/siglake/test/testenv"
)

// TestStatusPagesServed: the HTML pages are on the status listener, rendered from what the loops
// published (a maintained table's partitions as timelines), with the index at / and /status; an
// unknown table's page is a 404.
func TestStatusPagesServed(t *testing.T) {
	now := time.Now().UTC()
	st := NewStatus("pod-0", config.RoleAll, "test", now)
	files := []level.File{
		{Path: "a.parquet", Partition: "2026-12-03", SizeBytes: 10, MinTime: now.Add(-time.Hour).UnixMicro(), MaxTime: now.UnixMicro()},
		{Path: "b.parquet", Partition: "2026-12-03", SizeBytes: 10, MinTime: now.Add(-30 * time.Minute).UnixMicro(), MaxTime: now.UnixMicro()},
	}
	st.Maintenance("events", &maintain.State{SampledAt: now, FilesPerLevel: map[string]int{"L0": 2}, BytesPerLevel: map[string]int{"L0": 20},
		OverlapDepth: 2, Partitions: maintain.Partitions(files, plan.DefaultConfig())})
	st.Deletes("events", &sweep.State{Pending: []sweep.PendingRequest{{ID: "req-1", Table: "events", State: "waiting", CreatedAt: now, ExecuteAt: now.Add(time.Hour)}}})
	st.Owned([]string{"events"})
	srv := httptest.NewServer(Handler(NewMetrics(), st, &Readiness{}, time.Now))
	defer srv.Close()
	get := func(path string) (int, string, string) {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	for path, want := range map[string]string{
		"/":                    `href="/status/table/events"`,
		"/status":              `href="/debug/status"`,
		"/status/ring":         "Table leases",
		"/status/deletions":    "req-1",
		"/status/table/events": `<rect class="file"`,
	} {
		code, ctype, body := get(path)
		if code != http.StatusOK || !strings.HasPrefix(ctype, "text/html") || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d %s, want 200 text/html with %q:\n%s", path, code, ctype, want, body)
		}
	}
	if _, _, body := get("/status/table/events"); strings.Count(body, `<rect class="file"`) != 2 {
		t.Errorf("the table page draws %d files, want 2", strings.Count(body, `<rect class="file"`))
	}
	if code, _, _ := get("/status/table/nosuch"); code != http.StatusNotFound {
		t.Errorf("unknown table: %d, want 404", code)
	}
	if code, _, _ := get("/nosuch"); code != http.StatusNotFound {
		t.Errorf("GET /nosuch: %d, want 404 (only / itself is the index)", code)
	}
}

// gcDOMRow reads a group commit row of the overview as Chromium built it: the table and the text
// of each cell after the table's (committer, queue, last commit, complete through, live streams,
// pods heard).
var gcDOMRow = regexp.MustCompile(`(?s)<tr class="gc-table" data-table="([^"]*)">\s*<td>.*?</td>\s*` + strings.Repeat(`<td class="[^"]*gc-[^"]*"[^>]*>(.*?)</td>\s*`, 6) + `</tr>`)

var domMarkup = regexp.MustCompile(`<[^>]*>`)

// domText is the text of an HTML fragment as a reader sees it, spaces collapsed.
func domText(s string) string {
	s = domMarkup.ReplaceAllString(s, " ")
	s = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&nbsp;", " ", "&amp;", "&").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}

// TestGroupCommitSectionInChromium: the overview's group commit section, loaded in headless
// Chromium from the status listener, shows what /debug/status group_commit says: per table its
// committer (this process for the tables it commits, the lease owner for the others), and for
// the tables committed here the queue, last commit, complete-through watermark, live streams and
// pods heard; this pod's fallbacks by reason and its hand-offs waiting for an answer. Off, it shows
// the reason /debug/status gives.
func TestGroupCommitSectionInChromium(t *testing.T) {
	browser := testenv.Chromium(t)
	now := time.Now().UTC().Truncate(time.Second)
	st := NewStatus("pod-a", config.RoleAll, "test", now.Add(-time.Hour))
	st.Leases(map[string]gossip.Lease{"events": {Owner: "pod-a", Since: now.Add(-time.Minute)}, "audit": {Owner: "pod-b", Since: now.Add(-time.Minute)}})
	st.Owned([]string{"events"})
	st.GroupCommit(&GroupCommitReport{Enabled: true, IntervalSeconds: 1,
		Committer: &commit.CommitterStatus{Tables: []commit.CommitterTable{
			{Table: "events", QueueRequests: 7, QueueBytes: 3 << 20, BehindIntervals: 1.5, LiveStreams: 3, CompleteThrough: now.Add(-9 * time.Second),
				LastCommit: &commit.LastCommit{Time: now.Add(-4 * time.Second), Requests: 6, Streams: 3, Files: 11, SnapshotID: 4711, Seconds: 0.125, Outcome: commit.CommitCommitted},
				Members:    []commit.MemberHeard{{Name: "pod-b", Streams: 2, LastHeard: now.Add(-2 * time.Second)}, {Name: "pod-a", Streams: 1, LastHeard: now}}},
			{Table: "traces", LiveStreams: 1, LastCommit: &commit.LastCommit{Time: now.Add(-time.Minute), Requests: 1, Streams: 1, Seconds: 2, Outcome: commit.CommitUnknown}},
		}},
		Pod: &commit.ClientStatus{Fallbacks: map[string]int64{commit.FallbackTimeout: 3, commit.FallbackRefused: 1},
			Outstanding: []commit.Outstanding{{ID: "a1b2", Table: "audit", Stream: "pod-a/0", First: "3:1", Last: "3:8", To: "pod-b", Since: now.Add(-6 * time.Second), Sends: 2, LastAnswer: "busy"}}}})
	srv := httptest.NewServer(Handler(NewMetrics(), st, &Readiness{}, func() time.Time { return now }))
	defer srv.Close()

	rep := statusJSON(t, srv.URL)
	dom := browser.DumpDOM(srv.URL + "/status")
	rows := map[string][]string{}
	for _, m := range gcDOMRow.FindAllStringSubmatch(dom, -1) {
		for _, c := range m[2:] {
			rows[m[1]] = append(rows[m[1]], domText(c))
		}
	}
	// What each row must say, from /debug/status.
	g := rep.GroupCommit
	want := map[string][]string{}
	for name, tr := range rep.Tables {
		want[name] = []string{tr.Owner, "–", "–", "–", "–", "–"}
	}
	for _, ct := range g.Committer.Tables {
		queue := fmt.Sprintf("%d req · %s", ct.QueueRequests, HumanBytes(int64(ct.QueueBytes)))
		if ct.BehindIntervals > 0 {
			queue += fmt.Sprintf(" %.1f intervals behind", ct.BehindIntervals)
		}
		c := ct.LastCommit
		last := fmt.Sprintf("%s %d req · %d streams · %d files in %.2fs", c.Outcome, c.Requests, c.Streams, c.Files, c.Seconds)
		if c.SnapshotID != 0 {
			last += fmt.Sprintf(" · snapshot %d", c.SnapshotID)
		}
		last += " " + agoText(rep.Now.Sub(c.Time))
		through := "–"
		if !ct.CompleteThrough.IsZero() {
			through = ct.CompleteThrough.UTC().Format("2006-01-02 15:04:05Z") + " " + agoText(rep.Now.Sub(ct.CompleteThrough))
		}
		heard := "none"
		if len(ct.Members) > 0 {
			heard = fmt.Sprintf("%d pods", len(ct.Members))
			for _, m := range ct.Members {
				heard += fmt.Sprintf(" %s %d streams · %s", m.Name, m.Streams, agoText(rep.Now.Sub(m.LastHeard)))
			}
		}
		want[ct.Table] = []string{rep.Node + " here", queue, last, through, fmt.Sprint(ct.LiveStreams), heard}
	}
	if len(want) != 3 || len(rows) != len(want) {
		t.Errorf("the section has rows %v; /debug/status knows tables %v and commits %d", rows, rep.Tables, len(g.Committer.Tables))
	}
	for table, cells := range want {
		if strings.Join(rows[table], " | ") != strings.Join(cells, " | ") {
			t.Errorf("row %s in Chromium:\n got %q\nwant %q (from /debug/status)", table, rows[table], cells)
		}
	}
	for reason, n := range g.Pod.Fallbacks {
		if !regexp.MustCompile(`<span class="gc-fallback" data-reason="` + reason + `">` + reason + ` <b>` + fmt.Sprint(n) + `</b></span>`).MatchString(dom) {
			t.Errorf("the page does not show %d fallbacks for %s", n, reason)
		}
	}
	for _, o := range g.Pod.Outstanding {
		row := regexp.MustCompile(`(?s)<tr class="gc-outstanding" data-id="` + o.ID + `">(.*?)</tr>`).FindStringSubmatch(dom)
		want := fmt.Sprintf("%s %s %s %s..%s %s %s %d %s", o.ID, o.Table, o.Stream, o.First, o.Last, o.To, rep.Now.Sub(o.Since), o.Sends, o.LastAnswer)
		if row == nil || domText(row[1]) != want {
			t.Errorf("hand-off %s in Chromium: %q, want %q", o.ID, row, want)
		}
	}
	if n := strings.Count(dom, `<tr class="gc-outstanding"`); n != len(g.Pod.Outstanding) {
		t.Errorf("%d hand-offs on the page, %d in /debug/status", n, len(g.Pod.Outstanding))
	}

	st.GroupCommit(&GroupCommitReport{DisabledReason: groupCommitNoKey})
	rep = statusJSON(t, srv.URL)
	dom = browser.DumpDOM(srv.URL + "/status")
	off := regexp.MustCompile(`<span id="group-commit-off">([^<]*)</span>`).FindStringSubmatch(dom)
	if off == nil || domText(off[1]) != rep.GroupCommit.DisabledReason || strings.Contains(dom, "gc-table") || !strings.Contains(dom, `data-enabled="false"`) {
		t.Errorf("group commit off: the page shows %q, /debug/status says %q", off, rep.GroupCommit.DisabledReason)
	}
}

// agoText is how the pages say how long ago something was.
func agoText(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	}
	return fmt.Sprintf("%dh%02dm ago", int(d.Hours()), int(d.Minutes())%60)
}

func statusJSON(t *testing.T, base string) StatusReport {
	t.Helper()
	resp, err := http.Get(base + "/debug/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r StatusReport
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.GroupCommit == nil {
		t.Fatalf("/debug/status: %v, group_commit %v", err, r.GroupCommit)
	}
	return r
}
