package statuspage

import (
	"fmt"
	"html"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/siglake/siglake/sidecar/maintain"
)

// The timeline picture: one row per file (in time order), its time range as a bar coloured by
// level, the overlap depth over time beneath, and a time axis. Drawn by hand rather than with a
// template so the same bytes go inline into a page and into `siglake inspect --svg`; every text
// that comes from the lake goes through esc.

const (
	svgWidth   = 960
	svgLeft    = 10
	svgRight   = 10
	svgHeader  = 34 // title and legend
	depthH     = 36 // the overlap-depth strip
	axisH      = 26
	maxBarsH   = 480 // rows shrink to fit many files
	maxRowH    = 14.0
	minRowH    = 2.0
	svgFamily  = `font-family="system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif"`
	svgFont    = svgFamily + ` font-size="11"`
	colorOther = "#8a8f98"
)

// levelColors colour the levels; a level beyond them is grey.
var levelColors = map[string]string{"L0": "#e8833a", "L1": "#3b7dd8", "L2": "#2e9d5b"}

func levelColor(l string) string {
	if c, ok := levelColors[l]; ok {
		return c
	}
	return colorOther
}

// esc escapes s for SVG text and attributes; control characters other than tab and newline are
// not allowed in XML at all (html.EscapeString keeps them), so they become U+FFFD.
func esc(s string) string {
	return html.EscapeString(strings.Map(func(r rune) rune {
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f || r == 0xfffe || r == 0xffff {
			return '\uFFFD'
		}
		return r
	}, s))
}

// partitionSVG is one partition's timeline as a standalone <svg> element (inline in HTML, or a
// file of its own).
func partitionSVG(p maintain.Partition) string {
	body, h := partitionPanel(p)
	return fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">%s</svg>`,
		svgWidth, h, svgWidth, h, esc("overlap timeline of partition "+p.Partition), body)
}

