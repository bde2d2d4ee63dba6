// Command reindex measures the post-rewrite index rebuild (SIGLAKE_INDEX_REBUILD) on a realistic
// streamed output: it generates event rows, merges them on the k-way path into one data
// file (no footer inverted index), then, in a fresh child process, builds the trace_id and
// service indexes from that file and writes them as a Puffin sidecar, reporting seconds, Puffin
// bytes per MiB of data and the child's peak RSS.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/sidecar/puffinidx"
	"github.com/siglake/siglake/sidecar/walgen"
)

var columns = []string{"trace_id", "service"}

func main() {
	dir := flag.String("dir", "", "work directory (the data file is generated once and reused)")
	rows := flag.Int("rows", 2_000_000, "rows of the data file")
	child := flag.String("child", "", "internal: index this data file and print JSON")
	maxMem := flag.Int64("max-mem-mb", 0, "memory cap of one column's index while it is built (0: none); the sidecar uses the merge memory budget")
	flag.Parse()
	if *child != "" {
		if err := index(*child, *maxMem<<20); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "usage: reindex -dir DIR [-rows N]")
		os.Exit(2)
	}
	if err := run(*dir, *rows, *maxMem); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func schema() *arrow.Schema { return walgen.EventsSchema }

// prepare writes 8 overlapping inputs and merges them on the k-way path into one file.
func prepare(dir string, rows int) (string, error) {
	out := filepath.Join(dir, fmt.Sprintf("streamed-%d.parquet", rows))
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	ctx := context.Background()
	sc := schema()
	start := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	var inputs []merge.Input
	for i := 0; i < 8; i++ {
		g := walgen.New(walgen.Options{Seed: uint64(i + 1), LateFraction: 0.05, MaxLateness: time.Minute})
		var recs []arrow.RecordBatch
		for n := 0; n < rows/8; n += 50_000 {
			recs = append(recs, g.Batch(memory.DefaultAllocator, start.Add(time.Duration(n)*time.Millisecond), min(50_000, rows/8-n), time.Millisecond))
		}
		outs, err := writer.WriteSorted(ctx, icebergio.LocalFS{}, func(int) string {
			return filepath.Join(dir, "in", merge.DataFileName(0))
		}, sc, recs, merge.WriterOptions{TimestampColumn: "timestamp"})
		for _, r := range recs {
			r.Release()
		}
		if err != nil {
			return "", err
		}
		for _, o := range outs {
			inputs = append(inputs, merge.Input{Path: o.Path, Size: o.Size, Rows: o.Rows})
		}
	}
	res, err := merge.Rewrite(ctx, icebergio.LocalFS{}, inputs, sc, func(int) string { return out }, merge.RewriteOptions{
		ForcePath: merge.PathKWay, WriterOptions: merge.WriterOptions{TimestampColumn: "timestamp", Generation: 1,
			Metadata: merge.MetadataOptions{IndexColumns: columns}}})
	if err != nil {
		return "", err
	}
	if len(res.Outputs) != 1 {
		return "", fmt.Errorf("%d outputs", len(res.Outputs))
	}
	return out, os.RemoveAll(filepath.Join(dir, "in"))
}

type result struct {
	Seconds     float64  `json:"seconds"`
	DataBytes   int64    `json:"data_bytes"`
	PuffinBytes int64    `json:"puffin_bytes"`
	Rows        int64    `json:"rows"`
	Terms       []int    `json:"terms"`
	Indexed     []string `json:"indexed"`
	GivenUp     []string `json:"given_up"`
}

// index is what the rebuild does for one data file: build the missing indexes, write the Puffin.
func index(dataFile string, maxMem int64) error {
	isc, err := table.ArrowSchemaToIcebergWithFreshIDs(schema(), false)
	if err != nil {
		return err
	}
	start := time.Now()
	built, err := merge.BuildIndexes(context.Background(), icebergio.LocalFS{}, dataFile, columns, nil, maxMem)
	if err != nil {
		return err
	}
	f, err := os.Create(dataFile + ".puffin")
	if err != nil {
		return err
	}
	var indexed []string
	for _, c := range columns {
		if _, ok := built.Built[c]; ok {
			indexed = append(indexed, c)
		}
	}
	if err := puffinidx.WritePuffin(f, isc, dataFile, indexed, built, 1, 1); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	r := result{Seconds: time.Since(start).Seconds(), Rows: built.Rows, Indexed: indexed, GivenUp: built.TooLarge}
	if len(built.Built)+len(built.TooLarge) != len(columns) {
		return fmt.Errorf("built %d of %d indexes (footer had %v)", len(built.Built), len(columns), built.InFooter)
	}
	for _, c := range indexed {
		r.Terms = append(r.Terms, len(built.Built[c]))
	}
	st, _ := os.Stat(dataFile)
	ps, _ := os.Stat(dataFile + ".puffin")
	r.DataBytes, r.PuffinBytes = st.Size(), ps.Size()
	return json.NewEncoder(os.Stdout).Encode(r)
}

func run(dir string, rows int, maxMemMB int64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := prepare(dir, rows)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "-child", data, "-max-mem-mb", fmt.Sprint(maxMemMB))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return err
	}
	var r result
	if err := json.Unmarshal(out, &r); err != nil {
		return err
	}
	rss := int64(0)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss * 1024
	}
	mib := float64(r.DataBytes) / (1 << 20)
	capText := "none"
	if maxMemMB > 0 {
		capText = fmt.Sprintf("%d MiB", maxMemMB)
	}
	fmt.Printf("| rows | data file | memory cap | indexed | given up | rebuild | Puffin | Puffin per MiB of data | peak RSS |\n|---|---|---|---|---|---|---|---|---|\n")
	fmt.Printf("| %d | %.1f MiB | %s | %v | %v | %.2f s | %.2f MiB | %.0f KiB | %.0f MiB |\n", r.Rows, mib, capText, r.Indexed, r.GivenUp, r.Seconds,
		float64(r.PuffinBytes)/(1<<20), float64(r.PuffinBytes)/1024/mib, float64(rss)/(1<<20))
	return nil
}
