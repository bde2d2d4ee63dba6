package restcat

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/catalogtest"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
)

// start runs a server on a local warehouse for one test.
func start(t *testing.T) *Server {
	t.Helper()
	s, err := Start(Config{Warehouse: "file://" + t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// client is iceberg-go's REST client on s.
func client(t *testing.T, s *Server) *rest.Catalog {
	t.Helper()
	c, err := rest.NewCatalog(context.Background(), "client", s.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestConformance runs iceberg-go's own catalog conformance suite (catalog/catalogtest, written
// for every catalog.Catalog implementation) through iceberg-go's REST client against the server.
func TestConformance(t *testing.T) {
	catalogtest.RunCatalogTests(t, catalogtest.Config{
		SupportsNamespaceProperties: true,
		NewCatalog: func(t *testing.T) catalog.Catalog {
			return client(t, start(t))
		},
	})
}

// TestListensOnLoopbackOnly: the server is reachable on 127.0.0.1 and nowhere else.
func TestListensOnLoopbackOnly(t *testing.T) {
	s := start(t)
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := net.SplitHostPort(u.Host)
	if host != "127.0.0.1" {
		t.Fatalf("URL %s: host %q, want 127.0.0.1", s.URL, host)
	}
	if ip := s.ln.Addr().(*net.TCPAddr).IP; !ip.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Fatalf("listener bound to %v, want 127.0.0.1 only", ip)
	}
}

var schema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "timestamp", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
	iceberg.NestedField{ID: 2, Name: "service", Type: iceberg.PrimitiveTypes.String},
)

// siglakeTable creates ns.name as siglake does: partitioned by day(timestamp), sorted by it.
func siglakeTable(t *testing.T, c catalog.Catalog, ns, name string) *table.Table {
	t.Helper()
	ctx := context.Background()
	if err := c.CreateNamespace(ctx, table.Identifier{ns}, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		t.Fatal(err)
	}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "timestamp_day", Transform: iceberg.DayTransform{}})
	order, err := table.NewSortOrder(1, []table.SortField{{SourceIDs: []int{1}, Transform: iceberg.IdentityTransform{},
		Direction: table.SortASC, NullOrder: table.NullsFirst}})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := c.CreateTable(ctx, table.Identifier{ns, name}, schema, catalog.WithPartitionSpec(&spec),
		catalog.WithSortOrder(order), catalog.WithProperties(iceberg.Properties{"format-version": "2", "k": "v"}))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// TestTables covers what the conformance suite leaves out and siglake uses: a partitioned and
// sorted create, commits with requirements (an empty snapshot pinned to main, as siglake's CAS
// commits are), a commit that lost the race (409 -> table.ErrCommitFailed), listing with pages,
// rename, drop.
func TestTables(t *testing.T) {
	ctx := context.Background()
	s := start(t)
	c := client(t, s)
	tbl := siglakeTable(t, c, "ns", "events")
	spec := tbl.Spec()
	if f := spec.Field(0); f.Name != "timestamp_day" || f.Transform.String() != "day" {
		t.Fatalf("partition field %+v", f)
	}
	if tbl.SortOrder().Len() != 1 || tbl.Properties()["k"] != "v" {
		t.Fatalf("sort order %v, properties %v", tbl.SortOrder(), tbl.Properties())
	}

	// Two commits from the same state, both pinning main: the first wins, the second is refused.
	commit := func(base *table.Table, key string) (*table.Table, error) {
		txn := base.NewTransaction()
		if err := txn.AssertRefSnapshotID(table.MainBranch); err != nil {
			t.Fatal(err)
		}
		if err := txn.AddFiles(ctx, nil, nil, true); err != nil {
			t.Fatal(err)
		}
		if err := txn.SetProperties(iceberg.Properties{key: "1"}); err != nil {
			t.Fatal(err)
		}
		return txn.Commit(ctx)
	}
	first, err := commit(tbl, "first")
	if err != nil {
		t.Fatal(err)
	}
	if first.CurrentSnapshot() == nil || first.Properties()["first"] != "1" {
		t.Fatalf("commit answer: snapshot %v, properties %v", first.CurrentSnapshot(), first.Properties())
	}
	_, err = commit(tbl, "second")
	if !errors.Is(err, table.ErrCommitFailed) {
		t.Fatalf("a commit from a stale state: %v, want table.ErrCommitFailed", err)
	}
	loaded, err := c.LoadTable(ctx, table.Identifier{"ns", "events"})
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Properties()["second"] != "" || loaded.CurrentSnapshot().SnapshotID != first.CurrentSnapshot().SnapshotID {
		t.Fatalf("the refused commit left traces: %v", loaded.Properties())
	}

	// A commit to a table that does not exist is a 404, not a create.
	_, _, err = c.CommitTable(ctx, table.Identifier{"ns", "nope"}, nil, []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"a": "b"})})
	if !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Fatalf("commit to a missing table: %v", err)
	}
	if ok, _ := c.CheckTableExists(ctx, table.Identifier{"ns", "nope"}); ok {
		t.Fatal("the commit to a missing table created it")
	}

	// Listing in pages of one.
	for _, n := range []string{"b", "a"} {
		siglakeTable(t, c, "ns", n)
	}
	var names []string
	for id, err := range c.ListTables(c.SetPageSize(ctx, 1), table.Identifier{"ns"}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, id[1])
	}
	if !slices.Equal(names, []string{"a", "b", "events"}) {
		t.Fatalf("tables %v", names)
	}
	if n := s.Requests()["listTables"]; n != 3 {
		t.Fatalf("%d listTables requests for three tables in pages of one, want 3", n)
	}

	// Rename (across namespaces) and drop.
	if err := c.CreateNamespace(ctx, table.Identifier{"other"}, nil); err != nil {
		t.Fatal(err)
	}
	moved, err := c.RenameTable(ctx, table.Identifier{"ns", "a"}, table.Identifier{"other", "a2"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(moved.Identifier(), table.Identifier{"other", "a2"}) {
		t.Fatalf("renamed table %v", moved.Identifier())
	}
	// iceberg-go maps no 409 of a rename; the spec's AlreadyExistsException comes through as text.
	if _, err := c.RenameTable(ctx, table.Identifier{"ns", "b"}, table.Identifier{"ns", "events"}); err == nil ||
		!strings.Contains(err.Error(), "AlreadyExistsException") {
		t.Fatalf("rename onto an existing table: %v", err)
	}
	if err := c.DropTable(ctx, table.Identifier{"other", "a2"}); err != nil {
		t.Fatal(err)
	}
	if err := c.DropTable(ctx, table.Identifier{"other", "a2"}); !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Fatalf("drop of a dropped table: %v", err)
	}
	if err := c.DropNamespace(ctx, table.Identifier{"other"}); err != nil {
		t.Fatal(err)
	}
	nss, err := c.ListNamespaces(ctx, nil)
	if err != nil || len(nss) != 1 || nss[0][0] != "ns" {
		t.Fatalf("namespaces %v (%v)", nss, err)
	}
}

