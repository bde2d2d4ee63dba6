package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/lake/objstore"
	"github.com/siglake/siglake/sidecar/search"
	"github.com/siglake/siglake/test/testenv"
)

// searchQuery is one typical query: the flags of `siglake search` and DuckDB's WHERE clause for
// the same rows over the live files.
type searchQuery struct {
	name  string
	args  []string
	where string
	limit int
	desc  bool
}

// typicalQueries are the queries of docs/search.md and docs/benchmarks.md, with values taken from
// the table (through DuckDB) so each one returns rows.
func typicalQueries(t *testing.T, duck *testenv.Duck, files []string) []searchQuery {
	t.Helper()
	list := duckList(files)
	last := duck.Query("SELECT epoch_us(max(timestamp))::VARCHAR AS t FROM read_parquet(" + list + ")")
	var lastUs int64
	fmt.Sscan(fmt.Sprint(last[0]["t"]), &lastUs)
	end := time.UnixMicro(lastUs).UTC()
	trace := duck.Query("SELECT trace_id FROM read_parquet(" + list + ") WHERE trace_id IS NOT NULL ORDER BY timestamp LIMIT 1 OFFSET 777")[0]["trace_id"].(string)
	day := end.Truncate(24 * time.Hour)
	hour := end.Add(-time.Hour)
	rfc := func(t time.Time) string { return t.Format(time.RFC3339Nano) }
	us := func(t time.Time) string { return fmt.Sprint(t.UnixMicro()) }
	dayWhere := fmt.Sprintf("epoch_us(timestamp) >= %s AND epoch_us(timestamp) < %s", us(day), us(day.Add(24*time.Hour)))
	five := end.Add(-5 * time.Minute).Truncate(time.Second)
	return []searchQuery{
		{name: "last 5 minutes, newest 100", args: []string{"--from", rfc(five), "--order", "desc", "--limit", "100"},
			where: "epoch_us(timestamp) >= " + us(five), limit: 100, desc: true},
		{name: "a trace id over a day", args: []string{"--from", rfc(day), "--to", rfc(day.Add(24 * time.Hour)), "--where", "trace_id=" + trace, "--limit", "0"},
			where: dayWhere + " AND trace_id = '" + trace + "'"},
		{name: "a substring over an hour", args: []string{"--from", rfc(hour), "--contains", "payment authorized", "--limit", "500"},
			where: "epoch_us(timestamp) >= " + us(hour) + " AND contains(raw, 'payment authorized')", limit: 500},
		{name: "a service over a day", args: []string{"--from", rfc(day), "--to", rfc(day.Add(24 * time.Hour)), "--where", "service=billing", "--limit", "1000"},
			where: dayWhere + " AND service = 'billing'", limit: 1000},
	}
}

