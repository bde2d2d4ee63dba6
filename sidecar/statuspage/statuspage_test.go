package statuspage

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/commit"
	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/drain"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/maintain"
	"github.com/siglake/siglake/sidecar/plan"
	planlevel "github.com/siglake/siglake/sidecar/plan/level"
	"github.com/siglake/siglake/sidecar/retention"
)

var t0 = time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)

// partition builds a partition through maintain.Partitions, as the maintenance loop does.
func partition(t *testing.T, name string, files []planlevel.File) maintain.Partition {
	t.Helper()
	for i := range files {
		files[i].Partition = name
	}
	parts := maintain.Partitions(files, plan.DefaultConfig())
	if len(parts) != 1 {
		t.Fatalf("%d partitions, want 1", len(parts))
	}
	return parts[0]
}

func span(path string, from, to time.Duration, gen int, size int64) planlevel.File {
	return planlevel.File{Path: path, SizeBytes: size, Generation: gen, Rows: 100,
		MinTime: t0.Add(from).UnixMicro(), MaxTime: t0.Add(to).UnixMicro()}
}

var fileRect = regexp.MustCompile(`<rect class="file" data-level="([^"]*)" data-gen="(\d+)" x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)"`)

// TestTimelineShapesMatchFiles: one bar per file, with the file's level and generation, placed
// and sized by its time range on the partition's axis; the whole picture is well-formed XML.
func TestTimelineShapesMatchFiles(t *testing.T) {
	cfg := plan.DefaultConfig()
	files := []planlevel.File{
		span("a.parquet", 0, 10*time.Minute, 0, 1<<20),
		span("b.parquet", 5*time.Minute, 15*time.Minute, 1, cfg.L1MinBytes),
		span("c.parquet", 20*time.Minute, 40*time.Minute, 2, cfg.L2MinBytes),
	}
	files[2].Late = true
	p := partition(t, "2026-12-03", files)
	svg := partitionSVG(p)
	m := fileRect.FindAllStringSubmatch(svg, -1)
	if len(m) != len(files) {
		t.Fatalf("%d file shapes, want %d:\n%s", len(m), len(files), svg)
	}
	var xs, ws []float64
	for i, want := range []struct {
		level string
		gen   int
	}{{"L0", 0}, {"L1", 1}, {"L2", 2}} {
		if m[i][1] != want.level || m[i][2] != fmt.Sprint(want.gen) {
			t.Errorf("shape %d: level %s generation %s, want %s %d", i, m[i][1], m[i][2], want.level, want.gen)
		}
		var x, w float64
		fmt.Sscan(m[i][3], &x)
		fmt.Sscan(m[i][4], &w)
		xs, ws = append(xs, x), append(ws, w)
	}
	// a spans 10 of 40 minutes, b 10 starting at 5, c 20 starting at 20: proportional on one axis.
	plotW := float64(svgWidth - svgLeft - svgRight)
	near := func(got, want float64) bool { return got > want-0.2 && got < want+0.2 }
	if !near(xs[0], svgLeft) || !near(xs[1], svgLeft+plotW/8) || !near(xs[2], svgLeft+plotW/2) ||
		!near(ws[0], plotW/4) || !near(ws[1], plotW/4) || !near(ws[2], plotW/2) {
		t.Errorf("bars at x %v widths %v; want them on a 40-minute axis of %.0f px", xs, ws, plotW)
	}
	if !strings.Contains(svg, "overlap depth 2 in 2 clusters") {
		t.Errorf("the panel does not state depth and clusters from maintain.Partitions:\n%s", svg)
	}
	doc := TimelineSVG("siglake.events", []maintain.Partition{p, partition(t, "2026-12-04", []planlevel.File{span("d.parquet", 0, time.Hour, 0, 1)})})
	if n := len(fileRect.FindAllString(doc, -1)); n != 4 {
		t.Errorf("the document has %d file shapes, want 4", n)
	}
	if err := wellFormed(doc); err != nil {
		t.Errorf("TimelineSVG is not well-formed XML: %v", err)
	}
}