// TestNestedNamespaces: namespace levels travel joined by 0x1F, and a listing shows one level.
func TestNestedNamespaces(t *testing.T) {
	ctx := context.Background()
	c := client(t, start(t))
	for _, ns := range []table.Identifier{{"a"}, {"a", "b"}, {"a", "b", "c"}, {"d"}} {
		if err := c.CreateNamespace(ctx, ns, iceberg.Properties{"level": strings.Join(ns, ".")}); err != nil {
			t.Fatal(err)
		}
	}
	top, err := c.ListNamespaces(ctx, nil)
	if err != nil || !slices.EqualFunc(top, []table.Identifier{{"a"}, {"d"}}, slices.Equal) {
		t.Fatalf("top level %v (%v)", top, err)
	}
	under, err := c.ListNamespaces(ctx, table.Identifier{"a"})
	if err != nil || !slices.EqualFunc(under, []table.Identifier{{"a", "b"}}, slices.Equal) {
		t.Fatalf("under a: %v (%v)", under, err)
	}
	props, err := c.LoadNamespaceProperties(ctx, table.Identifier{"a", "b", "c"})
	if err != nil || props["level"] != "a.b.c" {
		t.Fatalf("a.b.c properties %v (%v)", props, err)
	}
	siglakeTable(t, c, "d", "t")
	if _, err := c.LoadTable(ctx, table.Identifier{"a", "b", "t"}); !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Fatalf("load of a table in another namespace: %v", err)
	}
}

