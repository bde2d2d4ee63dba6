package sidecar

import (
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// openLabels are labels whose values are not known at start (a table, a column), and those of
// siglake_build_info, whose values are the build's.
var openLabels = map[string]bool{"table": true, "column": true, "version": true, "revision": true, "goversion": true}

// TestLabelledCountersStartAtZero: every metric with labels whose values are a known set is
// exported from the start with each value at 0, so the first error, quarantine or failed commit
// shows in increase() and rate() (a series that appears at 1 shows no increase). Label values
// have one spelling: snake_case, no hyphens.
func TestLabelledCountersStartAtZero(t *testing.T) {
	m := NewMetrics()
	descs := make(chan *prometheus.Desc, 1000)
	m.Reg.Describe(descs)
	close(descs)
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	varLabels := regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	closed := map[string]bool{} // metric names whose labels are all closed sets
	for d := range descs {
		n, l := fqName.FindStringSubmatch(d.String()), varLabels.FindStringSubmatch(d.String())
		if n == nil || l == nil || !strings.HasPrefix(n[1], "siglake_") || l[1] == "" {
			continue
		}
		open := false
		for _, name := range strings.Split(l[1], ",") {
			open = open || openLabels[strings.TrimSpace(name)]
		}
		if !open {
			closed[n[1]] = true
		}
	}
	if len(closed) < 8 {
		t.Fatalf("found only %d metrics with closed label sets: %v", len(closed), closed)
	}
	values := gatherLabels(t, m.Reg)
	var names []string
	for n := range closed {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if len(values[n]) == 0 {
			t.Errorf("%s is not exported at start", n)
		}
	}
	want := map[string]map[string][]string{
		"siglake_drain_errors_total":             {"stage": {"commit", "read", "remove", "scan", "table", "write"}},
		"siglake_wal_quarantined_segments_total": {"reason": {"bad_header", "bad_schema", "bad_table_name", "checksum", "corrupt", "empty", "incompatible_schema", "mark_pruned", "oversize", "truncated"}},
		"siglake_compactor_rewrites_total": {
			"kind":    {"absorb", "backpressure_l0", "delete_task", "depth", "fold", "l0", "l1", "legacy", "retention"},
			"outcome": {"committed", "conflict", "failed"},
		},
		"siglake_merge_rewrites_total":             {"path": {"in_memory", "k_way", "page_bounded", "splice"}},
		"siglake_snapshot_expirations_total":       {"outcome": {"failed", "ok"}},
		"siglake_delete_sweeps_total":              {"outcome": {"capped", "clean", "conflict", "deleted", "failed"}},
		"siglake_claim_commits_total":              {"outcome": {"committed", "conflict", "failed"}},
		"siglake_catalog_full_waits_total":         {"op": {"commit", "load", "open"}},
		"siglake_bin_lease_refused_total":          {"message": {"renew", "result"}, "reason": {"catalog", "not_holder", "not_live"}},
		"siglake_bin_lease_messages_dropped_total": {"side": {"owner", "worker"}},
		"siglake_bin_lease_worker_bins_total": {
			"outcome": {"committed", "conflict", "expired", "failed", "lapsed", "lost", "maybe_committed", "refused"},
		},
	}
	for name, labels := range want {
		for label, vals := range labels {
			if got := values[name][label]; !slices.Equal(got, vals) {
				t.Errorf("%s{%s} exported at start: %v, want %v", name, label, got, vals)
			}
		}
	}
	fams, err := m.Reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), "siglake_") {
			continue
		}
		for _, s := range f.GetMetric() {
			if v := s.GetCounter().GetValue() + s.GetGauge().GetValue() + float64(s.GetHistogram().GetSampleCount()); v != 0 {
				t.Errorf("%s%v starts at %v, want 0", f.GetName(), s.GetLabel(), v)
			}
			for _, l := range s.GetLabel() {
				if !openLabels[l.GetName()] && strings.Contains(l.GetValue(), "-") {
					t.Errorf("%s{%s=%q}: label values are snake_case", f.GetName(), l.GetName(), l.GetValue())
				}
			}
		}
	}
}

// gatherLabels maps metric name -> label name -> the sorted values exported.
func gatherLabels(t *testing.T, g prometheus.Gatherer) map[string]map[string][]string {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string][]string{}
	for _, f := range fams {
		seen := map[string]map[string]bool{}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if seen[l.GetName()] == nil {
					seen[l.GetName()] = map[string]bool{}
				}
				seen[l.GetName()][l.GetValue()] = true
			}
		}
		out[f.GetName()] = map[string][]string{}
		for l, vs := range seen {
			for v := range vs {
				out[f.GetName()][l] = append(out[f.GetName()][l], v)
			}
			sort.Strings(out[f.GetName()][l])
		}
		if len(f.GetMetric()) > 0 && len(seen) == 0 {
			out[f.GetName()][""] = []string{""}
		}
	}
	return out
}

// TestNativeHistograms: the duration histograms are native histograms where the scrape negotiates
// one (a schema and spans in the protobuf exposition) and keep their classic buckets for every
// other Prometheus.
func TestNativeHistograms(t *testing.T) {
	m := NewMetrics()
	m.Drain.CommitDuration.WithLabelValues("events").Observe(0.3)
	m.Merge.Duration.WithLabelValues("k_way").Observe(2)
	fams, err := m.Reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, f := range fams {
		if f.GetName() != "siglake_drain_commit_duration_seconds" && f.GetName() != "siglake_merge_duration_seconds" {
			continue
		}
		for _, s := range f.GetMetric() {
			h := s.GetHistogram()
			if h.GetSampleCount() == 0 {
				continue
			}
			found++
			if h.Schema == nil || len(h.GetPositiveSpan()) == 0 {
				t.Errorf("%s: no native histogram (schema %v, spans %v)", f.GetName(), h.Schema, h.GetPositiveSpan())
			}
			if len(h.GetBucket()) < 10 {
				t.Errorf("%s: %d classic buckets; an old Prometheus needs them", f.GetName(), len(h.GetBucket()))
			}
		}
	}
	if found != 2 {
		t.Fatalf("found %d observed histograms, want 2", found)
	}
}

// TestBuildInfo: siglake_build_info carries the version, revision and Go version, once.
func TestBuildInfo(t *testing.T) {
	m := NewMetrics()
	m.SetBuildInfo("1.2.3", "")
	m.SetBuildInfo("1.2.3", "0123456789ab")
	fams, err := m.Reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "siglake_build_info" {
			continue
		}
		if len(f.GetMetric()) != 1 {
			t.Fatalf("%d build_info series, want 1", len(f.GetMetric()))
		}
		s := f.GetMetric()[0]
		got := map[string]string{}
		for _, l := range s.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if got["version"] != "1.2.3" || got["revision"] != "0123456789ab" || got["goversion"] != runtime.Version() || s.GetGauge().GetValue() != 1 {
			t.Fatalf("build_info %v = %v", got, s.GetGauge().GetValue())
		}
		return
	}
	t.Fatal("siglake_build_info not exported")
}
