// Command merge-bench compares siglake's three merge paths with DuckDB's
// sorted COPY and iceberg-go's Table.RewriteDataFiles on the same inputs: 8
// and 32 overlapping time-sorted Parquet files of the same total size. Each
// contender runs in its own process so its peak RSS is its own. run.sh is the
// one-command entry point; it writes RESULTS.md.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/writer"
)

func main() {
	var (
		dir        = flag.String("dir", "", "work directory (inputs are generated once and reused)")
		shapes     = flag.String("shapes", "overlap", "bin shapes to run (shapes.go): overlap, disjoint, sliver, tail, foreign")
		mb         = flag.Int("mb", 256, "decoded MiB of each input set")
		fanins     = flag.String("fanins", "8,32", "input file counts, each over the same total size")
		contenders = flag.String("contenders", "in-memory,k-way,page-bounded,duckdb,iceberg-go", "what to run")
		duckDir    = flag.String("duckdb-dir", "", "directory whose node_modules holds @duckdb/node-api")
		duckThr    = flag.Int("duckdb-threads", runtime.NumCPU(), "DuckDB threads")
		repeat     = flag.Int("repeat", 3, "runs per contender (round-robin); the table shows the fastest")
		child      = flag.String("child", "", "internal: run one contender on -set and print JSON")
		set        = flag.String("set", "", "internal: input set directory")
		genShape   = flag.String("gen", "", "internal: generate the input set -set of this shape, -fanins files, -mb MiB")
		cpuProf    = flag.String("cpuprofile", "", "with -child: write a CPU profile here")
		memProf    = flag.String("memprofile", "", "with -child: write the heap profile taken at the largest sampled heap here")
	)
	flag.Parse()
	if *genShape != "" {
		n, err := strconv.Atoi(*fanins)
		if err == nil {
			_, err = gen(*set, *genShape, n, *mb)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *child != "" {
		if *cpuProf != "" {
			f, err := os.Create(*cpuProf)
			if err == nil {
				_ = pprof.StartCPUProfile(f)
				defer pprof.StopCPUProfile()
			}
		}
		if *memProf != "" {
			stop := sampleHeap(*memProf)
			defer stop()
		}
		res, err := runChild(*child, *set)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = json.NewEncoder(os.Stdout).Encode(res)
		return
	}
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "-dir is required")
		os.Exit(2)
	}
	if err := orchestrate(*dir, *shapes, *mb, *fanins, *contenders, *duckDir, *duckThr, max(*repeat, 1)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// inputSet is what gen wrote, saved as set.json beside the files.
type inputSet struct {
	Inputs       []merge.Input
	Rows         int64
	DecodedBytes int64
	FileBytes    int64
}

// childResult is one contender's measurement of its own work.
type childResult struct {
	Seconds float64 `json:"seconds"`
	// CPU is the process's user+system seconds over the timed work alone
	// (getrusage before and after; DuckDB's script does the same with
	// process.cpuUsage): start-up, package init and input loading excluded.
	CPU      float64 `json:"cpu"`
	Rows     int64   `json:"rows"`
	OutBytes int64   `json:"outBytes"`
	Files    int     `json:"files"`
	// Path and Decoder are the merge path that ran and what decoded its k-way part (our paths).
	Path    string `json:"path,omitempty"`
	Decoder string `json:"decoder,omitempty"`
}

// arrowSchema is the bench table's schema as iceberg-go converts it (field IDs in the field
// metadata), built here without iceberg-go's table package: our contenders run in merge-child,
// which does not link it (its package init costs about 0.2 CPU s and 32 MB at every start, which a
// per-merge process would pay and the sidecar pays once). iceberg.go checks the two agree.
func arrowSchema() *arrow.Schema {
	field := func(id int, name string, t arrow.DataType, nullable bool) arrow.Field {
		return arrow.Field{Name: name, Type: t, Nullable: nullable,
			Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(id)})}
	}
	return arrow.NewSchema([]arrow.Field{
		field(1, "timestamp", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, false),
		field(2, "service", arrow.BinaryTypes.String, true),
		field(3, "host", arrow.BinaryTypes.String, true),
		field(4, "level", arrow.PrimitiveTypes.Int32, true),
		field(5, "raw", arrow.BinaryTypes.String, true),
		field(6, "trace_id", arrow.BinaryTypes.String, true),
	}, nil)
}

