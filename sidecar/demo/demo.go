// Package demo is `siglake demo`: load generation and a sidecar in one process on the embedded
// default, with progress and a summary that checks every sealed row is in its table exactly once.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/maintain"
	"github.com/siglake/siglake/sidecar/plan/level"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
)

// Options configure `siglake demo`.
type Options struct {
	Dir      string
	Duration time.Duration
	Rate     int64 // rows per second per table
	Tables   []string
	// HTTPAddr is where the sidecar serves /metrics and /debug/status; empty: a free loopback
	// port. When the address is taken, a free port is used instead.
	HTTPAddr string
	// KeepRunning leaves a sidecar up on the demo's lake after the summary, until ctx is done, so
	// `siglake status` and `curl /metrics` can be tried.
	KeepRunning bool
	// Version and Revision are the build's (siglake_build_info); empty: "demo".
	Version, Revision string
}

// addrFile holds the HTTP address of the sidecar running on a demo directory, while it runs
// (siglake status --dir reads it).
const addrFile = "sidecar.addr"

// RunningAddr is the HTTP address of the sidecar `siglake demo` runs on dir, or an error saying how
// to start one.
func RunningAddr(dir string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, addrFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("no sidecar runs on %s (siglake demo --dir %s --keep-running starts one and keeps it up)", dir, dir)
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(raw)), nil
}

// startSidecar runs a sidecar (role all) on the demo's lake and returns its HTTP address, recorded
// in dir for siglake status --dir until the sidecar stops; its error arrives on the channel.
func startSidecar(ctx context.Context, o Options, cfg config.Config, log *zap.Logger) (*sidecar.Process, string, <-chan error, error) {
	p := sidecar.NewProcess(cfg, log, o.Version)
	p.Metrics.SetBuildInfo(o.Version, o.Revision)
	done := make(chan error, 1)
	go func() {
		err := p.Run(ctx, false)
		_ = os.Remove(filepath.Join(o.Dir, addrFile))
		done <- err
	}()
	select {
	case addr := <-p.Addr:
		if err := os.WriteFile(filepath.Join(o.Dir, addrFile), []byte(addr+"\n"), 0o644); err != nil {
			return nil, "", nil, err
		}
		return p, addr, done, nil
	case err := <-done:
		return nil, "", nil, err
	}
}