// TimelineSVG is one SVG document with a panel per partition under a title: what
// `siglake inspect TABLE --svg FILE` writes.
func TimelineSVG(title string, parts []maintain.Partition) string {
	var b strings.Builder
	y := 30
	for _, p := range parts {
		body, h := partitionPanel(p)
		fmt.Fprintf(&b, `<svg x="0" y="%d" width="%d" height="%d">%s</svg>`, y, svgWidth, h, body)
		y += h + 16
	}
	if len(parts) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" %s fill="#555">no live files</text>`, svgLeft, y+14, svgFont)
		y += 24
	}
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d"><rect width="100%%" height="100%%" fill="#fff"/><text x="%d" y="20" %s font-size="15" font-weight="600" fill="#1d2430">%s</text>%s</svg>
`, svgWidth, y, svgWidth, y, svgLeft, svgFamily, esc(title), b.String())
}

// partitionPanel draws p; it returns the SVG body and its height.
func partitionPanel(p maintain.Partition) (string, int) {
	var b strings.Builder
	files := p.Files
	n := len(files)
	rowH := maxRowH
	if n > 0 && float64(n)*rowH > maxBarsH {
		rowH = max(minRowH, maxBarsH/float64(n))
	}
	barsH := int(float64(n)*rowH + 0.5)
	h := svgHeader + barsH + 8 + depthH + axisH
	if n == 0 {
		h = svgHeader + 24
	}
	fmt.Fprintf(&b, `<rect class="panel" x="0.5" y="0.5" width="%d" height="%d" rx="4" fill="#fbfcfd" stroke="#d8dde3"/>`, svgWidth-1, h-1)
	omitted := ""
	if p.Omitted > 0 {
		omitted = fmt.Sprintf(", %d more not drawn", p.Omitted)
	}
	fmt.Fprintf(&b, `<text x="%d" y="20" %s><tspan font-weight="600" font-size="13" fill="#1d2430">%s</tspan><tspan fill="#555" dx="10">%s%s · overlap depth %d in %d clusters · max generation %d · UTC</tspan></text>`,
		svgLeft, svgFont, esc(p.Partition), plural(n+p.Omitted, "file"), omitted, p.OverlapDepth, p.Clusters, p.MaxGeneration)
	legend(&b, files)
	if n == 0 {
		what := "no live files"
		if p.Omitted > 0 {
			what = "files not drawn here (the page keeps a bounded number per table): siglake inspect TABLE --svg FILE draws them all"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" %s fill="#555">%s</text>`, svgLeft, svgHeader+12, svgFont, what)
		return b.String(), h
	}
	lo, hi := files[0].Min, files[0].Max
	for _, f := range files {
		if f.Min.Before(lo) {
			lo = f.Min
		}
		if f.Max.After(hi) {
			hi = f.Max
		}
	}
	span := hi.Sub(lo)
	if span <= 0 { // one instant: give it a second so the bars have width
		lo, span = lo.Add(-500*time.Millisecond), time.Second
	}
	plotW := float64(svgWidth - svgLeft - svgRight)
	x := func(t time.Time) float64 { return svgLeft + float64(t.Sub(lo))/float64(span)*plotW }
	// Faint vertical grid at the ticks, under the bars.
	ticks, layout := axisTicks(lo, lo.Add(span))
	bottom := float64(svgHeader + barsH + 8 + depthH)
	for _, t := range ticks {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#e6e9ee"/>`, x(t), svgHeader, x(t), bottom)
	}
	b.WriteString(`<g class="files">`)
	for i, f := range files {
		x0, x1 := x(f.Min), x(f.Max)
		w := max(x1-x0, 2)
		y := float64(svgHeader) + float64(i)*rowH
		extra := ""
		if f.Late {
			extra = ` fill-opacity="0.35" stroke-dasharray="3,2"`
		}
		stroke := ""
		if rowH >= 6 {
			stroke = fmt.Sprintf(` stroke="%s"`, levelColor(f.Level))
		}
		fmt.Fprintf(&b, `<rect class="file" data-level="%s" data-gen="%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="1.5" fill="%s"%s%s><title>%s&#10;%s · generation %d%s · %d rows · %s&#10;%s → %s</title></rect>`,
			esc(f.Level), f.Generation, x0, y, w, max(rowH-1.5, 1), levelColor(f.Level), stroke, extra,
			esc(path.Base(f.Path)), esc(f.Level), f.Generation, lateNote(f.Late), f.Rows, HumanBytes(f.Bytes),
			f.Min.Format("2006-01-02 15:04:05.000"), f.Max.Format("15:04:05.000 MST"))
	}
	b.WriteString(`</g>`)
	// The generation inside bars wide and tall enough to hold it: colour says the level, the
	// label how many rewrites the rows went through.
	if rowH >= 12 {
		for i, f := range files {
			x0, x1 := x(f.Min), x(f.Max)
			if x1-x0 >= 28 {
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" %s font-size="9.5" fill="#fff" pointer-events="none">g%d</text>`,
					x0+4, float64(svgHeader)+float64(i)*rowH+rowH-4.5, svgFamily, f.Generation)
			}
		}
	}
	depthStrip(&b, files, x, float64(svgHeader+barsH+8), p.OverlapDepth)
	// Axis.
	fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#8a8f98"/>`, svgLeft, bottom, svgWidth-svgRight, bottom)
	for i, t := range ticks {
		anchor := "middle" // labels at the panel's edges stay inside it
		switch {
		case i == 0 && x(t) < svgLeft+30:
			anchor = "start"
		case x(t) > svgWidth-svgRight-30:
			anchor = "end"
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#8a8f98"/><text x="%.1f" y="%.1f" %s fill="#444" text-anchor="%s">%s</text>`,
			x(t), bottom, x(t), bottom+4, x(t), bottom+16, svgFont, anchor, t.Format(layout))
	}
	return b.String(), h
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func lateNote(late bool) string {
	if late {
		return " · late"
	}
	return ""
}

