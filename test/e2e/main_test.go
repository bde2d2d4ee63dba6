// Package e2e runs the real siglake binary: crash loops, lost commit responses, multi-process runs.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
	"github.com/siglake/siglake/test/testenv"
)

// bin is the siglake binary built once for the package.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "siglake-e2e-bin")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "siglake")
	build := exec.Command("go", "build", "-o", bin, "./cmd/siglake")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build siglake: %v\n%s", err, out)
		os.Exit(1)
	}
	// gc runs here on objects seconds old: its floor (12 x --commit-timeout) must go below the
	// 5s the options accept. A test hook the binaries inherit, not an option.
	os.Setenv("SIGLAKE_TESTONLY_MIN_COMMIT_TIMEOUT", "1ms")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// site is one sidecar's WAL plus the catalog and warehouse it commits to.
type site struct {
	t         *testing.T
	wal       string
	catalog   string
	warehouse string
	extraEnv  []string
	// s3 is the test S3 server when the warehouse is s3:// (zero for a local warehouse); the
	// harness's own reads (tableSum, checkDuckDB) go to it directly, never through a fault proxy.
	s3 testenv.S3Env
}

func newSite(t *testing.T) *site {
	dir := t.TempDir()
	s := &site{t: t, wal: filepath.Join(dir, "wal"), catalog: "sqlite:" + filepath.Join(dir, "catalog.db"),
		warehouse: filepath.Join(dir, "warehouse")}
	if err := os.MkdirAll(s.wal, 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

// newBackendSite is a site on the production backends: an Iceberg SQL catalog in a fresh
// PostgreSQL database (catalogDSN, or a new one when empty) and a fresh s3:// warehouse on
// versitygw. s3Endpoint is the endpoint the binary uses (a fault proxy; empty = the server).
func newBackendSite(t *testing.T, catalogDSN, s3Endpoint string) *site {
	s3 := testenv.S3(t)
	if catalogDSN == "" {
		catalogDSN = testenv.PostgresDB(t)
	}
	if s3Endpoint == "" {
		s3Endpoint = s3.Endpoint
	}
	s := newSite(t)
	s.catalog, s.warehouse, s.s3 = catalogDSN, s3.Warehouse(t), s3
	s.extraEnv = []string{"SIGLAKE_S3_ENDPOINT=" + s3Endpoint, "SIGLAKE_S3_REGION=" + s3.Region,
		"SIGLAKE_S3_ACCESS_KEY=" + s3.AccessKey, "SIGLAKE_S3_SECRET_KEY=" + s3.SecretKey, "SIGLAKE_S3_PATH_STYLE=true"}
	return s
}

// lakeConfig is how the harness itself opens the site's catalog (directly, without proxies).
func (s *site) lakeConfig() lake.Config {
	c := lake.Config{Catalog: s.catalog, Warehouse: s.warehouse, Namespace: "siglake"}
	if s.s3.Endpoint != "" {
		c.S3Endpoint, c.S3Region, c.S3AccessKey, c.S3SecretKey, c.S3PathStyle = s.s3.Endpoint, s.s3.Region, s.s3.AccessKey, s.s3.SecretKey, true
	}
	return c
}

// localPath is where DuckDB finds a data file of the site.
func (s *site) localPath(loc string) string {
	if strings.HasPrefix(loc, "s3://") {
		p, err := s.s3.LocalPath(loc)
		if err != nil {
			s.t.Fatal(err)
		}
		return p
	}
	return strings.TrimPrefix(loc, "file://")
}

type walgenResult struct {
	Rows        int64      `json:"rows"`
	Segments    int        `json:"segments"`
	Fingerprint rowsum.Sum `json:"fingerprint"`
}

// walgen writes rows into the site's WAL with the real binary and returns what it sealed.
func (s *site) walgen(stream string, rows int, seed int, extra ...string) walgenResult {
	s.t.Helper()
	args := append([]string{"walgen", "--wal-dir", s.wal, "--stream", stream, "--rows", fmt.Sprint(rows),
		"--seed", fmt.Sprint(seed), "--batch-rows", "500", "--segment-mb", "0.05", "--late-fraction", "0.05", "--json"}, extra...)
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		s.t.Fatalf("walgen: %v", err)
	}
	var r walgenResult
	if err := json.Unmarshal(out, &r); err != nil {
		s.t.Fatalf("walgen output %q: %v", out, err)
	}
	return r
}

// compactor starts `siglake compactor` on the site; its log lines go to lines (may be nil).
func (s *site) compactor(lines chan<- string, args ...string) *exec.Cmd {
	s.t.Helper()
	base := []string{"compactor", "--wal-dir", s.wal, "--catalog", s.catalog, "--warehouse", s.warehouse,
		"--http-addr", "127.0.0.1:0", "--log-format", "json", "--drain-poll-interval", "20ms",
		"--commit-batch-target-mb", "0", "--commit-batch-max-age-secs", "0"}
	cmd := exec.Command(bin, append(base, args...)...)
	cmd.Env = append(os.Environ(), s.extraEnv...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if lines != nil {
				select {
				case lines <- sc.Text():
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	return cmd
}

// drainOnce runs `siglake compactor --once` to completion.
func (s *site) drainOnce() {
	s.t.Helper()
	cmd := exec.Command(bin, "compactor", "--once", "--wal-dir", s.wal, "--catalog", s.catalog, "--warehouse", s.warehouse,
		"--http-addr", "127.0.0.1:0", "--log-format", "json")
	cmd.Env = append(os.Environ(), s.extraEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("compactor --once: %v\n%s", err, tail(string(out), 3000))
	}
}

// table loads a table of the site and its live files; the catalog handle closes with the test.
func (s *site) table(name string) (*table.Table, []lake.File) {
	s.t.Helper()
	ctx := context.Background()
	l, err := lake.Open(ctx, s.lakeConfig())
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { l.Close() })
	tbl, err := l.LoadTable(ctx, name)
	if err != nil {
		s.t.Fatal(err)
	}
	files, err := lake.LiveFiles(ctx, tbl)
	if err != nil {
		s.t.Fatal(err)
	}
	return tbl, files
}

// tableSum reads the table back through iceberg-go.
func (s *site) tableSum(name string) rowsum.Sum {
	s.t.Helper()
	tbl, _ := s.table(name)
	sum, err := rowsum.Table(context.Background(), tbl, walgen.Columns...)
	if err != nil {
		s.t.Fatal(err)
	}
	return sum
}

// checkDuckDB has DuckDB read every live data file of the table and compares row counts,
// timestamp bounds and the row checksum with what iceberg-go reads.
func (s *site) checkDuckDB(name string) {
	s.t.Helper()
	duck := testenv.DuckDB(s.t)
	ctx := context.Background()
	tbl, files := s.table(name)
	paths := testenv.TableFiles(s.t, tbl, s.s3)
	got := duck.SummarizeWith(paths, testenv.SummaryOptions{ChecksumColumns: walgen.Columns})
	byPath := map[string]testenv.FileSummary{}
	for _, f := range got.Files {
		byPath[f.Path] = f
	}
	var want testenv.RowSum
	_, recs, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	for rec, err := range recs {
		if err != nil {
			s.t.Fatal(err)
		}
		if err := want.Add(rec, walgen.Columns...); err != nil {
			s.t.Fatal(err)
		}
		rec.Release()
	}
	if got.Rows != want.Rows || got.Checksum != want.Sum {
		s.t.Fatalf("DuckDB reads %d rows checksum %d; iceberg-go reads %d rows checksum %d", got.Rows, got.Checksum, want.Rows, want.Sum)
	}
	for _, f := range files {
		d, ok := byPath[s.localPath(f.Path)]
		if !ok {
			s.t.Fatalf("DuckDB summary lacks %s", f.Path)
		}
		lo, _ := d.Min()
		hi, _ := d.Max()
		if d.Rows != f.Rows || lo != f.MinTime || hi != f.MaxTime {
			s.t.Fatalf("%s: DuckDB rows %d [%d,%d], manifest rows %d [%d,%d]", f.Path, d.Rows, lo, hi, f.Rows, f.MinTime, f.MaxTime)
		}
	}
	s.t.Logf("DuckDB agrees: %d files, %d rows, checksum %d", len(files), got.Rows, got.Checksum)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// freePort returns a free TCP port on 127.0.0.1.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
