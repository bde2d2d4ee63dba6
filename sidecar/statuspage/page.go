// Package statuspage renders the process's HTML status pages and the overlap timeline picture:
// pure functions from status values to HTML and SVG, no I/O of their own. The pages show what
// /debug/status serializes (plus each table's partitions, which maintenance samples with its
// gauges) and never a deletion request's predicate (promise 14).
package statuspage

import (
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/siglake/siglake/sidecar/commit"
	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/drain"
	"github.com/siglake/siglake/sidecar/maintain"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/retention"
)

// Report is what the pages show: the process's status report (sidecar.StatusReport) with its
// tables as a sorted list.
type Report struct {
	Node, Role, Version string
	StartedAt, Now      time.Time

	CatalogReady      bool
	CatalogError      string
	CatalogWriteError string
	CatalogID         string
	CatalogIDError    string

	Backlog drain.Backlog
	Tables  []Table // sorted by name
	Members []Member
	Owned   []string
	Errors  []Error // newest first
	Memory  *membudget.Snapshot
	// UncleanStop is set when this start found batches the previous run left in flight (it was
	// killed mid-batch).
	UncleanStop *drain.UncleanStop
	// GroupCommit is nil until the process published it.
	GroupCommit *GroupCommit
}

// Table is one table's state.
type Table struct {
	Name        string
	Owner       string
	OwnerSince  *time.Time
	Candidates  []string
	Owned       bool   // this process maintains it
	WriteError  string // why its last commit failed, if it did
	LastCommit  *drain.CommitReport
	Maintenance *maintain.State
	Deletes     *sweep.State
	Retention   *retention.State
}

// Member is one gossip member.
type Member struct {
	Name, Addr, State string
	Roles             []string
	Catalog           string
}

// Error is a recent error of a loop.
type Error struct {
	Time                  time.Time
	Stage, Table, Message string
}

// ErrNoTable: the table page of a table the report does not hold.
var ErrNoTable = errors.New("no such table in this process's status")

// Paths of the pages, below the listener's root.
const (
	IndexPath     = "/status"
	RingPath      = "/status/ring"
	TablePrefix   = "/status/table/"
	DeletionsPath = "/status/deletions"
)

// tableURL is the page of a table.
func tableURL(name string) string { return TablePrefix + url.PathEscape(name) }

//go:embed templates/*.html
var templateFS embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"bytes":    HumanBytes,
	"bytesInt": func(n int) string { return HumanBytes(int64(n)) },
	"ts":       func(t time.Time) string { return fmtTime(t) },
	"tsp": func(t *time.Time) string {
		if t == nil {
			return "–"
		}
		return fmtTime(*t)
	},
	"ago":      ago,
	"tableURL": tableURL,
	"levels":   levels,
	"svg":      func(p maintain.Partition) template.HTML { return template.HTML(partitionSVG(p)) },
	"join":     strings.Join,
	"secs":     func(s float64) string { return (time.Duration(s * float64(time.Second))).Round(time.Second).String() },
	"color":    levelColor,
	"pct": func(held, limit int64) int {
		if limit <= 0 {
			return 0
		}
		return int(min(100, held*100/limit))
	},
	"totalFiles": func(st *maintain.State) int {
		n := 0
		for _, c := range st.FilesPerLevel {
			n += c
		}
		return n
	},
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	},
	"since": func(t, now time.Time) string { return now.Sub(t).Round(time.Second).String() },
	// dur shows seconds that may be a fraction (an interval of 100ms) as a Go duration.
	"dur":       func(s float64) string { return time.Duration(s * float64(time.Second)).String() },
	"committed": func(outcome string) bool { return outcome == commit.CommitCommitted },
	"groupRows": groupRows,
	// groupRow is a table's group commit row for its page, nil when group commit is off.
	"groupRow": func(r Report, table string) *groupRow {
		if row, ok := groupRowOf(r, table); ok {
			return &row
		}
		return nil
	},
	"fallbacks": fallbacks,
}).ParseFS(templateFS, "templates/*.html"))

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// ago is how long before now t was, in words for a glance ("12s ago", "in 3m").
func ago(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + roundDur(-d)
	}
	return roundDur(d) + " ago"
}

