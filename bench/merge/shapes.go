package main

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// segment is a stretch of one file's rows: rows timestamps spread evenly
// over [start, start+span) microseconds.
type segment struct {
	start, span, rows int64
}

const (
	shapeT0   = int64(1_767_225_600_000_000) // 2026-01-01T00:00:00Z
	shapeSpan = int64(3600_000_000)          // every shape covers one hour
	// sliverRows is each late file's rows in the sliver shape: a few KiB of
	// Parquet, what a late flush adds to a terminal file.
	sliverRows = 500
)

// shapeDoc says what each shape models (the planner's bins, issue 15).
var shapeDoc = map[string]string{
	"overlap":  "(d) every file covers the same hour: all inputs overlap everywhere (the k-way merge's hardest case).",
	"disjoint": "(a) consecutive time windows, one per file, touching nothing else: an L1 bin of time-disjoint files into one L2 file.",
	"sliver":   "(b) one big file covering the hour plus three small files of late rows inside its last 36 seconds: a terminal file absorbing a late sliver.",
	"tail":     "(c) consecutive windows, each file also holding a 5% late tail that falls in the last tenth of the previous file's window.",
	"foreign":  "the overlap inputs written again by DuckDB (122,880-row row groups, its own page sizes): inputs written by another tool.",
}

// layout returns, per file, its segments in time order, for about total rows.
func layout(shape string, n int, total int64) ([][]segment, error) {
	w := shapeSpan / int64(n)
	per := total / int64(n)
	var files [][]segment
	switch shape {
	case "overlap":
		for f := 0; f < n; f++ {
			files = append(files, []segment{{shapeT0, shapeSpan, per}})
		}
	case "disjoint":
		for f := 0; f < n; f++ {
			files = append(files, []segment{{shapeT0 + int64(f)*w, w, per}})
		}
	case "sliver":
		late := shapeSpan / 100
		files = append(files, []segment{{shapeT0, shapeSpan, total - 3*sliverRows}})
		for f := 0; f < 3; f++ {
			files = append(files, []segment{{shapeT0 + shapeSpan - late, late, sliverRows}})
		}
	case "tail":
		for f := 0; f < n; f++ {
			if f == 0 {
				files = append(files, []segment{{shapeT0, w, per}})
				continue
			}
			tail := per / 20
			files = append(files, []segment{{shapeT0 + int64(f)*w - w/10, w / 10, tail}, {shapeT0 + int64(f)*w, w, per - tail}})
		}
	default:
		return nil, fmt.Errorf("unknown shape %q (accepted: overlap, disjoint, sliver, tail; foreign is made from overlap)", shape)
	}
	return files, nil
}

// timestamps returns the sorted timestamps of a file's segments: row i of a
// segment falls in its own slot of span/rows, at a random point inside it.
func timestamps(r *rand.Rand, segs []segment) []int64 {
	var ts []int64
	for _, s := range segs {
		step := max(s.span/max(s.rows, 1), 1)
		for i := int64(0); i < s.rows; i++ {
			ts = append(ts, s.start+i*step+r.Int64N(step))
		}
	}
	return ts
}

type shapeRun struct {
	shape string
	n     int
}

// shapeRuns is every (shape, fan-in) to run: the sliver shape always has
// four inputs (the big file and three late ones).
func shapeRuns(shapes, fanins string) []shapeRun {
	var runs []shapeRun
	for _, sh := range strings.Split(shapes, ",") {
		sh = strings.TrimSpace(sh)
		if sh == "sliver" {
			runs = append(runs, shapeRun{sh, 4})
			continue
		}
		for _, f := range strings.Split(fanins, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err == nil && n > 0 {
				runs = append(runs, shapeRun{sh, n})
			}
		}
	}
	return runs
}
