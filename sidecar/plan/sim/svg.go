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

// WriteSVG draws overlap depth (top) and live file count (bottom) over
// simulated time, one line per result, as a self-contained SVG.
func WriteSVG(w io.Writer, results ...Result) error {
	const (
		width, panelH      = 900, 240
		left, right        = 70, 20
		gap, bottom        = 50, 40
		plotW              = width - left - right
		legendRow, fontPx  = 16, 12
		titleFont, maxTick = 14, 6
	)
	// The legend sits between the title and the first panel.
	top := 58 + len(results)*legendRow
	height := top + 2*panelH + gap + bottom
	palette := []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}

	var span time.Duration
	for _, r := range results {
		span = max(span, r.Duration)
	}
	if span <= 0 {
		span = time.Hour
	}
	hours := span.Hours()

	b := bufio.NewWriter(w)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="%d">`+"\n",
		width, height, width, height, fontPx)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	var names []string
	for _, r := range results {
		names = append(names, r.Scenario)
	}
	title := "siglake compaction simulation"
	if len(names) > 0 {
		title += ": " + uniqueJoin(names)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="%d" font-weight="bold">%s</text>`+"\n", left, 22, titleFont, html.EscapeString(title))

	panels := []struct {
		label string
		value func(Sample) float64
		// dashed, when set, is drawn too, dashed, on the same axis.
		dashed func(Sample) float64
	}{
		{"overlap depth, max over partitions (dashed: settled depth, files older than the settle age)",
			func(s Sample) float64 { return float64(s.Depth) },
			func(s Sample) float64 { return float64(s.SettledDepth) }},
		{"live data files", func(s Sample) float64 { return float64(s.Files) }, nil},
	}
	for pi, panel := range panels {
		y0 := top + pi*(panelH+gap)
		ymax := 1.0
		for _, r := range results {
			for _, s := range r.Samples {
				ymax = math.Max(ymax, panel.value(s))
			}
		}
		step := niceStep(ymax / maxTick)
		ymax = math.Ceil(ymax/step) * step
		yOf := func(v float64) float64 { return float64(y0+panelH) - v/ymax*panelH }
		xOf := func(d time.Duration) float64 { return left + d.Hours()/hours*plotW }

		fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", left, y0-6, html.EscapeString(panel.label))
		for v := 0.0; v <= ymax+step/2; v += step {
			y := yOf(v)
			fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, left+plotW, y)
			fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, trimFloat(v))
		}
		hstep := niceStep(hours / 12)
		for h := 0.0; h <= hours+hstep/2; h += hstep {
			x := left + h/hours*plotW
			fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>`+"\n", x, y0, x, y0+panelH)
			fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%sh</text>`+"\n", x, y0+panelH+16, trimFloat(h))
		}
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", left, y0, plotW, panelH)
		line := func(r Result, color, dash string, value func(Sample) float64) {
			var pts strings.Builder
			for _, s := range r.Samples {
				fmt.Fprintf(&pts, "%.1f,%.1f ", xOf(s.At), yOf(value(s)))
			}
			fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.2"%s points="%s"/>`+"\n",
				color, dash, strings.TrimSpace(pts.String()))
		}
		for ri, r := range results {
			color := palette[ri%len(palette)]
			line(r, color, "", panel.value)
			if panel.dashed != nil {
				line(r, color, ` stroke-dasharray="4 3"`, panel.dashed)
			}
		}
	}
	for ri, r := range results {
		y := 36 + ri*legendRow
		x := left
		label := fmt.Sprintf("%s: write amplification %.2f, depth p50 %d (settled %d), files p50 %d",
			r.Strategy, r.WriteAmp, r.DepthP50, r.SettledDepthP50, r.FilesP50)
		if len(uniqueStrings(names)) > 1 {
			label = r.Scenario + " " + label
		}
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", x, y, x+18, y, palette[ri%len(palette)])
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", x+24, y+4, html.EscapeString(label))
	}
	fmt.Fprintf(b, "</svg>\n")
	return b.Flush()
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
