package sidecar

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/maintain"
	"github.com/siglake/siglake/sidecar/retention"
	"github.com/siglake/siglake/sidecar/rows"
	"github.com/siglake/siglake/sidecar/walgen"
)

// TestStatusShowsNoRetentionRuleValues: /debug/status shows a retention rule by its columns,
// period and a fingerprint of its conditions, never the values (a rule may name a person), and
// the run logs none at info or above; siglake retention show's report (the operator command
// that reads the catalog) keeps the values and prints the same fingerprint (issue 31).
func TestStatusShowsNoRetentionRuleValues(t *testing.T) {
	e := testlake.New(t)
	e.DeleteTable(1)
	const secret = "alice.smith@example.com"
	pol := retention.Policy{Period: "30d", Rules: []retention.Rule{
		{Where: []rows.Condition{{Column: "host", Values: []string{secret}}}, Period: "1d", Priority: 2}}}
	if _, err := retention.Set(context.Background(), e.Lake, "events", pol); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.InfoLevel)
	st := NewStatus("n", config.RoleAll, "test", time.Now())
	m := &maintain.Maintainer{Cfg: MaintainConfig(cfg), Lake: e.Lake, Metrics: NewMetrics().Maintain, Log: zap.New(core), Now: time.Now, Publish: st}
	rep, err := m.Retention().Run(context.Background(), "events", retention.Options{Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(NewMetrics(), st, &Readiness{}, time.Now))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/debug/status")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), secret) || strings.Contains(string(body), "alice") {
		t.Fatalf("/debug/status publishes a retention rule's value:\n%s", body)
	}
	var got StatusReport
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	ret := got.Tables["events"].Retention
	if ret == nil || len(ret.Classes) != 2 {
		t.Fatalf("status retention %+v, want the rule's class and the table period's", ret)
	}
	rule := ret.Classes[0]
	fp := rep.Classes[0].Fingerprint
	if fp == "" || rule.Fingerprint != fp || rule.Class != "rule 1: host (1 value)" || rule.Period != "1d" || rule.Cutoff == nil {
		t.Errorf("status class %+v, want rule 1's columns, period, cutoff and the fingerprint %q of siglake retention show", rule, fp)
	}
	if want := "period 30d; rule 1: host (1 value) [" + fp + "] keeps 1d (priority 2)"; ret.Policy != want {
		t.Errorf("status policy %q, want %q", ret.Policy, want)
	}
	// The operator's report shows the values.
	if !strings.Contains(rep.Policy, secret) || !strings.Contains(rep.Classes[0].Class, secret) {
		t.Errorf("siglake retention show's report lost the values: %q, %q", rep.Policy, rep.Classes[0].Class)
	}
	for _, l := range logs.All() {
		if b, _ := json.Marshal(l.ContextMap()); strings.Contains(l.Message+string(b), "alice") {
			t.Errorf("log line at %s carries a rule value: %s %s", l.Level, l.Message, b)
		}
	}
}

// rollupLake is a lake whose events_1m table has long columns, where a condition's value that
// does not parse is quoted by the validation error.
func rollupLake(t *testing.T) *testlake.Env {
	e := testlake.New(t)
	rec := walgen.New(walgen.Options{Seed: 7}).Batch(memory.DefaultAllocator, testlake.DeleteBase, 500, time.Second)
	roll := walgen.Rollup(memory.DefaultAllocator, rec)
	rec.Release()
	e.Seal(walgen.RollupTable, roll)
	roll.Release()
	e.DrainAll()
	return e
}

// setProperty writes a table property as another tool would, without siglake's validation.
func setProperty(t *testing.T, e *testlake.Env, table, key, value string) {
	tbl := e.Table(table)
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{key: value}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestInvalidRetentionRuleValueNotPublished: a stored policy whose rule value does not parse
// (written by another tool) is refused; the status page, the run's error and the logs name the
// rule and its columns, and only the report of siglake retention show quotes the value.
func TestInvalidRetentionRuleValueNotPublished(t *testing.T) {
	e := rollupLake(t)
	const secret = "alice.smith@example.com"
	bad := retention.Policy{Version: 1, Rules: []retention.Rule{{Where: []rows.Condition{{Column: "events", Values: []string{secret}}}, Period: "1d"}}}
	v, _ := bad.Encode()
	setProperty(t, e, walgen.RollupTable, retention.Property, v)
	cfg, err := config.Load(nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.InfoLevel)
	st := NewStatus("n", config.RoleAll, "test", time.Now())
	m := &maintain.Maintainer{Cfg: MaintainConfig(cfg), Lake: e.Lake, Metrics: NewMetrics().Maintain, Log: zap.New(core), Now: time.Now, Publish: st}
	rep, err := m.Retention().Run(context.Background(), walgen.RollupTable, retention.Options{Apply: true})
	if err == nil || !strings.Contains(rep.Invalid, secret) {
		t.Fatalf("run: %v, invalid %q; want a refusal, the cause with the value in the report", err, rep.Invalid)
	}
	st.AddError(time.Now(), "retention", walgen.RollupTable, err) // what the maintenance observer does
	body, _ := json.Marshal(st.Snapshot(time.Now()))
	if strings.Contains(string(body), "alice") || !strings.Contains(string(body), "rule 1 (events (1 value))") {
		t.Fatalf("status of an invalid policy:\n%s", body)
	}
	for _, l := range logs.All() {
		if b, _ := json.Marshal(l.ContextMap()); strings.Contains(l.Message+string(b), "alice") {
			t.Errorf("log line at %s carries a rule value: %s %s", l.Level, l.Message, b)
		}
	}
}