// gen writes n files whose rows together decode to about mb MiB, laid out in
// time as shape says (shapes.go).
func gen(dir, shape string, n, mb int) (inputSet, error) {
	// SIGLAKE_BENCH_INPUT_ENCODER=parquet-go writes the inputs as the drain now writes L0 files
	// (use another -dir: sets are generated once per directory); default arrow-go.
	enc := writer.EncoderArrow
	if v := os.Getenv("SIGLAKE_BENCH_INPUT_ENCODER"); v != "" {
		var err error
		if enc, err = writer.ParseEncoder(v); err != nil {
			return inputSet{}, fmt.Errorf("SIGLAKE_BENCH_INPUT_ENCODER: %w", err)
		}
	}
	if s, err := loadSet(dir); err == nil {
		return s, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return inputSet{}, err
	}
	sc := arrowSchema()
	r := rand.New(rand.NewPCG(uint64(n), 42))
	const rowBytes = 230 // measured below; only sizes the row count
	files, err := layout(shape, n, int64(mb)<<20/rowBytes)
	if err != nil {
		return inputSet{}, err
	}
	var s inputSet
	services := []string{"api", "auth", "billing", "db", "queue", "search", "web"}
	methods := []string{"GET", "POST", "PUT", "DELETE"}
	resources := []string{"users", "orders", "items", "sessions", "carts", "invoices"}
	words := strings.Fields("request completed started failed retry timeout connection refused reset upstream cache miss hit slow query lock acquired released token expired rate limited ok")
	for _, segs := range files {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		var sb strings.Builder
		for _, ts := range timestamps(r, segs) {
			svc := services[r.IntN(len(services))]
			lvl := int32(r.IntN(5))
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(ts))
			b.Field(1).(*array.StringBuilder).Append(svc)
			b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("%s-%d", svc, r.IntN(40)))
			b.Field(3).(*array.Int32Builder).Append(lvl)
			sb.Reset()
			fmt.Fprintf(&sb, "%s /api/v1/%s/%d status=%d latency_ms=%d user=u%05d msg=", methods[r.IntN(4)],
				resources[r.IntN(len(resources))], r.IntN(100000), []int{200, 200, 200, 201, 404, 500}[r.IntN(6)], r.IntN(2000), r.IntN(50000))
			for w := 0; w < 4+r.IntN(8); w++ {
				sb.WriteString(words[r.IntN(len(words))])
				sb.WriteByte(' ')
			}
			b.Field(4).(*array.StringBuilder).Append(sb.String())
			if r.IntN(4) == 0 {
				b.Field(5).AppendNull()
			} else {
				b.Field(5).(*array.StringBuilder).Append(fmt.Sprintf("%016x", r.Uint64()))
			}
		}
		rec := b.NewRecordBatch()
		b.Release()
		for _, c := range rec.Columns() {
			for _, buf := range c.Data().Buffers() {
				if buf != nil {
					s.DecodedBytes += int64(buf.Len())
				}
			}
		}
		outs, err := writer.WriteSorted(context.Background(), icebergio.LocalFS{}, func(int) string {
			return filepath.Join(dir, merge.DataFileName(0))
		}, sc, []arrow.RecordBatch{rec}, merge.WriterOptions{Encoder: enc})
		rec.Release()
		if err != nil {
			return inputSet{}, err
		}
		for _, o := range outs {
			s.Inputs = append(s.Inputs, merge.Input{Path: o.Path, Size: o.Size, Rows: o.Rows})
			s.Rows += o.Rows
			s.FileBytes += o.Size
		}
	}
	saved := s
	saved.Inputs = append([]merge.Input(nil), s.Inputs...)
	for i, in := range saved.Inputs {
		if rel, err := filepath.Rel(filepath.Dir(dir), in.Path); err == nil {
			saved.Inputs[i].Path = rel
		}
	}
	b, _ := json.Marshal(saved)
	return s, os.WriteFile(filepath.Join(dir, "set.json"), b, 0o644)
}

