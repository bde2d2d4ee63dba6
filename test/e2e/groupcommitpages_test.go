package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/test/testenv"
)

var (
	// gcPageRow is a row of the overview's group commit section as Chromium built it: the table
	// and the text of its cells after the table's.
	gcPageRow = regexp.MustCompile(`(?s)<tr class="gc-table" data-table="([^"]*)">\s*<td>.*?</td>\s*` +
		strings.Repeat(`<td class="[^"]*gc-[^"]*"[^>]*>(.*?)</td>\s*`, 6) + `</tr>`)
	gcPageMember = regexp.MustCompile(`(?s)<div class="gc-member" data-member="[^"]*">(.*?)</div>`)
	pageMarkup   = regexp.MustCompile(`<[^>]*>`)
	// pageAgo is a relative time ("4s ago", "1h02m ago"): page and /debug/status are read at
	// different instants, so the comparison leaves it out.
	pageAgo = regexp.MustCompile(` ?\d+(s|m|h\d\dm|d) ago`)
)

// pageText is what a reader sees of an HTML fragment, spaces collapsed, relative times removed.
func pageText(s string) string {
	s = pageMarkup.ReplaceAllString(s, " ")
	s = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&nbsp;", " ", "&amp;", "&").Replace(s)
	return pageAgo.ReplaceAllString(strings.Join(strings.Fields(s), " "), "")
}

// groupPageRows reads the group commit rows of an overview page.
func groupPageRows(dom string) map[string][]string {
	out := map[string][]string{}
	for _, m := range gcPageRow.FindAllStringSubmatch(dom, -1) {
		for _, c := range m[2:7] {
			out[m[1]] = append(out[m[1]], pageText(c))
		}
		heard := pageText(m[7])
		if pods := gcPageMember.FindAllStringSubmatch(m[7], -1); len(pods) > 0 {
			var names []string
			for _, p := range pods {
				names = append(names, pageText(p[1]))
			}
			heard = heardText(names)
		}
		out[m[1]] = append(out[m[1]], heard)
	}
	return out
}

// heardText lists the pods a committer heard in name order: the status lists them stalest first,
// an order every heartbeat changes.
func heardText(pods []string) string {
	sort.Strings(pods)
	return fmt.Sprintf("%d pods: %s", len(pods), strings.Join(pods, ", "))
}

// groupStatusRows is what the group commit section must show of r, relative times left out: per
// table its committer, and for the tables r's process commits the queue, last commit, watermark,
// live streams and pods heard.
func groupStatusRows(r sidecar.StatusReport) map[string][]string {
	out := map[string][]string{}
	for name, tr := range r.Tables {
		out[name] = []string{tr.Owner, "–", "–", "–", "–", "–"}
	}
	if r.GroupCommit == nil || r.GroupCommit.Committer == nil {
		return out
	}
	for _, ct := range r.GroupCommit.Committer.Tables {
		queue := fmt.Sprintf("%d req · %s", ct.QueueRequests, sidecar.HumanBytes(int64(ct.QueueBytes)))
		if ct.BehindIntervals > 0 {
			queue += fmt.Sprintf(" %.1f intervals behind", ct.BehindIntervals)
		}
		last := "none yet"
		if c := ct.LastCommit; c != nil {
			last = fmt.Sprintf("%s %d req · %d streams · %d files in %.2fs", c.Outcome, c.Requests, c.Streams, c.Files, c.Seconds)
			if c.SnapshotID != 0 {
				last += fmt.Sprintf(" · snapshot %d", c.SnapshotID)
			}
		}
		through := "–"
		if !ct.CompleteThrough.IsZero() {
			through = ct.CompleteThrough.UTC().Format("2006-01-02 15:04:05Z")
		}
		heard := "none"
		if len(ct.Members) > 0 {
			var pods []string
			for _, m := range ct.Members {
				pods = append(pods, fmt.Sprintf("%s %d streams ·", m.Name, m.Streams))
			}
			heard = heardText(pods)
		}
		out[ct.Table] = []string{r.Node + " here", queue, last, through, fmt.Sprint(ct.LiveStreams), heard}
	}
	return out
}

// TestGroupCommitPagesInChromium: two keyed members with group commit on drain their WALs into
// one table through its committer. Headless Chromium loads each member's overview, and its group
// commit section shows what the member's /debug/status says: on the committer the table committed
// here with its queue, last group commit (requests, streams, files, snapshot), complete-through
// watermark, live streams and the pods it heard; on the other member the committer's name for the
// table; on both the pod's direct commits by reason and its hand-offs waiting (none once drained).
func TestGroupCommitPagesInChromium(t *testing.T) {
	browser := testenv.Chromium(t)
	s := newSite(t)
	ms, sealed := groupCluster(t, s, 2, 400, 5)
	sealedSum(sealed, len(ms))
	drained(t, ms, 90*time.Second)
	owner := committer(t, ms, 30*time.Second)
	defer stopAll(ms)

	for _, m := range ms {
		var rep sidecar.StatusReport
		var dom string
		// The page and /debug/status are read at different moments: retry until a reading before
		// and after the page agree on what the section shows.
		for attempt := 0; ; attempt++ {
			before := mustStatus(t, m.httpAddr)
			dom = browser.DumpDOM("http://" + m.httpAddr + "/status")
			rep = mustStatus(t, m.httpAddr)
			if fmt.Sprint(groupStatusRows(before)) == fmt.Sprint(groupStatusRows(rep)) {
				break
			}
			if attempt == 20 {
				t.Fatalf("%s: the group commit status kept changing", m.name)
			}
			time.Sleep(200 * time.Millisecond)
		}
		g := rep.GroupCommit
		if g == nil || !g.Enabled || g.Pod == nil {
			t.Fatalf("%s: /debug/status group_commit %+v, want on with the pod's part", m.name, g)
		}
		got, want := groupPageRows(dom), groupStatusRows(rep)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: the group commit rows in Chromium\n%v\ndo not say what /debug/status says\n%v", m.name, got, want)
		}
		// The committer commits events here; the other member names it as the table's committer.
		ev := got["events"]
		switch {
		case len(ev) != 6:
			t.Errorf("%s: no group commit row for events: %v", m.name, got)
		case m == owner && (ev[0] != m.name+" here" || !strings.HasPrefix(ev[2], "committed ")):
			t.Errorf("%s commits events, yet its page shows %q", m.name, ev)
		case m != owner && ev[0] != owner.name:
			t.Errorf("%s: the page names %q the committer of events, want %s", m.name, ev[0], owner.name)
		}
		for reason, n := range g.Pod.Fallbacks {
			if !strings.Contains(dom, fmt.Sprintf(`data-reason="%s">%s <b>%d</b>`, reason, reason, n)) {
				t.Errorf("%s: the page does not show %d direct commits for %s", m.name, n, reason)
			}
		}
		if rows := strings.Count(dom, `<tr class="gc-outstanding"`); rows != len(g.Pod.Outstanding) ||
			len(g.Pod.Outstanding) == 0 && !strings.Contains(dom, "This pod waits on no hand-off.") {
			t.Errorf("%s: %d hand-offs on the page, %d in /debug/status", m.name, rows, len(g.Pod.Outstanding))
		}
		shot := filepath.Join(testenv.ArtifactDir(t), m.name+"-status.png")
		browser.Screenshot("http://"+m.httpAddr+"/status", shot, 1280, 1000)
		t.Logf("%s: events %q; screenshot %s", m.name, ev, shot)
	}
}