func roundDur(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// level is a level's count and bytes for a table row.
type level struct {
	Name  string
	Files int
	Bytes int
}

func levels(st *maintain.State) []level {
	if st == nil {
		return nil
	}
	var out []level
	for name, n := range st.FilesPerLevel {
		out = append(out, level{name, n, st.BytesPerLevel[name]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

type pageData struct {
	Title string
	Nav   string
	R     Report
	T     *Table
	// Timeline is the table page's overlap timeline, drawn (and cached) apart from the template.
	Timeline template.HTML
}

// maxPagePartitions is how many partitions, newest first, the table page draws: a table with
// years of day partitions made a page of megabytes that took a second per request. The others
// get a summary line and a link each (?partition=NAME draws one).
const maxPagePartitions = 30

// timelineCache keeps drawn timelines by table, sample time and partition choice: they change
// only when maintenance samples the table again, while the page is asked for far more often.
var timelineCache = struct {
	sync.Mutex
	m map[timelineKey]template.HTML
}{m: map[timelineKey]template.HTML{}}

// timelineKey names one sample's drawing: the sample's partition list itself (each sample makes
// a new one; reports share it), so two samples at the same instant cannot be confused.
type timelineKey struct {
	table, partition string
	sampled          time.Time
	parts            *maintain.Partition
	n                int
}

// maxPartitionLinks bounds the links to older partitions (newest first), for the same reason.
const maxPartitionLinks = 100

// maxCachedTimelines bounds the cache; past it the cache starts over (a sample replaces every
// entry of its table anyway).
const maxCachedTimelines = 64

// timelineHTML draws st's partitions for the table page: only the partition named, when one is,
// else the newest maxPagePartitions and a summary of the rest. Partitions are in name order,
// which is time order for day partitions.
func timelineHTML(table string, st *maintain.State, only string) template.HTML {
	key := timelineKey{table: table, partition: only, sampled: st.SampledAt, n: len(st.Partitions)}
	if len(st.Partitions) > 0 {
		key.parts = &st.Partitions[0]
	}
	timelineCache.Lock()
	h, ok := timelineCache.m[key]
	timelineCache.Unlock()
	if ok {
		return h
	}
	var b strings.Builder
	parts := st.Partitions
	if only != "" {
		parts = nil
		for _, p := range st.Partitions {
			if p.Partition == only {
				parts = append(parts, p)
			}
		}
		fmt.Fprintf(&b, `<div class="mut">Partition %s only; <a href="%s">the newest partitions</a>.</div>`, template.HTMLEscapeString(only), tableURL(table))
		if len(parts) == 0 {
			b.WriteString(`<div class="empty">No such partition among the live files.</div>`)
		}
	} else if len(parts) == 0 {
		b.WriteString(`<div class="empty">No live files.</div>`)
	}
	var older []maintain.Partition
	if only == "" && len(parts) > maxPagePartitions {
		older, parts = parts[:len(parts)-maxPagePartitions], parts[len(parts)-maxPagePartitions:]
	}
	for i := len(parts) - 1; i >= 0; i-- {
		p := parts[i]
		fmt.Fprintf(&b, `<div class="partition" data-partition="%s" data-files="%d">%s</div>`,
			template.HTMLEscapeString(p.Partition), len(p.Files), partitionSVG(p))
	}
	if len(older) > 0 {
		files := 0
		for _, p := range older {
			for _, n := range p.FilesPerLevel {
				files += n
			}
		}
		fmt.Fprintf(&b, `<div id="older-partitions"><p>%d older partitions with %d live files are not drawn; draw one (add <code>?partition=NAME</code> for any):</p><div class="mono">`, len(older), files)
		for i := len(older) - 1; i >= max(0, len(older)-maxPartitionLinks); i-- {
			p := older[i]
			n := 0
			for _, c := range p.FilesPerLevel {
				n += c
			}
			fmt.Fprintf(&b, `<a href="%s?partition=%s">%s</a> (%d) `, tableURL(table), url.QueryEscape(p.Partition), template.HTMLEscapeString(p.Partition), n)
		}
		b.WriteString(`</div></div>`)
	}
	h = template.HTML(b.String())
	timelineCache.Lock()
	if len(timelineCache.m) >= maxCachedTimelines {
		clear(timelineCache.m)
	}
	timelineCache.m[key] = h
	timelineCache.Unlock()
	return h
}

func render(w io.Writer, name string, d pageData) error {
	return pages.ExecuteTemplate(w, name, d)
}

// Index renders the overview: the process, its tables, the WAL backlog and recent errors.
func Index(w io.Writer, r Report) error {
	return render(w, "index.html", pageData{Title: "siglake " + r.Node, Nav: "index", R: r})
}

// Ring renders the members and the table leases.
func Ring(w io.Writer, r Report) error {
	return render(w, "ring.html", pageData{Title: "members and leases", Nav: "ring", R: r})
}

// Deletions renders quarantine, set-aside files, pending deletions and retention of every table.
func Deletions(w io.Writer, r Report) error {
	return render(w, "deletions.html", pageData{Title: "quarantine, set-asides, deletions, retention", Nav: "deletions", R: r})
}

// tablePage renders one table: levels, overlap, work, the timeline of its newest partitions, its
// set-aside files, deletions and retention. ErrNoTable when r does not hold it.
func tablePage(w io.Writer, r Report, name string) error {
	return TablePartitionPage(w, r, name, "")
}

// TablePartitionPage is tablePage drawing only the timeline of partition ("" for the newest).
func TablePartitionPage(w io.Writer, r Report, name, partition string) error {
	for i := range r.Tables {
		if t := &r.Tables[i]; t.Name == name {
			d := pageData{Title: "table " + name, Nav: "table", R: r, T: t}
			if t.Maintenance != nil {
				d.Timeline = timelineHTML(name, t.Maintenance, partition)
			}
			return render(w, "table.html", d)
		}
	}
	return ErrNoTable
}

// HumanBytes renders a byte count in binary units for people.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