// loadSet reads set.json; input paths in it are relative to the work
// directory (the set directory's parent), so a work directory can move.
func loadSet(dir string) (inputSet, error) {
	var s inputSet
	b, err := os.ReadFile(filepath.Join(dir, "set.json"))
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, err
	}
	for i, in := range s.Inputs {
		if !filepath.IsAbs(in.Path) {
			s.Inputs[i].Path = filepath.Join(filepath.Dir(dir), in.Path)
		}
	}
	return s, nil
}

// runChild runs one contender in this process and measures its work.
func runChild(contender, setDir string) (childResult, error) {
	s, err := loadSet(setDir)
	if err != nil {
		return childResult{}, err
	}
	out := filepath.Join(setDir, "out-"+contender)
	_ = os.RemoveAll(out)
	ctx := context.Background()
	// A merge path's name may end in ":ENCODER" (k-way:parquet-go): the Parquet encoder of its
	// outputs (writer.Encoders; default arrow); or in ":pq-decode" (k-way:pq-decode): decoded,
	// merged and encoded on parquet-go's values (merge.DecoderParquetGo), the parquet-go encoder
	// writing what a path other than k-way re-encodes (chosen:pq-decode: the new codec as the
	// sidecar runs it with both switches set); or in ":auto" (chosen:auto): the sidecar's
	// defaults, the parquet-go decoder where the bin allows and the auto encoder (arrow-go for
	// rows arrow-go decoded).
	name, enc, _ := strings.Cut(contender, ":")
	switch name {
	case "in-memory", "k-way", "page-bounded", "splice", "splice-unverified", "chosen":
		decoder := merge.DecoderArrow
		strict := true // a parquet-go decode that falls back is an error
		switch enc {
		case "pq-decode":
			decoder, enc = merge.DecoderParquetGo, string(writer.EncoderParquetGo)
		case "auto":
			decoder, strict = merge.DecoderParquetGo, false
		}
		encoder, err := writer.ParseEncoder(cmp.Or(enc, string(writer.EncoderArrow)))
		if err != nil {
			return childResult{}, err
		}
		path := merge.PathKind(name)
		switch name {
		case "chosen":
			path = "" // what ChoosePath takes
		case "splice-unverified":
			path = merge.PathSplice
		}
		start, cpu0 := time.Now(), cpuSeconds()
		res, err := merge.Rewrite(ctx, icebergio.LocalFS{}, s.Inputs, arrowSchema(), func(int) string {
			return filepath.Join(out, merge.DataFileName(1))
		}, merge.RewriteOptions{
			ForcePath:        path,
			SpliceUnverified: name == "splice-unverified",
			Decoder:          decoder,
			WriterOptions:    merge.WriterOptions{Metadata: merge.MetadataOptions{IndexColumns: []string{"trace_id"}}, Encoder: encoder},
		})
		if err != nil {
			return childResult{}, err
		}
		if err := fellBack(contender, decoder, res); err != nil && strict {
			return childResult{}, err
		}
		r := childResult{Seconds: time.Since(start).Seconds(), CPU: cpuSeconds() - cpu0, Files: len(res.Outputs), OutBytes: res.BytesWritten,
			Path: string(res.Path), Decoder: string(res.Decoder)}
		for _, o := range res.Outputs {
			r.Rows += o.Rows
		}
		return r, nil
	case "iceberg-go":
		return icebergRewrite(ctx, s, out)
	case "arrow-go-copy":
		return codecFloor(ctx, s, out)
	}
	return childResult{}, fmt.Errorf("unknown contender %q", contender)
}