// httpAddr is the address the demo's sidecars listen on: want if it can be bound now (so the
// sidecar comes back on the same address after the summary), else a free loopback port.
func httpAddr(want string) string {
	if want == "" {
		want = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", want)
	if err != nil {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "127.0.0.1:0"
		}
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Run runs load generation and a sidecar (role all) in one process on the embedded default,
// prints progress, then drains what is left and prints a summary of each table, checking that
// every sealed row is in its table exactly once.
func Run(ctx context.Context, o Options, out io.Writer, log *zap.Logger) error {
	if len(o.Tables) == 0 {
		o.Tables = []string{walgen.EventsTable, "audit"}
	}
	if o.Version == "" {
		o.Version = "demo"
	}
	cfg, walDir, err := prepare(ctx, o, out)
	if err != nil {
		return err
	}
	runCtx, stopSidecar := context.WithCancel(ctx)
	defer stopSidecar()
	p, sidecarErr, err := startAndAnnounce(runCtx, o, cfg, out, log)
	if err != nil {
		return err
	}
	ld, err := generateLoad(ctx, o, walDir, p, out)
	if err != nil {
		return err
	}
	printRate(out, o, ld.sealed, ld.took)

	// Stop the sidecar, then drain the rest in one go so the summary covers every sealed row.
	stopSidecar()
	if err := <-sidecarErr; err != nil {
		return err
	}
	if err := drainRest(ctx, out, o, cfg, log); err != nil {
		return err
	}
	if err := demoSummary(ctx, out, cfg, o.Dir, o.Tables, ld.sealed, ld.peak); err != nil {
		return err
	}
	var events int64 // the rollup counts the events table's rows
	if s := ld.sealed[walgen.EventsTable]; s != nil {
		events = s.Rows
	}
	if err := rollupSummary(ctx, out, cfg, o.Dir, ld.rollupRows, events); err != nil || !o.KeepRunning {
		return err
	}
	return keepRunning(ctx, out, o, cfg, log)
}

// prepare readies the demo directory, its WAL directory and the rollup table, and returns the
// sidecar's configuration and the WAL directory.
func prepare(ctx context.Context, o Options, out io.Writer) (config.Config, string, error) {
	note, err := prepareDir(o.Dir)
	if err != nil {
		return config.Config{}, "", err
	}
	if note != "" {
		fmt.Fprintf(out, "siglake demo: %s\n", note)
	}
	walDir := filepath.Join(o.Dir, "wal")
	if err := os.MkdirAll(walDir, 0o755); err != nil {
		return config.Config{}, "", err
	}
	cfg, err := demoConfig(o.Dir)
	if err != nil {
		return config.Config{}, "", err
	}
	cfg.HTTPAddr = httpAddr(o.HTTPAddr)
	if err := prepareRollup(ctx, cfg); err != nil {
		return config.Config{}, "", fmt.Errorf("the rollup table: %w", err)
	}
	return cfg, walDir, nil
}

// startAndAnnounce starts the sidecar and prints where it and its WAL buffer listen; sidecarErr
// delivers how the sidecar ended.
func startAndAnnounce(ctx context.Context, o Options, cfg config.Config, out io.Writer, log *zap.Logger) (*sidecar.Process, <-chan error, error) {
	p, addr, sidecarErr, err := startSidecar(ctx, o, cfg, log)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(out, "siglake demo: embedded catalog %s, warehouse %s\n", cfg.Catalog, cfg.Warehouse)
	fmt.Fprintf(out, "sidecar HTTP on %s (try: %s)\n", addr, statusCommand(o.Dir, addr))
	var bufAddr string
	select {
	case bufAddr = <-p.BufferAddr:
	case err := <-sidecarErr:
		return nil, nil, err
	}
	fmt.Fprintf(out, "WAL buffer on %s (try, while the demo runs: siglake tail events --follow --buffer %s --catalog %s --warehouse %s)\n",
		bufAddr, bufAddr, cfg.Catalog, cfg.Warehouse)
	fmt.Fprintf(out, "writing %d rows/s into each of %v for %s, 2%% of them late (so files overlap)\n\n", o.Rate, o.Tables, o.Duration)
	return p, sidecarErr, nil
}

// load is what the generator wrote: a fingerprint of the rows sealed per table, the rollup's
// rows, how long it ran (the achieved rate's denominator) and the deepest overlap the
// maintenance loop saw per table.
type load struct {
	sealed     map[string]*rowsum.Sum
	rollupRows int64
	took       time.Duration
	peak       map[string]int
}

// generateLoad runs one walgen stream, as one ingest pod writes one WAL, feeding every table for
// o.Duration, and prints the sidecar's progress every 2 seconds meanwhile.
func generateLoad(ctx context.Context, o Options, walDir string, p *sidecar.Process, out io.Writer) (load, error) {
	genCtx, stopGen := context.WithTimeout(ctx, o.Duration)
	defer stopGen()
	ld := load{sealed: map[string]*rowsum.Sum{}, peak: map[string]int{}}
	var (
		mu     sync.Mutex
		genErr error
	)
	for _, tbl := range o.Tables {
		ld.sealed[tbl] = &rowsum.Sum{}
	}
	genDone := make(chan struct{})
	go func() {
		defer close(genDone)
		ro := walgen.RunOptions{WALDir: walDir, Stream: "demo-pod", Tables: o.Tables, Rate: o.Rate * int64(len(o.Tables)),
			BatchRows: 2000, SegmentSize: 2 << 20, RollAge: 2 * time.Second, Rollup: walgen.RollupTable,
			Gen: walgen.Options{Seed: 1, LateFraction: 0.02, MaxLateness: 5 * time.Minute}}
		res, err := walgen.Run(genCtx, ro, func(tbl string, rec arrow.RecordBatch) {
			mu.Lock()
			_ = ld.sealed[tbl].Add(rec, walgen.Columns...) // walgen's own schema: every column type is fingerprinted
			mu.Unlock()
		})
		mu.Lock()
		genErr, ld.rollupRows = err, res.RollupRows
		mu.Unlock()
	}()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	start := time.Now()
	for {
		select {
		case <-genDone:
			ld.took = time.Since(start)
			if genErr != nil {
				return ld, fmt.Errorf("walgen: %w", genErr)
			}
			return ld, nil
		case <-ctx.Done():
			return load{}, ctx.Err() // the generator may still be writing ld
		case <-tick.C:
			for t, d := range printProgress(out, p, time.Since(start)) {
				ld.peak[t] = max(ld.peak[t], d)
			}
		}
	}
}

// drainRest drains what the stopped sidecar left in the WAL in one go, on its own port, then
// compacts, so the summary covers every sealed row.
func drainRest(ctx context.Context, out io.Writer, o Options, cfg config.Config, log *zap.Logger) error {
	fmt.Fprintf(out, "\nload stopped; draining what is left...\n")
	once := cfg
	once.HTTPAddr = "127.0.0.1:0" // its own port: the address above is for the long-running sidecar
	once.BufferAddr = ""          // the final drain serves nothing (and, with the buffer off, clears retention)
	p2 := sidecar.NewProcess(once, log, o.Version)
	go func() { <-p2.Addr }()
	if err := p2.Run(ctx, true); err != nil {
		return err
	}
	return Compact(ctx, out, cfg, log)
}

// printRate says what rate the generator achieved per table next to the one asked for, and why
// when it fell short: it paces itself to the rate, so a shortfall means generating, fingerprinting
// and appending the rows took all the CPU the sidecar left it.
func printRate(out io.Writer, o Options, sealed map[string]*rowsum.Sum, took time.Duration) {
	if took <= 0 || len(o.Tables) == 0 {
		return
	}
	var rows int64
	for _, s := range sealed {
		rows += s.Rows
	}
	got := float64(rows) / float64(len(o.Tables)) / took.Seconds()
	fmt.Fprintf(out, "\nwrote %.0f rows/s into each table for %s (asked for %d rows/s)\n", got, took.Round(100*time.Millisecond), o.Rate)
	if got < 0.95*float64(o.Rate) {
		fmt.Fprintf(out, "lower than asked: generating, fingerprinting and writing the rows used all the CPU the sidecar left them on %d cores; --rate %.0f is what this machine kept up\n",
			runtime.NumCPU(), got)
	}
}

// statusCommand is the `siglake status` command line for the demo's sidecar: plain on the
// default address, else with --dir (the address is recorded there while the sidecar runs).
func statusCommand(dir, addr string) string {
	if addr == "127.0.0.1:9464" {
		return "siglake status"
	}
	return "siglake status --dir " + dir
}

// keepRunning runs a sidecar on the demo's lake until ctx is done (Ctrl-C), with its address
// printed and recorded in the directory.
func keepRunning(ctx context.Context, out io.Writer, o Options, cfg config.Config, log *zap.Logger) error {
	cfg.HTTPAddr = httpAddr(cfg.HTTPAddr)
	_, addr, done, err := startSidecar(ctx, o, cfg, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nthe sidecar keeps running on the demo's lake, HTTP on %s; try:\n", addr)
	fmt.Fprintf(out, "  %s\n  curl -s http://%s/metrics | grep ^siglake_\n  siglake inspect --dir %s\n", statusCommand(o.Dir, addr), addr, o.Dir)
	fmt.Fprintf(out, "more segments for it to drain: siglake walgen --wal-dir %s --rows 50000 --tables events,audit\n", cfg.WALDir)
	fmt.Fprintf(out, "Ctrl-C stops it.\n")
	err = <-done
	if ctx.Err() != nil {
		fmt.Fprintf(out, "sidecar stopped\n")
	}
	return err
}

// demoConfig is the demo's sidecar configuration: WAL, embedded catalog and warehouse under dir.
func demoConfig(dir string) (config.Config, error) {
	cfg, err := config.Load(nil, func(string) string { return "" })
	if err != nil {
		return cfg, err
	}
	cfg.WALDir = filepath.Join(dir, "wal")
	cfg.Catalog = "sqlite:" + filepath.Join(dir, "catalog.db")
	cfg.Warehouse = filepath.Join(dir, "warehouse")
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.BufferAddr = "127.0.0.1:0"          // the rows of the commit batching delay, for siglake tail
	cfg.CommitBatchMaxAge = 2 * time.Second // livelier than production's 10 s for a short demo
	cfg.NodeName = "demo"
	return cfg, nil
}

// printProgress prints one progress line and returns the overlap depth per table it saw.
func printProgress(out io.Writer, p *sidecar.Process, elapsed time.Duration) map[string]int {
	fams, _ := p.Metrics.Reg.Gather()
	sum := func(name string, label ...string) float64 {
		total := 0.0
		for _, f := range fams {
			if f.GetName() != name {
				continue
			}
			for _, m := range f.GetMetric() {
				if len(label) == 2 && !hasLabel(m, label[0], label[1]) {
					continue
				}
				if m.GetCounter() != nil {
					total += m.GetCounter().GetValue()
				} else if m.GetGauge() != nil {
					total += m.GetGauge().GetValue()
				}
			}
		}
		return total
	}
	depths := ""
	seen := map[string]int{}
	for _, f := range fams {
		if f.GetName() != "siglake_table_overlap_depth" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				depths += fmt.Sprintf(" %s=%.0f", l.GetValue(), m.GetGauge().GetValue())
				seen[l.GetValue()] = int(m.GetGauge().GetValue())
			}
		}
	}
	if depths == "" {
		depths = " (not sampled yet)"
	}
	fmt.Fprintf(out, "[%5.0fs] segments drained %-5.0f commits %-4.0f rows %-9.0f backlog %-3.0f rewrites %-3.0f overlap depth%s\n",
		elapsed.Seconds(), sum("siglake_drain_segments_total"), sum("siglake_drain_commits_total", "outcome", "committed"),
		sum("siglake_drain_rows_total"), sum("siglake_wal_sealed_segments"), sum("siglake_compactor_rewrites_total", "outcome", "committed"), depths)
	return seen
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// demoSummary prints each table's summary and the commands to look further. It writes the live
// data files of each table's current snapshot to DIR/TABLE.live-files.txt for the DuckDB hint.
func demoSummary(ctx context.Context, out io.Writer, cfg config.Config, dir string, tables []string, sealed map[string]*rowsum.Sum, peak map[string]int) error {
	l, err := lake.Open(ctx, config.LakeConfig(cfg))
	if err != nil {
		return err
	}
	defer l.Close()
	sort.Strings(tables)
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TABLE\tROWS\tFILES\tBYTES\tPARTITIONS\tPEAK DEPTH\tDEPTH NOW\tROWS SEALED\tEXACTLY ONCE")
	ok := true
	metadata := map[string]string{} // current metadata file per table
	for _, name := range tables {
		t, err := l.LoadTable(ctx, name)
		if err != nil {
			return err
		}
		files, err := lake.LiveFiles(ctx, t)
		if err != nil {
			return err
		}
		if err := writeLiveFileList(demoLiveFileList(dir, name), files); err != nil {
			return err
		}
		metadata[name] = localPath(t.MetadataLocation())
		var rows, bytes int64
		parts := map[string][]level.File{}
		for _, f := range files {
			rows += f.Rows
			bytes += f.Size
			parts[f.Partition] = append(parts[f.Partition], maintain.PlanFile(f))
		}
		depth := 0
		for _, pf := range parts {
			d, _ := level.Depth(pf)
			depth = max(depth, d)
		}
		got, err := rowsum.Table(ctx, t, walgen.Columns...)
		if err != nil {
			return err
		}
		same := got == *sealed[name]
		ok = ok && same
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%v\n", name, rows, len(files), sidecar.HumanBytes(bytes), len(parts), max(peak[name], depth), depth, sealed[name].Rows, same)
	}
	tw.Flush()
	fmt.Fprintf(out, "\nPEAK DEPTH is the deepest overlap the maintenance loop measured during the run; leveled rewrites bring it down.\n")
	fmt.Fprintf(out, "\"exactly once\" compares an order-independent fingerprint of every sealed row with the table read back through iceberg-go.\n")
	fmt.Fprintf(out, "Inspect further (in a checkout without the binary installed, write `go run ./cmd/siglake` for `siglake`):\n  siglake inspect --dir %s\n  siglake inspect events --dir %s\n  siglake compactor --wal-dir %s --catalog %s --warehouse %s --http-addr 127.0.0.1:9464\n  siglake status\n(siglake demo --keep-running leaves a sidecar up on the lake at the end.)\n",
		dir, dir, cfg.WALDir, cfg.Catalog, cfg.Warehouse)
	if m, ok := metadata[walgen.EventsTable]; ok {
		iceberg, parquet := demoDuckDBHints(m, demoLiveFileList(dir, walgen.EventsTable))
		fmt.Fprintf(out, "Count a table's rows with DuckDB (the warehouse also keeps files that rewrites replaced, so a glob over its data/ counts rows twice or more):\n")
		fmt.Fprintf(out, "  %s\n", shellDuckDB(iceberg))
		fmt.Fprintf(out, "without DuckDB's iceberg extension, over the data files live when the demo ended (listed in %s; other tables alike; after further compaction or gc the list is stale, and the iceberg_scan above reads the metadata it names):\n", demoLiveFileList(dir, walgen.EventsTable))
		fmt.Fprintf(out, "  %s\n", shellDuckDB(parquet))
	}
	if !ok {
		return fmt.Errorf("a table's rows differ from the rows sealed into the WAL")
	}
	return nil
}

// demoLiveFileList is where the demo lists table's live data files.
func demoLiveFileList(dir, table string) string {
	return filepath.Join(dir, table+".live-files.txt")
}

// writeLiveFileList writes the local paths of files to path, one a line.
func writeLiveFileList(path string, files []lake.File) error {
	var b strings.Builder
	for _, f := range files {
		b.WriteString(localPath(f.Path))
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write the live file list: %w", err)
	}
	return nil
}

// localPath turns a file:// location of the local warehouse into a plain path.
func localPath(p string) string {
	if rest, ok := strings.CutPrefix(p, "file://"); ok {
		return rest
	}
	return p
}

// demoDuckDBHints returns two DuckDB scripts that count a table's rows: iceberg_scan on its
// current metadata file (needs the iceberg extension), and read_parquet over the data files
// listed in liveList. A table function takes no subquery, so the list goes through a variable.
func demoDuckDBHints(metadata, liveList string) (iceberg, parquet string) {
	iceberg = fmt.Sprintf("INSTALL iceberg; LOAD iceberg; SELECT count(*) FROM iceberg_scan(%s)", sqlString(metadata))
	return iceberg, overLiveFiles(liveList, "count(*)")
}

// overLiveFiles is a DuckDB script that selects what over the data files listed in liveList.
func overLiveFiles(liveList, what string) string {
	return fmt.Sprintf("SET VARIABLE live = (SELECT list(path) FROM read_csv(%s, header = false, delim = '\\t', quote = '', columns = {'path': 'VARCHAR'})); "+
		"SELECT %s FROM read_parquet(getvariable('live'))", sqlString(liveList), what)
}

// sqlString quotes s as a SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// shellDuckDB is a `duckdb -c` command line that runs script, in double quotes for a POSIX shell.
func shellDuckDB(script string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`")
	return `duckdb -c "` + r.Replace(script) + `"`
}

// Compact runs maintenance passes (the real planner and merges) until the planner finds
// nothing to do, so the summary shows where leveled compaction takes the tables (and
// bench/search measures reads after compaction).
func Compact(ctx context.Context, out io.Writer, cfg config.Config, log *zap.Logger) error {
	l, err := lake.Open(ctx, config.LakeConfig(cfg))
	if err != nil {
		return err
	}
	defer l.Close()
	pc, err := config.PlanConfig(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "running maintenance passes until the planner has nothing left to do...\n")
	for pass := 1; pass <= 6; pass++ {
		// A fresh maintainer has every level check due, like a newly elected owner.
		st := sidecar.NewStatus("demo", config.RoleAll, "demo", time.Now())
		m := &maintain.Maintainer{Cfg: sidecar.MaintainConfig(cfg), Plan: pc, Lake: l, Metrics: sidecar.NewMetrics().Maintain, Publish: st,
			Log: log, Now: time.Now}
		rep, err := m.Cycle(ctx)
		if err != nil {
			return err
		}
		snap := st.Snapshot(time.Now())
		var parts []string
		for _, name := range sortedTables(snap.Tables) {
			if ms := snap.Tables[name].Maintenance; ms != nil && ms.LastPass != nil {
				parts = append(parts, fmt.Sprintf("%s: %d bins", name, len(ms.LastPass.Bins)))
			}
		}
		fmt.Fprintf(out, "  pass %d: %d rewrites committed (%s)\n", pass, rep.Rewrites, strings.Join(parts, ", "))
		if rep.Rewrites == 0 {
			break
		}
	}
	return nil
}

func sortedTables(m map[string]*sidecar.TableReport) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
