package e2e

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/plan/level"
	"github.com/siglake/siglake/sidecar/rowsum"
)

// lateRowsResult is what one run of the late-rows layout test measured.
type lateRowsResult struct {
	split              string
	depthP50, depthMax int
	samples            int
	files              [level.NumLevels]int
	lateFiles          int   // live files of the late stream (merge.ParseLate)
	wideRows, rows     int64 // rows in live files wider than the run plus 2 min, and all rows
	rewrites           float64
	rewrittenBytes     float64
	drainedBytes       float64
}

func (r lateRowsResult) String() string {
	return fmt.Sprintf("split sparse %s: depth p50 %d max %d (%d samples), live files L0/L1/L2 %d/%d/%d, %d late (%d of %d rows in files wider than the run), rewrites %.0f, bytes rewritten %.0f of %.0f drained (WA %.2f)",
		r.split, r.depthP50, r.depthMax, r.samples, r.files[0], r.files[1], r.files[2], r.lateFiles, r.wideRows, r.rows, r.rewrites,
		r.rewrittenBytes, r.drainedBytes, r.rewrittenBytes/max(r.drainedBytes, 1))
}

// TestLateRowsLayout drains four walgen streams (pods) with 20% of rows up to 20 minutes late into one table on
// PostgreSQL and S3 while the first pod's sidecar runs maintenance, once with the size-only
// writer (--split-sparse 0) and once with the default density cuts. It records the depth
// gauge over time, the live files per level and the bytes rewritten of each run, and checks
// that the table holds exactly the sealed rows (iceberg-go and DuckDB). Density cuts must keep
// the dense body apart from the sparse tail of late rows before it: most rows end in files no
// wider than the run plus two of the footers' minute buckets, where the size-only writer stretches
// them over the 20 minutes of lateness.
// SIGLAKE_LONG=1 runs each for 3 minutes instead of 25 s.
func TestLateRowsLayout(t *testing.T) {
	d := 25 * time.Second
	if long() {
		d = 3 * time.Minute
	}
	var res []lateRowsResult
	for _, split := range []string{"0", "0.05"} {
		r := lateRowsRun(t, split, d)
		t.Log(r)
		res = append(res, r)
	}
	before, after := res[0], res[1]
	// The size-only writer never names a late file; with cuts, the sparse tail of a planned bin
	// joins the late stream (the drain's batches here are under density.SplitSparseMinRows).
	if before.lateFiles != 0 || after.lateFiles == 0 {
		t.Errorf("late-stream files: %d with the size-only writer, %d with cuts; want 0 and some", before.lateFiles, after.lateFiles)
	}
	frac := func(r lateRowsResult) float64 { return float64(r.wideRows) / float64(max(r.rows, 1)) }
	if frac(after) >= 0.5 || frac(after) >= frac(before) {
		t.Errorf("density cuts left %.0f%% of the rows in files wider than the run, the size-only writer %.0f%%: the dense body was not cut from its late tail",
			100*frac(after), 100*frac(before))
	}
}

func lateRowsRun(t *testing.T, split string, d time.Duration) lateRowsResult {
	const pods, rate = 4, 4000
	base := newBackendSite(t, "", "")
	var want rowsum.Sum
	type fed struct {
		w   walgenResult
		err error
	}
	done := make(chan fed, pods)
	var procs []*running
	for i := range pods {
		s := newSite(t)
		s.catalog, s.warehouse, s.s3, s.extraEnv = base.catalog, base.warehouse, base.s3, base.extraEnv
		role := "drain"
		if i == 0 {
			role = "all" // one maintenance owner, as gossip would elect
		}
		procs = append(procs, s.start(nil, "--role", role, "--split-sparse", split, "--recluster-interval-secs", "1",
			"--commit-batch-max-age-secs", "2", "--commit-batch-target-mb", "32"))
		go func() {
			out, err := exec.Command(bin, "walgen", "--wal-dir", s.wal, "--stream", fmt.Sprintf("pod-%d", i),
				"--rows", fmt.Sprint(int64(rate*d.Seconds())), "--rate", fmt.Sprint(rate), "--seed", fmt.Sprint(40+i),
				"--batch-rows", "500", "--segment-mb", "0.5", "--roll-age", "1s",
				"--late-fraction", "0.2", "--max-lateness", "20m", "--json").Output()
			var w walgenResult
			if err == nil {
				err = json.Unmarshal(out, &w)
			}
			done <- fed{w, err}
		}()
	}
	owner := procs[0]
	var depths []int
	sample := func() {
		if code, body := owner.get("/metrics"); code == 200 {
			if v := metrics(body).sum("siglake_table_overlap_depth", `table="events"`); v > 0 {
				depths = append(depths, int(v))
			}
		}
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for finished := 0; finished < pods; {
		select {
		case f := <-done:
			if f.err != nil {
				t.Fatalf("walgen: %v", f.err)
			}
			want.Merge(f.w.Fingerprint)
			finished++
		case <-tick.C:
			sample()
		}
	}
	for _, p := range procs {
		p.waitDrained(2 * time.Minute)
	}
	// A few more maintenance cycles on the drained table, still sampled.
	for range 15 {
		<-tick.C
		sample()
	}
	m := owner.scrape()
	res := lateRowsResult{split: split, samples: len(depths),
		rewrites:       m.sum("siglake_compactor_rewrites_total", `outcome="committed"`),
		rewrittenBytes: m.sum("siglake_compactor_rewrite_written_bytes_total", "")}
	for _, p := range procs {
		pm := p.scrape()
		res.drainedBytes += pm.sum("siglake_drain_bytes_total", "")
		p.stop()
	}
	if len(depths) > 0 {
		s := slices.Clone(depths)
		slices.Sort(s)
		res.depthP50, res.depthMax = s[len(s)/2], s[len(s)-1]
	}
	_, files := base.table("events")
	cfg := plan.DefaultConfig()
	for _, f := range files {
		res.files[cfg.LevelOf(f.Size)]++
		res.rows += f.Rows
		if f.Late {
			res.lateFiles++
		}
		if f.MaxTime-f.MinTime > (d + 2*time.Minute).Microseconds() {
			res.wideRows += f.Rows
		}
	}
	if got := base.tableSum("events"); got != want {
		t.Fatalf("split sparse %s: table holds %d rows (sum %d); walgen sealed %d (sum %d)", split, got.Rows, got.Sum, want.Rows, want.Sum)
	}
	base.checkDuckDB("events")
	return res
}