// fellBack fails a contender that asked for the parquet-go decoder when its bin ran the k-way
// path on arrow-go instead (its numbers would be arrow-go's); other paths never decode with
// parquet-go, so chosen:pq-decode on a splice bin is what the sidecar does.
func fellBack(contender string, want merge.Decoder, res merge.RewriteResult) error {
	if want == merge.DecoderParquetGo && res.Path == merge.PathKWay && res.Decoder != want {
		return fmt.Errorf("%s: decoded with %s: %s", contender, res.Decoder, res.Reason)
	}
	return nil
}

// measured is one contender's row of the results table.
type measured struct {
	contender string
	res       childResult
	maxRSS    int64   // bytes
	cpu       float64 // user+system seconds of the whole process
	median    float64 // median wall seconds of the successful runs
	medCPU    float64 // median process CPU seconds of the successful runs
	medWork   float64 // median CPU seconds of the timed work (childResult.CPU)
	err       error
}

func orchestrate(dir, shapes string, mb int, fanins, contenders, duckDir string, duckThreads, repeat int) error {
	if err := checkSchema(); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var report strings.Builder
	fmt.Fprintf(&report, "Machine: %d CPUs (%s/%s), %s, load average at start %s. DuckDB threads: %d. Go merge paths: GOMAXPROCS %d (decoding, merging, encoding and metadata run in separate goroutines).\n\n",
		runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, memTotal(), loadAvg(), duckThreads, runtime.GOMAXPROCS(0))
	for _, run := range shapeRuns(shapes, fanins) {
		n, shape := run.n, run.shape
		setDir := filepath.Join(dir, fmt.Sprintf("set-%s-%d-%dmb", shape, n, mb))
		fmt.Fprintf(os.Stderr, "generating %d inputs (%d MiB decoded, %s) in %s\n", n, mb, shape, setDir)
		// In its own process: a child forked from a process that held the
		// generated rows would report that process's peak RSS as its own.
		if _, err := loadSet(setDir); err != nil {
			genShape, genDir := shape, setDir
			if shape == "foreign" {
				genShape, genDir = "overlap", filepath.Join(dir, fmt.Sprintf("set-overlap-%d-%dmb", n, mb))
			}
			if _, err := loadSet(genDir); err != nil {
				cmd := exec.Command(self, "-gen", genShape, "-set", genDir, "-fanins", strconv.Itoa(n), "-mb", strconv.Itoa(mb))
				cmd.Stderr = os.Stderr
				if err := cmd.Run(); err != nil {
					return fmt.Errorf("generating inputs: %w", err)
				}
			}
			if shape == "foreign" {
				if err := rewriteWithDuckDB(self, genDir, setDir, duckDir); err != nil {
					return fmt.Errorf("generating inputs: %w", err)
				}
			}
		}
		s, err := loadSet(setDir)
		if err != nil {
			return fmt.Errorf("generating inputs: %w", err)
		}
		fmt.Fprintf(&report, "### %s: %d inputs, %d rows, %.1f MiB decoded, %.1f MiB of Parquet\n\n%s\n\n", shape, len(s.Inputs), s.Rows,
			float64(s.DecodedBytes)/(1<<20), float64(s.FileBytes)/(1<<20), shapeDoc[shape])
		fmt.Fprintf(&report, "| contender | seconds | median s | process CPU s | median process CPU s | median merge CPU s | decoded MB/s in | file MB/s in | rows/s | peak RSS MiB | output MiB | files | rows ok |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		names := strings.Split(contenders, ",")
		best := make([]measured, len(names))
		walls := make([][]float64, len(names))
		cpus := make([][]float64, len(names))
		works := make([][]float64, len(names))
		for round := 0; round < repeat; round++ {
			for i, c := range names {
				c = strings.TrimSpace(c)
				m := runOne(self, c, setDir, s, duckDir, duckThreads)
				fmt.Fprintf(os.Stderr, "  %s run %d: %.2f s, %.2f CPU s, %.0f MiB, path %q decoder %q, err %v\n", c, round+1, m.res.Seconds, m.cpu, float64(m.maxRSS)/(1<<20), m.res.Path, m.res.Decoder, m.err)
				best[i] = better(best[i], m)
				if m.err == nil {
					walls[i] = append(walls[i], m.res.Seconds)
					cpus[i] = append(cpus[i], m.cpu)
					works[i] = append(works[i], m.res.CPU)
				}
			}
		}
		var rows []measured
		for i, m := range best {
			m.median, m.medCPU, m.medWork = median(walls[i]), median(cpus[i]), median(works[i])
			rows = append(rows, m)
			c := m.contender
			if m.err != nil {
				// Input paths relative to the work directory: the report is committed.
				msg := strings.ReplaceAll(m.err.Error(), filepath.Clean(dir)+string(filepath.Separator), "")
				fmt.Fprintf(&report, "| %s | failed: %s | | | | | | | | | | | |\n", c, msg)
				continue
			}
			sec := m.res.Seconds
			fmt.Fprintf(&report, "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f | %.1f | %.0f | %.0f | %.1f | %d | %v |\n", c, sec, m.median, m.cpu, m.medCPU, m.medWork,
				float64(s.DecodedBytes)/1e6/sec, float64(s.FileBytes)/1e6/sec, float64(s.Rows)/sec,
				float64(m.maxRSS)/(1<<20), float64(m.res.OutBytes)/(1<<20), m.res.Files, m.res.Rows == s.Rows)
		}
		fmt.Fprintf(&report, "\n%s\n", ratios(rows))
	}
	fmt.Print(report.String())
	return nil
}

// median of the successful runs' wall times; 0 if none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// better keeps the fastest successful run; CPU time is the lowest seen and
// peak RSS the highest seen, so neither flatters a contender.
func better(a, b measured) measured {
	if a.contender == "" {
		return b
	}
	if b.err != nil {
		return a
	}
	if a.err != nil {
		return b
	}
	out := a
	if b.res.Seconds < a.res.Seconds {
		out = b
	}
	out.cpu = min(a.cpu, b.cpu)
	out.maxRSS = max(a.maxRSS, b.maxRSS)
	return out
}

// childBinary is the binary that runs contender c: merge-child beside this one for the merge
// paths when run.sh built it (-tags mergeonly: without iceberg-go's table package), else this one.
func childBinary(self, c string) string {
	if c == "iceberg-go" {
		return self
	}
	lean := filepath.Join(filepath.Dir(self), "merge-child")
	if _, err := os.Stat(lean); err == nil {
		return lean
	}
	return self
}

// runOne runs contender c on the input set in its own process.
func runOne(self, c, setDir string, s inputSet, duckDir string, duckThreads int) measured {
	var cmd *exec.Cmd
	if c == "duckdb" {
		var files []string
		for _, in := range s.Inputs {
			files = append(files, in.Path)
		}
		out := filepath.Join(setDir, "out-duckdb.parquet")
		_ = os.Remove(out)
		args := append([]string{filepath.Join(filepath.Dir(self), "duckdb_copy.mjs"), duckDir, out, strconv.Itoa(duckThreads)}, files...)
		cmd = exec.Command("node", args...)
	} else {
		cmd = exec.Command(childBinary(self, c), "-child", c, "-set", setDir)
	}
	m := measured{contender: c}
	outb, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		m.err = err
	} else if err := json.Unmarshal(outb, &m.res); err != nil {
		m.err = fmt.Errorf("parsing %q: %w", outb, err)
	}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			m.maxRSS = ru.Maxrss * 1024
			m.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		}
	}
	if c == "duckdb" && m.err == nil {
		if st, err := os.Stat(filepath.Join(setDir, "out-duckdb.parquet")); err == nil {
			m.res.OutBytes, m.res.Files = st.Size(), 1
		}
	}
	return m
}