// TestTimelineCapsAndEmpty: a partition whose files were capped says how many are not drawn; an
// empty one and a partition whose files all share one instant still draw.
func TestTimelineCapsAndEmpty(t *testing.T) {
	p := partition(t, "p", []planlevel.File{span("a", 0, 0, 0, 1), span("b", 0, 0, 0, 1)})
	p.Omitted = 7
	svg := partitionSVG(p)
	if !strings.Contains(svg, "9 files, 7 more not drawn") || len(fileRect.FindAllString(svg, -1)) != 2 {
		t.Errorf("capped partition:\n%s", svg)
	}
	if strings.Contains(svg, "NaN") || strings.Contains(svg, "Inf") {
		t.Errorf("a zero-length range draws NaN or Inf:\n%s", svg)
	}
	if none := partitionSVG(maintain.Partition{Partition: "q", Omitted: 3}); !strings.Contains(none, "3 files, 3 more not drawn") || strings.Contains(none, "no live files") {
		t.Errorf("a partition whose files were all left out says it has none:\n%s", none)
	}
	empty := TimelineSVG("t", nil)
	if !strings.Contains(empty, "no live files") || wellFormed(empty) != nil {
		t.Errorf("empty timeline: %s", empty)
	}
}

// TestPagesEscapeHostileValues: table names, file paths, member names, causes and error messages
// are text, never markup, on every page and in the standalone SVG.
func TestPagesEscapeHostileValues(t *testing.T) {
	const evil = `<script>alert(1)</script><img src=x onerror=alert(2)>"'&`
	p := partition(t, "2026-12-03"+evil, []planlevel.File{span("s3://lake/"+evil+".parquet", 0, time.Minute, 0, 1)})
	now := t0.Add(time.Hour)
	r := Report{Node: "pod" + evil, Role: "all", Version: evil, StartedAt: t0, Now: now, CatalogReady: true, CatalogID: evil,
		Members: []Member{{Name: evil, Addr: evil, State: "alive", Roles: []string{evil}, Catalog: evil}},
		Errors:  []Error{{Time: t0, Stage: evil, Table: evil, Message: evil}},
		Tables: []Table{{Name: evil, Owner: evil, Owned: true, Candidates: []string{evil}, WriteError: evil,
			Maintenance: &maintain.State{SampledAt: t0, FilesPerLevel: map[string]int{"L0": 1}, BytesPerLevel: map[string]int{"L0": 1},
				Partitions: []maintain.Partition{p}, RecentRewrites: []maintain.RecentRewrite{{Time: t0, BinReport: maintain.BinReport{Kind: evil, Partition: evil, Path: evil, Reason: evil}}}, Skipped: []lake.Skipped{{Path: evil, Class: "corrupt", Cause: evil, At: t0, Failures: 2, Kind: evil}},
				LastPass: &maintain.PassReport{Time: t0, Decision: evil, Bins: []maintain.BinReport{{Kind: evil, Partition: evil, Reason: evil, Result: evil}}, Skipped: []string{evil}}},
			Deletes:   &sweep.State{CancelPeriod: evil, Pending: []sweep.PendingRequest{{ID: evil, Table: evil, State: evil, CreatedAt: t0, ExecuteAt: now}}},
			Retention: &retention.State{Policy: evil, Invalid: evil, Pending: []retention.PendingView{{ID: evil, Waiting: evil}}}}},
		GroupCommit: &GroupCommit{Enabled: true, IntervalSeconds: 1,
			Committer: &commit.CommitterStatus{Tables: []commit.CommitterTable{{Table: evil, Members: []commit.MemberHeard{{Name: evil}},
				LastCommit: &commit.LastCommit{Time: t0, Outcome: evil}}, {Table: evil + "2"}}},
			Pod: &commit.ClientStatus{Fallbacks: map[string]int64{evil: 1},
				Outstanding: []commit.Outstanding{{ID: evil, Table: evil, Stream: evil, First: evil, Last: evil, To: evil, Since: t0, LastAnswer: evil}}}},
	}
	pages := map[string]func(io.Writer) error{
		"index":     func(w io.Writer) error { return Index(w, r) },
		"ring":      func(w io.Writer) error { return Ring(w, r) },
		"deletions": func(w io.Writer) error { return Deletions(w, r) },
		"table":     func(w io.Writer) error { return tablePage(w, r, evil) },
	}
	for name, render := range pages {
		var b bytes.Buffer
		if err := render(&b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		page := b.String()
		for _, raw := range []string{"<script>alert", "<img src=x", "onerror=alert(2)>"} {
			if strings.Contains(page, raw) {
				t.Errorf("%s page carries %q unescaped", name, raw)
			}
		}
		if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s page does not show the hostile value as text", name)
		}
		if strings.Contains(page, "<script") {
			t.Errorf("%s page has a script element: the pages need no JavaScript", name)
		}
	}
	// The group commit section shows every value above as text, once escaped: two rows' table and
	// committer (this node), the outcome, the pod heard, the fallback's reason and the hand-off's
	// id, table, stream, range ends, member and answer.
	index := indexPage(t, r)
	section := index[strings.Index(index, `<div id="group-commit"`):strings.Index(index, "<h2>Recent errors")]
	if got := strings.Count(text(section), evil); got != 14 {
		t.Errorf("the group commit section shows the hostile value %d times, want 14:\n%s", got, section)
	}
	off := r
	off.GroupCommit = &GroupCommit{DisabledReason: evil}
	if page := indexPage(t, off); strings.Contains(page, "<script") || !strings.Contains(page, `<span id="group-commit-off">&lt;script&gt;`) {
		t.Errorf("the reason group commit is off is not shown as text")
	}
	var b bytes.Buffer
	if err := tablePage(&b, r, evil); err != nil {
		t.Fatal(err)
	}
	if n := len(fileRect.FindAllString(b.String(), -1)); n != 1 {
		t.Errorf("the table page draws %d file shapes, want 1", n)
	}
	// The link to the table's page escapes its name as a path segment.
	if !strings.Contains(indexPage(t, r), `href="/status/table/%3Cscript%3Ealert%281%29%3C%2Fscript%3E%3Cimg%20src=x%20onerror=alert%282%29%3E%22%27&amp;"`) {
		t.Errorf("the table link is not a path-escaped URL:\n%s", indexPage(t, r))
	}
	svg := TimelineSVG(evil, []maintain.Partition{p})
	if strings.Contains(svg, "<script") || strings.Contains(svg, "<img") || wellFormed(svg) != nil {
		t.Errorf("the standalone SVG carries markup from its input or is not well-formed: %v\n%s", wellFormed(svg), svg)
	}
}

