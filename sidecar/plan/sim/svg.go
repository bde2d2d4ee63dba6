package sim

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"time"
)

// Layout of the SVG WriteSVG draws, in pixels.
const (
	svgWidth, svgPanelH   = 900, 240
	svgLeft, svgRight     = 70, 20
	svgGap, svgBottom     = 50, 40
	svgPlotW              = svgWidth - svgLeft - svgRight
	svgLegendRow, svgFont = 16, 12
	svgTitleFont, maxTick = 14, 6
)

// svgPalette colours the results' lines in order.
var svgPalette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}

// svgPanel is one chart of WriteSVG: a value over time, one line per result.
type svgPanel struct {
	label string
	value func(Sample) float64
	// dashed, when set, is drawn too, dashed, on the same axis.
	dashed func(Sample) float64
}

// WriteSVG draws overlap depth (top) and live file count (bottom) over
// simulated time, one line per result, as a self-contained SVG.
func WriteSVG(w io.Writer, results ...Result) error {
	// The legend sits between the title and the first panel.
	top := 58 + len(results)*svgLegendRow
	height := top + 2*svgPanelH + svgGap + svgBottom
	var span time.Duration
	for _, r := range results {
		span = max(span, r.Duration)
	}
	if span <= 0 {
		span = time.Hour
	}
	var names []string
	for _, r := range results {
		names = append(names, r.Scenario)
	}

	b := bufio.NewWriter(w)
	writeSVGTitle(b, height, names)
	panels := []svgPanel{
		{"overlap depth, max over partitions (dashed: settled depth, files older than the settle age)",
			func(s Sample) float64 { return float64(s.Depth) },
			func(s Sample) float64 { return float64(s.SettledDepth) }},
		{"live data files", func(s Sample) float64 { return float64(s.Files) }, nil},
	}
	for pi, panel := range panels {
		writeSVGPanel(b, panel, top+pi*(svgPanelH+svgGap), span.Hours(), results)
	}
	writeSVGLegend(b, results, len(uniqueStrings(names)) > 1)
	fmt.Fprintf(b, "</svg>\n")
	return b.Flush()
}

// writeSVGTitle opens the document and writes its title, which names the scenarios.
func writeSVGTitle(b io.Writer, height int, names []string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="%d">`+"\n",
		svgWidth, height, svgWidth, height, svgFont)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	title := "siglake compaction simulation"
	if len(names) > 0 {
		title += ": " + uniqueJoin(names)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="%d" font-weight="bold">%s</text>`+"\n", svgLeft, 22, svgTitleFont, html.EscapeString(title))
}

// writeSVGPanel draws one panel whose top is at y0: its grid, axes and one
// line per result over hours of simulated time.
func writeSVGPanel(b io.Writer, panel svgPanel, y0 int, hours float64, results []Result) {
	ymax := 1.0
	for _, r := range results {
		for _, s := range r.Samples {
			ymax = math.Max(ymax, panel.value(s))
		}
	}
	step := niceStep(ymax / maxTick)
	ymax = math.Ceil(ymax/step) * step
	yOf := func(v float64) float64 { return float64(y0+svgPanelH) - v/ymax*svgPanelH }
	xOf := func(d time.Duration) float64 { return svgLeft + d.Hours()/hours*svgPlotW }

	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", svgLeft, y0-6, html.EscapeString(panel.label))
	for v := 0.0; v <= ymax+step/2; v += step {
		y := yOf(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", svgLeft, y, svgLeft+svgPlotW, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", svgLeft-6, y+4, trimFloat(v))
	}
	hstep := niceStep(hours / 12)
	for h := 0.0; h <= hours+hstep/2; h += hstep {
		x := svgLeft + h/hours*svgPlotW
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>`+"\n", x, y0, x, y0+svgPanelH)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%sh</text>`+"\n", x, y0+svgPanelH+16, trimFloat(h))
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", svgLeft, y0, svgPlotW, svgPanelH)
	line := func(r Result, color, dash string, value func(Sample) float64) {
		var pts strings.Builder
		for _, s := range r.Samples {
			fmt.Fprintf(&pts, "%.1f,%.1f ", xOf(s.At), yOf(value(s)))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.2"%s points="%s"/>`+"\n",
			color, dash, strings.TrimSpace(pts.String()))
	}
	for ri, r := range results {
		color := svgPalette[ri%len(svgPalette)]
		line(r, color, "", panel.value)
		if panel.dashed != nil {
			line(r, color, ` stroke-dasharray="4 3"`, panel.dashed)
		}
	}
}

// writeSVGLegend writes one legend row per result, naming its scenario too
// when the results come from more than one.
func writeSVGLegend(b io.Writer, results []Result, scenarios bool) {
	for ri, r := range results {
		y := 36 + ri*svgLegendRow
		x := svgLeft
		label := fmt.Sprintf("%s: write amplification %.2f, depth p50 %d (settled %d), files p50 %d",
			r.Strategy, r.WriteAmp, r.DepthP50, r.SettledDepthP50, r.FilesP50)
		if scenarios {
			label = r.Scenario + " " + label
		}
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", x, y, x+18, y, svgPalette[ri%len(svgPalette)])
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", x+24, y+4, html.EscapeString(label))
	}
}

// niceStep rounds a raw tick step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}

func uniqueStrings(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func uniqueJoin(xs []string) string { return strings.Join(uniqueStrings(xs), ", ") }
