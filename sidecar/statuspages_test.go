package sidecar

import (
	"github.com/siglake/siglake/sidecar/config"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/maintain"
	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/plan/level"
)

// TestStatusPagesServed: the HTML pages are on the status listener, rendered from what the loops
// published (a maintained table's partitions as timelines), with the index at / and /status; an
// unknown table's page is a 404.
func TestStatusPagesServed(t *testing.T) {
	now := time.Now().UTC()
	st := NewStatus("pod-0", config.RoleAll, "test", now)
	files := []level.File{
		{Path: "a.parquet", Partition: "2026-12-03", SizeBytes: 10, MinTime: now.Add(-time.Hour).UnixMicro(), MaxTime: now.UnixMicro()},
		{Path: "b.parquet", Partition: "2026-12-03", SizeBytes: 10, MinTime: now.Add(-30 * time.Minute).UnixMicro(), MaxTime: now.UnixMicro()},
	}
	st.Maintenance("events", &maintain.State{SampledAt: now, FilesPerLevel: map[string]int{"L0": 2}, BytesPerLevel: map[string]int{"L0": 20},
		OverlapDepth: 2, Partitions: maintain.Partitions(files, plan.DefaultConfig())})
	st.Deletes("events", &sweep.State{Pending: []sweep.PendingRequest{{ID: "req-1", Table: "events", State: "waiting", CreatedAt: now, ExecuteAt: now.Add(time.Hour)}}})
	st.Owned([]string{"events"})
	srv := httptest.NewServer(Handler(NewMetrics(), st, &Readiness{}, time.Now))
	defer srv.Close()
	get := func(path string) (int, string, string) {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	for path, want := range map[string]string{
		"/":                    `href="/status/table/events"`,
		"/status":              `href="/debug/status"`,
		"/status/ring":         "Table leases",
		"/status/deletions":    "req-1",
		"/status/table/events": `<rect class="file"`,
	} {
		code, ctype, body := get(path)
		if code != http.StatusOK || !strings.HasPrefix(ctype, "text/html") || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d %s, want 200 text/html with %q:\n%s", path, code, ctype, want, body)
		}
	}
	if _, _, body := get("/status/table/events"); strings.Count(body, `<rect class="file"`) != 2 {
		t.Errorf("the table page draws %d files, want 2", strings.Count(body, `<rect class="file"`))
	}
	if code, _, _ := get("/status/table/nosuch"); code != http.StatusNotFound {
		t.Errorf("unknown table: %d, want 404", code)
	}
	if code, _, _ := get("/nosuch"); code != http.StatusNotFound {
		t.Errorf("GET /nosuch: %d, want 404 (only / itself is the index)", code)
	}
}