func duckList(files []string) string {
	q := make([]string, len(files))
	for i, f := range files {
		q[i] = "'" + strings.ReplaceAll(f, "'", "''") + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// duckRows answers q with DuckDB over the files, in the order search promises: timestamp, then
// file path, then row in the file (all reversed for desc).
func duckRows(duck *testenv.Duck, files []string, q searchQuery) []string {
	dir := ""
	if q.desc {
		dir = " DESC"
	}
	sql := fmt.Sprintf(`SELECT strftime(timestamp AT TIME ZONE 'UTC', '%%Y-%%m-%%dT%%H:%%M:%%S.%%fZ') AS ts, service, trace_id, raw
		FROM read_parquet(%s, filename = true, file_row_number = true) WHERE %s
		ORDER BY timestamp%s, filename%s, file_row_number%s`, duckList(files), q.where, dir, dir, dir)
	if q.limit > 0 {
		sql += fmt.Sprintf(" LIMIT %d", q.limit)
	}
	var out []string
	for _, r := range duck.Query(sql) {
		out = append(out, rowText(r["ts"], r["service"], r["trace_id"], r["raw"]))
	}
	return out
}

func rowText(vs ...any) string {
	var b strings.Builder
	for _, v := range vs {
		if v == nil {
			b.WriteString("<null>|")
			continue
		}
		fmt.Fprintf(&b, "%v|", v)
	}
	return b.String()
}

// runSearch runs `siglake search` with --format json --explain and returns its rows and report.
func (s *site) runSearch(table string, args ...string) ([]string, search.Explain) {
	s.t.Helper()
	cmd := exec.Command(bin, append([]string{"search", table, "--catalog", s.catalog, "--warehouse", s.warehouse,
		"--format", "json", "--explain", "--columns", "service,trace_id,raw"}, args...)...)
	cmd.Env = append(os.Environ(), s.extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		s.t.Fatalf("siglake search %v: %v\n%s", args, err, stderr.String())
	}
	var rows []string
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			s.t.Fatalf("search output line %q: %v", sc.Text(), err)
		}
		rows = append(rows, rowText(r["timestamp"], r["service"], r["trace_id"], r["raw"]))
	}
	var ex search.Explain
	if err := json.Unmarshal(stderr.Bytes(), &ex); err != nil {
		s.t.Fatalf("search --explain output %q: %v", stderr.String(), err)
	}
	return rows, ex
}

// checkExplain holds the report's books: at each stage pruned + read = considered, and the rows
// it counts are the rows printed.
func checkExplain(t *testing.T, name string, ex search.Explain, printed int) {
	t.Helper()
	for stage, st := range map[string]search.Stage{"files": ex.Files, "row groups": ex.RowGroups} {
		if st.PrunedTotal()+st.Read != st.Considered {
			t.Errorf("%s: %s pruned %v + read %d != considered %d", name, stage, st.Pruned, st.Read, st.Considered)
		}
	}
	if ex.RowsReturned != int64(printed) || ex.RowsMatched < ex.RowsReturned || ex.RowsExamined < ex.RowsMatched {
		t.Errorf("%s: rows examined %d, matched %d, returned %d, printed %d", name, ex.RowsExamined, ex.RowsMatched, ex.RowsReturned, printed)
	}
}

// searchScenario runs the typical queries on a site's events table with and without the search
// metadata: the rows equal DuckDB's over the live files, and the counters add up.
func searchScenario(t *testing.T, s *site) map[string][2]search.Explain {
	duck := testenv.DuckDB(t)
	var files []string
	for _, f := range s.liveFiles("events") {
		files = append(files, s.localPath(f))
	}
	slices.Sort(files)
	out := map[string][2]search.Explain{}
	for _, q := range typicalQueries(t, duck, files) {
		want := duckRows(duck, files, q)
		if len(want) == 0 {
			t.Fatalf("%s: DuckDB finds no rows; the query tests nothing", q.name)
		}
		got, ex := s.runSearch("events", q.args...)
		if !slices.Equal(got, want) {
			t.Errorf("%s: search returned %d rows, DuckDB %d\nsearch %.400q\nduckdb %.400q", q.name, len(got), len(want), got, want)
		}
		checkExplain(t, q.name, ex, len(got))
		bare, exBare := s.runSearch("events", append(q.args, "--skip-metadata")...)
		if !slices.Equal(bare, got) {
			t.Errorf("%s: without metadata %d rows, with %d: promise 7", q.name, len(bare), len(got))
		}
		checkExplain(t, q.name+" (--skip-metadata)", exBare, len(bare))
		t.Logf("%s: %d rows; files %d/%d read, row groups %d/%d, %d bytes in %d requests (without metadata: %d bytes, %d requests)",
			q.name, len(got), ex.Files.Read, ex.Files.Considered, ex.RowGroups.Read, ex.RowGroups.Considered, ex.BytesRead(), ex.Requests(),
			exBare.BytesRead(), exBare.Requests())
		out[q.name] = [2]search.Explain{ex, exBare}
	}
	return out
}