func ratios(rows []measured) string {
	get := func(name string) *measured {
		for i := range rows {
			if rows[i].contender == name && rows[i].err == nil {
				return &rows[i]
			}
		}
		return nil
	}
	var b strings.Builder
	kw, duck, pb, ice := get("k-way"), get("duckdb"), get("page-bounded"), get("iceberg-go")
	for _, name := range []string{"splice", "splice-unverified", "chosen"} {
		if sp := get(name); sp != nil && duck != nil {
			fmt.Fprintf(&b, "- %s vs DuckDB: %.2fx DuckDB's throughput per process CPU second (%.2fx by medians; %.2fx per merge CPU second, start-up excluded, medians), %.2fx its speed (%.2fx by median times), %.2f of its peak RSS\n",
				name, duck.cpu/sp.cpu, duck.medCPU/sp.medCPU, duck.medWork/sp.medWork, duck.res.Seconds/sp.res.Seconds, duck.median/sp.median, float64(sp.maxRSS)/float64(duck.maxRSS))
		}
		if sp := get(name); sp != nil && ice != nil {
			fmt.Fprintf(&b, "- %s vs iceberg-go: %.2fx its throughput per process CPU second, %.2fx its speed, %.2f of its peak RSS\n",
				name, ice.cpu/sp.cpu, ice.res.Seconds/sp.res.Seconds, float64(sp.maxRSS)/float64(ice.maxRSS))
		}
	}
	if kw != nil && duck != nil {
		fmt.Fprintf(&b, "- k-way vs DuckDB: %.2fx DuckDB's speed (%.2fx by median times), %.2f of its process CPU seconds (%.2f by medians), %.2f of its peak RSS\n",
			duck.res.Seconds/kw.res.Seconds, duck.median/kw.median, kw.cpu/duck.cpu, kw.medCPU/duck.medCPU, float64(kw.maxRSS)/float64(duck.maxRSS))
	}
	if kw != nil && pb != nil {
		fmt.Fprintf(&b, "- page-bounded vs k-way: %.2fx the time (target <= 2; %.2fx by median times), %.2fx its CPU seconds, %.2f of its peak RSS\n",
			pb.res.Seconds/kw.res.Seconds, pb.median/kw.median, pb.cpu/kw.cpu, float64(pb.maxRSS)/float64(kw.maxRSS))
	}
	if kw != nil && ice != nil {
		fmt.Fprintf(&b, "- k-way vs iceberg-go RewriteDataFiles (which does not sort): %.2fx its speed, %.2f of its CPU seconds, %.2f of its peak RSS\n",
			ice.res.Seconds/kw.res.Seconds, kw.cpu/ice.cpu, float64(kw.maxRSS)/float64(ice.maxRSS))
	}
	return b.String()
}

