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

	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/fold"
	"github.com/siglake/siglake/sidecar/maintain"
	"github.com/siglake/siglake/sidecar/walgen"
)

// TestStatusShowsBadFoldSpec: /debug/status says a rollup table with a bad fold specification is
// not folded, naming the property and the column.
func TestStatusShowsBadFoldSpec(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	rec := walgen.New(walgen.Options{Seed: 1}).Batch(memory.DefaultAllocator, time.Now().Add(-time.Hour), 1000, 100*time.Millisecond)
	roll := walgen.Rollup(memory.DefaultAllocator, rec)
	rec.Release()
	e.te.Seal(walgen.RollupTable, roll)
	roll.Release()
	e.te.DrainAll()
	bad := fold.Builtin
	bad.Keys = []string{"service"} // severity is left without a role
	v, _ := bad.Encode()
	if err := e.lake.UpdateProperties(ctx, walgen.RollupTable, func(iceberg.Properties) (iceberg.Properties, []string) {
		return iceberg.Properties{fold.Property: v}, nil
	}); err != nil {
		t.Fatal(err)
	}
	pc, err := config.PlanConfig(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := NewStatus("test", config.RoleAll, "test", time.Now())
	metrics := NewMetrics()
	m := &maintain.Maintainer{Cfg: MaintainConfig(e.cfg), Plan: pc, Lake: e.lake, Metrics: metrics.Maintain, Publish: st, Log: zap.NewNop(), Now: time.Now}
	if _, err := m.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(metrics, st, &Readiness{}, time.Now))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/debug/status")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var r struct {
		Tables map[string]struct {
			Maintenance struct {
				Fold struct {
					Error string `json:"error"`
				} `json:"fold"`
			} `json:"maintenance"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	got := r.Tables[walgen.RollupTable].Maintenance.Fold.Error
	if !strings.Contains(got, fold.Property) || !strings.Contains(got, `"severity"`) {
		t.Fatalf("/debug/status tables.%s.maintenance.fold.error = %q; want the property and the column named", walgen.RollupTable, got)
	}
}