// legend draws the colours of the levels present, and the late marking, at the header's right.
func legend(b *strings.Builder, files []maintain.PartitionFile) {
	seen := map[string]bool{}
	late := false
	for _, f := range files {
		seen[f.Level] = true
		late = late || f.Late
	}
	var levels []string
	for l := range seen {
		levels = append(levels, l)
	}
	sort.Strings(levels)
	xr := svgWidth - svgRight
	items := levels
	if late {
		items = append(items, "late")
	}
	for i := len(items) - 1; i >= 0; i-- {
		label := items[i]
		xr -= 7*len(label) + 22
		if label == "late" {
			fmt.Fprintf(b, `<rect x="%d" y="11" width="12" height="10" fill="#8a8f98" fill-opacity="0.35" stroke="#8a8f98" stroke-dasharray="3,2"/>`, xr)
		} else {
			fmt.Fprintf(b, `<rect x="%d" y="11" width="12" height="10" rx="1.5" fill="%s"/>`, xr, levelColor(label))
		}
		fmt.Fprintf(b, `<text x="%d" y="20" %s fill="#444">%s</text>`, xr+16, svgFont, esc(label))
	}
}

// depthStrip draws how many files cover each instant (the partition's overlap depth over time)
// as a step area: where it rises is where a rewrite is due.
func depthStrip(b *strings.Builder, files []maintain.PartitionFile, x func(time.Time) float64, top float64, depth int) {
	type ev struct {
		t time.Time
		d int
	}
	evs := make([]ev, 0, 2*len(files))
	for _, f := range files {
		// Inclusive bounds: a file covers its max instant, so it ends just after it.
		evs = append(evs, ev{f.Min, 1}, ev{f.Max.Add(time.Microsecond), -1})
	}
	sort.Slice(evs, func(i, j int) bool {
		if !evs[i].t.Equal(evs[j].t) {
			return evs[i].t.Before(evs[j].t)
		}
		return evs[i].d < evs[j].d
	})
	peak := max(depth, 1)
	scale := float64(depthH-14) / float64(peak) // room above for the label
	base := top + depthH
	var pts strings.Builder
	cur := 0
	fmt.Fprintf(&pts, "%.1f,%.1f", x(evs[0].t), base)
	for _, e := range evs {
		px := x(e.t)
		fmt.Fprintf(&pts, " %.1f,%.1f", px, base-float64(cur)*scale)
		cur += e.d
		fmt.Fprintf(&pts, " %.1f,%.1f", px, base-float64(cur)*scale)
	}
	fmt.Fprintf(b, `<polygon class="depth" points="%s" fill="#9aa5b1" fill-opacity="0.55" stroke="#6b7785" stroke-width="1"/>`, pts.String())
	fmt.Fprintf(b, `<text x="%d" y="%.1f" %s font-size="10" fill="#555">overlap depth (max %d)</text>`, svgLeft+2, top+9, svgFamily, depth)
}

// axisTicks picks round tick times between lo and hi (at most about 10) and a layout for them.
func axisTicks(lo, hi time.Time) ([]time.Time, string) {
	steps := []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 48 * time.Hour, 7 * 24 * time.Hour}
	span := hi.Sub(lo)
	step := steps[len(steps)-1]
	for _, s := range steps {
		if span/s <= 10 {
			step = s
			break
		}
	}
	layout := "15:04"
	switch {
	case step < time.Minute:
		layout = "15:04:05"
	case step >= 24*time.Hour:
		layout = "Jan 2"
	case span >= 24*time.Hour:
		layout = "Jan 2 15:04"
	}
	var out []time.Time
	for t := lo.Truncate(step); !t.After(hi) && len(out) < 64; t = t.Add(step) {
		if !t.Before(lo) {
			out = append(out, t)
		}
	}
	return out, layout
}
