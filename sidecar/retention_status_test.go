package sidecar

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/maintain"
	"github.com/siglake/siglake/sidecar/retention"
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
		{Where: []deletes.Condition{{Column: "host", Values: []string{secret}}}, Period: "1d", Priority: 2}}}
	if _, err := retention.Set(context.Background(), e.Lake, "events", pol); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.InfoLevel)
	st := NewStatus("n", RoleAll, "test", time.Now())
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