// raw sends one request and returns the status, the Retry-After header and the decoded error body.
func raw(t *testing.T, method, u, body string) (int, string, errorModel) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Error errorModel `json:"error"`
	}
	if resp.StatusCode >= 400 && method != http.MethodHead {
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%s %s: %d with a body that is not an IcebergErrorResponse: %q", method, u, resp.StatusCode, b)
		}
		if e.Error.Code != resp.StatusCode || e.Error.Type == "" || e.Error.Message == "" {
			t.Fatalf("%s %s: %d with error body %+v", method, u, resp.StatusCode, e.Error)
		}
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), e.Error
}

// TestWireErrors checks status codes and error bodies on the wire against the spec.
func TestWireErrors(t *testing.T) {
	s := start(t)
	siglakeTable(t, client(t, s), "ns", "events")
	tbl := s.URL + "/v1/namespaces/ns/tables/events"
	cases := []struct {
		method, url, body string
		status            int
		typ               string
	}{
		{"GET", s.URL + "/v1/namespaces/ns/tables/nope", "", 404, "NoSuchTableException"},
		{"GET", s.URL + "/v1/namespaces/nope", "", 404, "NoSuchNamespaceException"},
		{"GET", s.URL + "/v1/namespaces/nope/tables", "", 404, "NoSuchNamespaceException"},
		{"POST", s.URL + "/v1/namespaces", `{"namespace":["ns"]}`, 409, "AlreadyExistsException"},
		{"DELETE", s.URL + "/v1/namespaces/ns", "", 409, "NamespaceNotEmptyException"},
		{"POST", s.URL + "/v1/namespaces/ns/tables", `{"name":"events","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"x","type":"int","required":false}]}}`, 409, "AlreadyExistsException"},
		{"POST", tbl, `{"requirements":[],"updates":[{"action":"frobnicate"}]}`, 400, "BadRequestException"},
		{"POST", tbl, `{"requirements":[{"type":"assert-frobnicated"}],"updates":[]}`, 400, "BadRequestException"},
		{"POST", tbl, `{"requirements":[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":42}],"updates":[{"action":"set-properties","updates":{"a":"b"}}]}`, 409, "CommitFailedException"},
		{"POST", tbl, `not json`, 400, "BadRequestException"},
		{"POST", s.URL + "/v1/namespaces/ns/tables/nope", `{"requirements":[],"updates":[]}`, 404, "NoSuchTableException"},
		{"POST", s.URL + "/v1/namespaces/ns/register", `{"name":"x","metadata-location":"file:///x"}`, 501, "NotImplementedException"},
	}
	for _, c := range cases {
		status, _, e := raw(t, c.method, c.url, c.body)
		if status != c.status || e.Type != c.typ {
			t.Errorf("%s %s %s: %d %s (%s), want %d %s", c.method, c.url, c.body, status, e.Type, e.Message, c.status, c.typ)
		}
	}
	if status, _, _ := raw(t, "HEAD", tbl, ""); status != http.StatusNoContent {
		t.Errorf("HEAD of an existing table: %d, want 204", status)
	}
	if status, _, _ := raw(t, "HEAD", s.URL+"/v1/namespaces/nope/tables/x", ""); status != http.StatusNotFound {
		t.Errorf("HEAD of a table in a missing namespace: %d, want 404", status)
	}
}