func indexPage(t *testing.T, r Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := Index(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestPagesOfAnEmptyProcess: a process that has seen no table, member or error yet renders every
// page, saying so; an unknown table is ErrNoTable.
func TestPagesOfAnEmptyProcess(t *testing.T) {
	r := Report{Node: "n", Role: "drain", Version: "v", StartedAt: t0, Now: t0}
	for name, render := range map[string]func(io.Writer, Report) error{"index": Index, "ring": Ring, "deletions": Deletions} {
		var b bytes.Buffer
		if err := render(&b, r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(b.String(), "No tables yet") {
			t.Errorf("%s page of an empty process does not say there are no tables", name)
		}
	}
	if err := tablePage(io.Discard, r, "events"); !errors.Is(err, ErrNoTable) {
		t.Errorf("unknown table: %v, want ErrNoTable", err)
	}
	// A table seen only by the drain (not maintained here) renders without maintenance state.
	r.Tables = []Table{{Name: "events"}}
	var b bytes.Buffer
	if err := tablePage(&b, r, "events"); err != nil || !strings.Contains(b.String(), "does not maintain this table") {
		t.Errorf("drain-only table page: %v\n%s", err, b.String())
	}
}

// wellFormed parses s as XML to its end; a repeated attribute, which encoding/xml lets through
// but browsers refuse in an SVG document, is an error too.
func wellFormed(s string) error {
	d := xml.NewDecoder(strings.NewReader(s))
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

// TestIndexShowsUncleanStop: the overview page says the previous run was killed mid-batch, with
// the batches and the files left for gc; a clean start shows nothing of it.
func TestIndexShowsUncleanStop(t *testing.T) {
	r := Report{Node: "n", Role: "all", Version: "v", StartedAt: t0, Now: t0}
	var b bytes.Buffer
	if err := Index(&b, r); err != nil || strings.Contains(b.String(), "unclean-stop") {
		t.Fatalf("clean start: %v\n%s", err, b.String())
	}
	r.UncleanStop = &drain.UncleanStop{DetectedAt: t0, LeftForGC: 2, Batches: []drain.InterruptedBatch{{Table: "audit_x", Dir: "wal", Started: t0, FilesWritten: 2, LeftForGC: 2}}}
	b.Reset()
	if err := Index(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="unclean-stop"`, "previous run killed mid-batch", "<td>audit_x</td>", "2 data file(s) they wrote were not committed"} {
		if !strings.Contains(b.String(), want) {
			t.Fatalf("index page lacks %q:\n%s", want, b.String())
		}
	}
}

// TestTablePageBoundsPartitions: a table of 10,000 day partitions draws only the newest
// maxPagePartitions, newest first, and a summary line with a link for each other one, so the page
// stays small; ?partition= draws just that one.
func TestTablePageBoundsPartitions(t *testing.T) {
	var files []planlevel.File
	for i := 0; i < 10000; i++ {
		f := span(fmt.Sprintf("f%05d.parquet", i), 0, time.Minute, 0, 1<<20)
		f.Partition = fmt.Sprintf("p%05d", i)
		files = append(files, f)
	}
	parts := maintain.Partitions(files, plan.DefaultConfig())
	if len(parts) != 10000 {
		t.Fatalf("%d partitions", len(parts))
	}
	r := Report{Node: "n", Now: t0, Tables: []Table{{Name: "events", Owned: true,
		Maintenance: &maintain.State{SampledAt: t0, Partitions: parts, FilesPerLevel: map[string]int{"L0": 10000}}}}}
	var b bytes.Buffer
	if err := tablePage(&b, r, "events"); err != nil {
		t.Fatal(err)
	}
	drawn := regexp.MustCompile(`class="partition" data-partition="(p\d+)"`).FindAllStringSubmatch(b.String(), -1)
	if len(drawn) != maxPagePartitions || drawn[0][1] != "p09999" || drawn[len(drawn)-1][1] != "p09970" {
		t.Fatalf("drew %d partitions (first %v), want the newest %d newest first", len(drawn), drawn[:min(len(drawn), 1)], maxPagePartitions)
	}
	if !strings.Contains(b.String(), "9970 older partitions with 9970 live files are not drawn") {
		t.Fatalf("no summary of the older partitions")
	}
	t.Logf("page of %d bytes for 10000 partitions", b.Len())
	if b.Len() > 256<<10 {
		t.Fatalf("page of %d bytes, want at most 256 KiB", b.Len())
	}

	b.Reset()
	if err := TablePartitionPage(&b, r, "events", "p00042"); err != nil {
		t.Fatal(err)
	}
	drawn = regexp.MustCompile(`class="partition" data-partition="(p\d+)"`).FindAllStringSubmatch(b.String(), -1)
	if len(drawn) != 1 || drawn[0][1] != "p00042" {
		t.Fatalf("?partition=p00042 drew %v", drawn)
	}
}

// TestTimelineSVGWithControlCharacters: a control character in a table or partition name (which
// html.EscapeString keeps) still makes a well-formed standalone SVG.
func TestTimelineSVGWithControlCharacters(t *testing.T) {
	p := partition(t, "day\x01\x1b", []planlevel.File{span("a.parquet", 0, time.Minute, 0, 1<<20)})
	doc := TimelineSVG("table ev\x00ents\x07", []maintain.Partition{p})
	var v struct{}
	if err := xml.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	if err := wellFormed(doc); err != nil {
		t.Fatal(err)
	}
}