// cpuSeconds is this process's user+system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "memory unknown"
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) >= 2 {
		if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			return fmt.Sprintf("%.1f GiB RAM", float64(kb)/(1<<20))
		}
	}
	return "memory unknown"
}

// sampleHeap writes a heap profile to path whenever the live heap reaches a
// new maximum (checked every 50 ms), so the file ends up holding the peak.
func sampleHeap(path string) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var best uint64
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > best {
				best = m.HeapAlloc
				if f, err := os.Create(path); err == nil {
					_ = pprof.Lookup("heap").WriteTo(f, 0)
					_ = f.Close()
				}
			}
		}
	}()
	return func() { close(done); <-finished }
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// rewriteWithDuckDB writes each input of the set in src again with DuckDB
// (its own row groups of 122,880 rows and its own page sizes) into dst: the
// "foreign" shape, inputs written by another tool.
func rewriteWithDuckDB(self, src, dst, duckDir string) error {
	s, err := loadSet(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	out := s
	out.Inputs, out.FileBytes = nil, 0
	for i, in := range s.Inputs {
		p := filepath.Join(dst, fmt.Sprintf("duckdb-%02d.parquet", i))
		cmd := exec.Command("node", filepath.Join(filepath.Dir(self), "duckdb_copy.mjs"), duckDir, p, "2", in.Path)
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("DuckDB rewriting %s: %w: %s", in.Path, err, b)
		}
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(filepath.Dir(dst), p)
		out.Inputs = append(out.Inputs, merge.Input{Path: rel, Size: st.Size(), Rows: in.Rows})
		out.FileBytes += st.Size()
	}
	b, _ := json.Marshal(out)
	return os.WriteFile(filepath.Join(dst, "set.json"), b, 0o644)
}