// TestSearchAfterDemo: after a demo run (drain and compaction on the embedded default), the typical
// queries give DuckDB's rows, with and without metadata, and bad input is refused by name.
func TestSearchAfterDemo(t *testing.T) {
	dir := t.TempDir()
	demo := exec.Command(bin, "demo", "--dir", dir, "--duration", "6s", "--rate", "5000", "--http-addr", "127.0.0.1:0")
	if out, err := demo.CombinedOutput(); err != nil {
		t.Fatalf("siglake demo: %v\n%s", err, out)
	}
	s := &site{t: t, catalog: "sqlite:" + filepath.Join(dir, "catalog.db"), warehouse: filepath.Join(dir, "warehouse")}
	searchScenario(t, s)

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--where", "nosuch=1"}, `--where column "nosuch": the table has no such column`},
		{[]string{"--columns", "nosuch"}, `--columns "nosuch": the table has no such column`},
		{[]string{"--from", "yesterday"}, `--from "yesterday": accepted: RFC 3339`},
		{[]string{"--to", "2026-13-01"}, `--to "2026-13-01"`},
		{[]string{"--contains", ""}, `--contains "": an empty substring`},
		{[]string{"--token", "two words"}, `--token "two words": not a single token`},
		{[]string{"--order", "up"}, `--order "up": accepted: asc, desc`},
	} {
		cmd := exec.Command(bin, append([]string{"search", "events", "--dir", dir}, c.args...)...)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("siglake search %q: err %v, output %q; want an error containing %q", c.args, err, out, c.want)
		}
	}
}

// TestBackendsSearch: on S3 (versitygw) and PostgreSQL, search reads with ranged GETs and gives
// DuckDB's rows.
func TestBackendsSearch(t *testing.T) {
	s := newBackendSite(t, "", "")
	s.walgen("pod-0", 60000, 3)
	r := s.start(nil)
	r.waitDrained(90 * time.Second)
	r.stop()
	res := searchScenario(t, s)
	for name, ex := range res {
		os := ex[0].ObjectStore
		if os == nil || os.Requests == 0 {
			t.Errorf("%s: no object-store requests measured: %+v", name, os)
		}
	}
	// What docs/search.md says a file costs on S3: its open is one whole-object GET, each read one
	// ranged GET, and --explain counts both. Two queries with the same planning (so the same
	// metadata and manifest GETs) that open one file and every file differ by exactly that.
	_, one := s.runSearch("events", "--limit", "1")
	_, all := s.runSearch("events", "--limit", "0", "--skip-metadata")
	opened := func(ex search.Explain) int64 {
		return ex.Files.Considered - ex.Files.Pruned[search.ByManifest] - ex.Files.Pruned[search.ByLimit]
	}
	if opened(all) <= opened(one) {
		t.Fatalf("the queries open %d and %d files: the comparison tests nothing", opened(one), opened(all))
	}
	gets := func(ex search.Explain, op objstore.Op) int64 { return ex.ObjectStoreOps[op].Requests }
	if d, want := gets(all, objstore.OpGet)-gets(one, objstore.OpGet), opened(all)-opened(one); d != want {
		t.Errorf("whole-object GETs: %d more opening %d files than %d, want one per opened file (%d)\none %+v\nall %+v",
			d, opened(all), opened(one), want, one.ObjectStoreOps, all.ObjectStoreOps)
	}
	store := func(ex search.Explain) int64 { return gets(ex, objstore.OpGet) + gets(ex, objstore.OpRangedGet) }
	if d, want := store(all)-store(one), all.Requests()-one.Requests(); d != want {
		t.Errorf("GETs: %d more on the store, %d more in --explain: --explain must count every request", d, want)
	}
	t.Logf("one file: %d opened, %v; every file: %d opened, %v", opened(one), one.ObjectStoreOps, opened(all), all.ObjectStoreOps)
}
