package e2e

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/test/testenv"
)

// pagesSecret is the value of a deletion request's predicate: what an erasure exists to remove,
// so no page may show it (DESIGN.md promise 14).
const pagesSecret = "pages-secret-4711"

var (
	domTableRow  = regexp.MustCompile(`<tr class="table-row" data-table="([^"]*)"`)
	domPartition = regexp.MustCompile(`<div class="partition" data-partition="([^"]*)" data-files="(\d+)"`)
	domLiveFiles = regexp.MustCompile(`id="live-files">(\d+)<`)
	domFileShape = regexp.MustCompile(`<rect class="file" data-level="(L\d)" data-gen="(\d+)"`)
)

// TestStatusPagesInChromium: `siglake compactor` (the real binary, gossip on, one member) on a
// small lake that rewrites have levelled, plus fresh generation-0 files and a pending deletion
// request. Headless Chromium loads the HTML status pages, and what they show is checked against
// /debug/status and the lake: the tables, the member and the table's lease, the live files per
// level and the recent rewrites, one SVG shape per live file of each partition, the request's id
// without its predicate value. Screenshots are kept under $SIGLAKE_TEST_ARTIFACTS (default: the test's temp dir).
// `siglake inspect events --svg` then draws the same files.
func TestStatusPagesInChromium(t *testing.T) {
	browser := testenv.Chromium(t)
	s := newSite(t)
	start := time.Now().UTC().Truncate(24 * time.Hour).Add(-15 * time.Hour).Format(time.RFC3339)
	for seed := 1; seed <= 2; seed++ {
		s.walgen("pod-0", 4000, seed, "--start", start)
		s.drainEach()
	}
	cmd := exec.Command(bin, "delete-request", "--catalog", s.catalog, "--warehouse", s.warehouse,
		"--table", "events", "--where", "service="+pagesSecret, "--reason", "TICKET-35", "--json")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("delete-request: %v", err)
	}
	var req deletes.Request
	if err := json.Unmarshal(out, &req); err != nil || req.ID == "" {
		t.Fatalf("delete-request printed %q (%v)", out, err)
	}

	gossipAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	c := s.start(nil, "--node-name", "pod-pages", "--gossip-bind", gossipAddr, "--gossip-settle-secs", "1",
		"--recluster-interval-secs", "1")
	// Rewrites level the overlapping generation-0 files; then a few new ones arrive (fewer than a
	// level rewrite waits for), so the picture holds two generations.
	waitFor(t, 2*time.Minute, "a rewrite (a file of generation 1 or more)", func() bool {
		_, files := s.table("events")
		for _, f := range files {
			if f.Generation > 0 {
				return true
			}
		}
		return false
	})
	s.walgen("pod-0", 800, 9, "--start", start)
	c.waitDrained(time.Minute)
	base := "http://" + c.addr

	var rep sidecar.StatusReport
	var tablePage string
	// The pages and /debug/status are read at different moments: retry until a reading of the
	// status before and after the page agree on the table's files.
	for attempt := 0; ; attempt++ {
		before := mustStatus(t, c.addr)
		tablePage = browser.DumpDOM(base + "/status/table/events")
		rep = mustStatus(t, c.addr)
		if sampled(before) == sampled(rep) && sampled(rep) != "" {
			break
		}
		if attempt == 20 {
			t.Fatalf("the table's state kept changing: %s then %s", sampled(before), sampled(rep))
		}
		time.Sleep(500 * time.Millisecond)
	}
	ev := rep.Tables["events"]
	if ev == nil || ev.Maintenance == nil {
		t.Fatalf("/debug/status has no maintenance state of events: %+v", rep.Tables)
	}
	live := 0
	for _, n := range ev.Maintenance.FilesPerLevel {
		live += n
	}
	if m := domLiveFiles.FindStringSubmatch(tablePage); m == nil || m[1] != fmt.Sprint(live) {
		t.Errorf("the table page shows %v live files; /debug/status %d (%v)", m, live, ev.Maintenance.FilesPerLevel)
	}
	for level, n := range ev.Maintenance.FilesPerLevel {
		row := regexp.MustCompile(`<tr class="level" data-level="` + level + `">.*?<td class="n">(\d+)</td>`).FindStringSubmatch(tablePage)
		if row == nil || row[1] != fmt.Sprint(n) {
			t.Errorf("level %s: the page shows %v files, /debug/status %d", level, row, n)
		}
	}
	// One shape per live file in each partition's picture, with the file's level; the lake agrees.
	_, files := s.table("events")
	lakeParts := map[string]int{}
	gens := map[int]bool{}
	for _, f := range files {
		lakeParts[f.Partition]++
		gens[f.Generation] = true
	}
	shown := shapesPerPartition(t, tablePage)
	total := 0
	for p, n := range shown {
		total += n
		if lakeParts[p] != n {
			t.Errorf("partition %s: %d shapes on the page, %d live files in the lake", p, n, lakeParts[p])
		}
	}
	if total != live || len(shown) != len(lakeParts) {
		t.Errorf("the pictures draw %d files in %d partitions; /debug/status counts %d live files, the lake %d partitions", total, len(shown), live, len(lakeParts))
	}
	if len(gens) < 2 {
		t.Errorf("setup: the live files have generations %v, want at least two", gens)
	}
	if got := strings.Count(tablePage, `<tr class="recent-rewrite">`); got == 0 || got != len(ev.Maintenance.RecentRewrites) {
		t.Errorf("the table page lists %d recent rewrites; /debug/status %d (want at least the one awaited)", got, len(ev.Maintenance.RecentRewrites))
	}
	if strings.Contains(tablePage, "<script") {
		t.Error("the table page has a script element; the pages need no JavaScript")
	}

	// The index: every table of the status, and the links to the machine-readable endpoints.
	for _, path := range []string{"/", "/status"} {
		index := browser.DumpDOM(base + path)
		var names []string
		for _, m := range domTableRow.FindAllStringSubmatch(index, -1) {
			names = append(names, m[1])
		}
		var want []string
		for name := range rep.Tables {
			want = append(want, name)
		}
		sort.Strings(want)
		if strings.Join(names, ",") != strings.Join(want, ",") {
			t.Errorf("%s lists tables %v; /debug/status has %v", path, names, want)
		}
		// Group commit is off (gossip without a key): the section gives /debug/status's reason.
		if g := rep.GroupCommit; g == nil || g.Enabled || !strings.Contains(index, `<span id="group-commit-off">`+g.DisabledReason+`</span>`) {
			t.Errorf("%s does not show why group commit is off; /debug/status: %+v", path, g)
		}
		for _, link := range []string{`href="/metrics"`, `href="/debug/status"`, `href="/status/ring"`, `href="/status/deletions"`, `href="/status/table/events"`} {
			if !strings.Contains(index, link) {
				t.Errorf("%s has no link %s", path, link)
			}
		}
	}

	// Members and leases.
	ring := browser.DumpDOM(base + "/status/ring")
	if len(rep.Members) != 1 || strings.Count(ring, `<tr class="member">`) != len(rep.Members) || !strings.Contains(ring, rep.Members[0].Name) {
		t.Errorf("the ring page shows %d member rows; /debug/status has members %+v", strings.Count(ring, `<tr class="member">`), rep.Members)
	}
	lease := regexp.MustCompile(`(?s)<tr class="lease"><td><a href="/status/table/events">events</a></td>\s*<td>([^<]*)`).FindStringSubmatch(ring)
	if ev.Owner == "" || lease == nil || strings.TrimSpace(lease[1]) != ev.Owner {
		t.Errorf("the lease of events on the ring page: %v; /debug/status: owner %q", lease, ev.Owner)
	}

	// The pending deletion: its id and state, never its predicate's value.
	deletions := browser.DumpDOM(base + "/status/deletions")
	if ev.Deletes == nil || len(ev.Deletes.Pending) != 1 || ev.Deletes.Pending[0].ID != req.ID {
		t.Fatalf("/debug/status shows deletion requests %+v, want %s", ev.Deletes, req.ID)
	}
	if !strings.Contains(deletions, `data-id="`+req.ID+`"`) || !strings.Contains(tablePage, `data-id="`+req.ID+`"`) {
		t.Errorf("the pending request %s is not on the deletions and table pages", req.ID)
	}
	for name, page := range map[string]string{"deletions": deletions, "table": tablePage, "ring": ring} {
		if strings.Contains(page, pagesSecret) {
			t.Errorf("the %s page shows the deletion predicate's value", name)
		}
	}

	dir := testenv.ArtifactDir(t)
	for _, p := range []struct{ path, file string }{{"/status/table/events", "status-table-events.png"}, {"/status", "status-index.png"}} {
		f := filepath.Join(dir, p.file)
		browser.Screenshot(base+p.path, f, 1280, 1400)
		if b, err := os.ReadFile(f); err != nil || !strings.HasPrefix(string(b), "\x89PNG") {
			t.Errorf("screenshot %s is not a PNG (%v)", f, err)
		}
		t.Logf("screenshot of %s: %s", p.path, f)
	}
	c.stop()

	// `siglake inspect --svg` draws the same picture from the lake: a shape per live file.
	svgFile := filepath.Join(dir, "events-timeline.svg")
	var inspected struct {
		Partitions []struct {
			Partition string            `json:"partition"`
			Files     []json.RawMessage `json:"files"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(s.siglake("inspect", "events", "--json", "--svg", svgFile)), &inspected); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(svgFile)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, p := range inspected.Partitions {
		want += len(p.Files)
	}
	if got := len(domFileShape.FindAll(svg, -1)); got != want || want != len(files) {
		t.Errorf("inspect --svg draws %d files; inspect --json lists %d, the lake %d", got, want, len(files))
	}
	if err := xmlWellFormed(svg); err != nil {
		t.Errorf("inspect --svg wrote malformed XML: %v", err)
	}
	// A browser opens the file as an SVG document (it refuses what XML parsers let through).
	if dom := browser.DumpDOM("file://" + svgFile); strings.Contains(dom, "parsererror") || len(domFileShape.FindAllString(dom, -1)) != want {
		t.Errorf("Chromium does not draw inspect --svg's %d files:\n%s", want, tail(dom, 2000))
	}
	t.Logf("timeline picture: %s", svgFile)
}

func mustStatus(t *testing.T, addr string) sidecar.StatusReport {
	t.Helper()
	r, err := status(addr)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sampled is the events table's live files per level as last sampled ("" before a sample).
func sampled(r sidecar.StatusReport) string {
	ev := r.Tables["events"]
	if ev == nil || ev.Maintenance == nil {
		return ""
	}
	return fmt.Sprint(ev.Maintenance.FilesPerLevel)
}

// shapesPerPartition counts the file shapes in each partition's picture of a table page, and
// checks each picture draws as many as its partition says.
func shapesPerPartition(t *testing.T, page string) map[string]int {
	t.Helper()
	out := map[string]int{}
	locs := domPartition.FindAllStringSubmatchIndex(page, -1)
	if len(locs) == 0 {
		t.Fatalf("no partition pictures on the table page")
	}
	for i, loc := range locs {
		end := len(page)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		chunk := page[loc[0]:end]
		name, want := page[loc[2]:loc[3]], page[loc[4]:loc[5]]
		if !strings.Contains(chunk, "<svg") {
			t.Errorf("partition %s has no SVG", name)
		}
		n := len(domFileShape.FindAllString(chunk, -1))
		if fmt.Sprint(n) != want {
			t.Errorf("partition %s: %d shapes, its picture says %s files", name, n, want)
		}
		out[name] = n
	}
	return out
}

// xmlWellFormed parses b as XML to its end; a repeated attribute, which encoding/xml lets
// through but browsers refuse in an SVG document, is an error too.
func xmlWellFormed(b []byte) error {
	d := xml.NewDecoder(strings.NewReader(string(b)))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if el, ok := tok.(xml.StartElement); ok {
			seen := map[xml.Name]bool{}
			for _, a := range el.Attr {
				if seen[a.Name] {
					return fmt.Errorf("<%s> repeats attribute %s", el.Name.Local, a.Name.Local)
				}
				seen[a.Name] = true
			}
		}
	}
}