// setProp commits one property through iceberg-go's REST client, with no retry of its own.
func setProp(c *rest.Catalog, key string) error {
	_, _, err := c.CommitTable(context.Background(), table.Identifier{"ns", "events"}, nil,
		[]table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{key: "1"})})
	return err
}

// applied reads key from the catalog behind the server, past any fault.
func applied(t *testing.T, s *Server, key string) bool {
	t.Helper()
	tbl, err := s.Catalog().LoadTable(context.Background(), table.Identifier{"ns", "events"})
	if err != nil {
		t.Fatal(err)
	}
	return tbl.Properties()[key] == "1"
}

// TestFaults fires each fault once and checks what the client sees, what the catalog holds and
// that the fault is counted.
func TestFaults(t *testing.T) {
	s := start(t)
	c := client(t, s)
	siglakeTable(t, c, "ns", "events")

	s.Inject(ApplyThen503, 1)
	err := setProp(c, "a503")
	if !errors.Is(err, rest.ErrCommitStateUnknown) || !applied(t, s, "a503") {
		t.Fatalf("apply-then-503: client error %v (want rest.ErrCommitStateUnknown), applied %v", err, applied(t, s, "a503"))
	}

	s.Inject(ApplyThenCut, 1)
	err = setProp(c, "cut")
	if err == nil || errors.Is(err, table.ErrCommitFailed) || errors.Is(err, rest.ErrRESTError) || !applied(t, s, "cut") {
		t.Fatalf("apply-then-cut: client error %v (want a transport error), applied %v", err, applied(t, s, "cut"))
	}

	s.Inject(Conflict409, 1)
	err = setProp(c, "c409")
	if !errors.Is(err, table.ErrCommitFailed) || !errors.Is(err, rest.ErrCommitFailed) || applied(t, s, "c409") {
		t.Fatalf("409: client error %v (want table.ErrCommitFailed), applied %v", err, applied(t, s, "c409"))
	}

	s.SetFaults(Faults{RetryAfter: 1500 * time.Millisecond})
	s.Inject(Throttle429, 1)
	status, retryAfter, e := raw(t, "POST", s.URL+"/v1/namespaces/ns/tables/events",
		`{"requirements":[],"updates":[{"action":"set-properties","updates":{"t429":"1"}}]}`)
	if status != http.StatusTooManyRequests || retryAfter != "2" || e.Type != "TooManyRequestsException" || applied(t, s, "t429") {
		t.Fatalf("429: status %d, Retry-After %q, type %s, applied %v", status, retryAfter, e.Type, applied(t, s, "t429"))
	}

	// An injected apply-then fault whose commit fails on its own has not fired and waits.
	s.Inject(ApplyThen503, 1)
	if _, _, err := c.CommitTable(context.Background(), table.Identifier{"ns", "events"},
		[]table.Requirement{table.AssertRefSnapshotID(table.MainBranch, new(int64))}, nil); !errors.Is(err, table.ErrCommitFailed) {
		t.Fatalf("commit with a failing requirement: %v", err)
	}
	if s.Queued() != 1 {
		t.Fatalf("%d faults queued after a refused commit, want the apply-then-503 still waiting", s.Queued())
	}
	if err := setProp(c, "again"); !errors.Is(err, rest.ErrCommitStateUnknown) {
		t.Fatalf("the waiting apply-then-503: %v", err)
	}

	// Faults limited to other tables leave this one alone.
	s.SetFaults(Faults{Tables: []string{"other"}, Rates: map[Fault]float64{Conflict409: 1}})
	if err := setProp(c, "spared"); err != nil {
		t.Fatalf("commit to a table the faults exclude: %v", err)
	}

	// Latency: every request waits at least Latency.
	s.SetFaults(Faults{Latency: 150 * time.Millisecond})
	begin := time.Now()
	if _, err := c.LoadTable(context.Background(), table.Identifier{"ns", "events"}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took < 150*time.Millisecond {
		t.Fatalf("a load took %v under 150 ms of latency", took)
	}
	s.SetFaults(Faults{})

	want := map[Fault]int64{ApplyThen503: 2, ApplyThenCut: 1, Conflict409: 1, Throttle429: 1, Delayed: 1}
	if got := s.Fired(); !equalCounts(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	if s.LastFired(Throttle429).IsZero() || !s.LastFired("never").IsZero() {
		t.Fatal("LastFired does not record when faults fire")
	}
}

// TestFaultRates: rate-picked faults hit about their share of the commits and are counted.
func TestFaultRates(t *testing.T) {
	s := start(t)
	c := client(t, s)
	siglakeTable(t, c, "ns", "events")
	s.SetFaults(Faults{Seed: 7, Rates: map[Fault]float64{Conflict409: 0.25, ApplyThen503: 0.25}})
	conflicts, unknown := 0, 0
	for i := range 80 {
		err := setProp(c, "k"+string(rune('a'+i%26)))
		switch {
		case errors.Is(err, table.ErrCommitFailed):
			conflicts++
		case errors.Is(err, rest.ErrCommitStateUnknown):
			unknown++
		case err != nil:
			t.Fatal(err)
		}
	}
	f := s.Fired()
	if int64(conflicts) != f[Conflict409] || int64(unknown) != f[ApplyThen503] {
		t.Fatalf("client saw %d conflicts and %d unknown outcomes; the server counted %v", conflicts, unknown, f)
	}
	if conflicts < 8 || unknown < 8 || conflicts+unknown > 60 {
		t.Fatalf("%d conflicts and %d unknown outcomes of 80 commits at 25%% each", conflicts, unknown)
	}
}

func equalCounts(a, b map[Fault]int64) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// TestHoldFaults: a held commit waits for Release or for its client to go away. Held before
// applying, a client that goes away leaves nothing applied and a released one is answered; held
// after applying, the commit is in whatever becomes of the client.
func TestHoldFaults(t *testing.T) {
	s := start(t)
	c := client(t, s)
	siglakeTable(t, c, "ns", "events")
	commitHeld := func(fault Fault, key string, release bool) error {
		t.Helper()
		s.Inject(fault, 1)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, _, err := c.CommitTable(ctx, table.Identifier{"ns", "events"}, nil,
				[]table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{key: "1"})})
			done <- err
		}()
		deadline := time.Now().Add(10 * time.Second)
		for s.Holding() != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the commit was not held", fault)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if release {
			s.Release()
		} else {
			cancel() // the client goes away, as a killed process's connection does
		}
		err := <-done
		for s.Holding() != 0 {
			time.Sleep(10 * time.Millisecond)
		}
		return err
	}
	if err := commitHeld(HoldBeforeApply, "gone", false); err == nil || applied(t, s, "gone") {
		t.Fatalf("held before applying, client gone: error %v, applied %v; want an error and nothing applied", err, applied(t, s, "gone"))
	}
	if err := commitHeld(HoldBeforeApply, "released", true); err != nil || !applied(t, s, "released") {
		t.Fatalf("held before applying, released: error %v, applied %v; want it applied and answered", err, applied(t, s, "released"))
	}
	if err := commitHeld(ApplyThenHold, "landed", false); err == nil || !applied(t, s, "landed") {
		t.Fatalf("applied then held, client gone: error %v, applied %v; want an error and the commit in", err, applied(t, s, "landed"))
	}
	if f := s.Fired(); f[HoldBeforeApply] != 2 || f[ApplyThenHold] != 1 {
		t.Fatalf("fired %v, want 2 holds before applying and 1 after", f)
	}
}
