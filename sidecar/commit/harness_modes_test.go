package commit

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/lake"
)

// benchMode is what runs beside the pods: a committer (Group), the owner's maintainer cycling
// through the window (Maint), and a committer stopped halfway through the window with its
// queue, its successor starting benchLease later (Failover); Prewritten: the pods' batches are
// written before the window and only handed off in it (harness_prewritten_test.go).
type benchMode struct{ Group, Maint, Failover, Prewritten bool }

func (m benchMode) String() string {
	s := map[bool]string{false: "direct", true: "group"}[m.Group]
	if m.Maint {
		s += "+maint"
	}
	if m.Failover {
		s += "+failover"
	}
	if m.Prewritten {
		s += "+prewritten"
	}
	return s
}

// parseBenchModes reads SIGLAKE_BENCH_MODES: a comma-separated list of direct or group, each
// optionally with +maint, and group also with +failover (not with +maint) and +prewritten.
// Empty is direct,group.
func parseBenchModes(v string) ([]benchMode, error) {
	if v == "" {
		v = "direct,group"
	}
	var modes []benchMode
	for _, f := range strings.Split(v, ",") {
		parts := strings.Split(strings.TrimSpace(f), "+")
		var m benchMode
		switch parts[0] {
		case "direct":
		case "group":
			m.Group = true
		default:
			return nil, fmt.Errorf("SIGLAKE_BENCH_MODES %q: mode %q: want direct or group, then +maint, and group also +failover (not with +maint) or +prewritten", v, f)
		}
		for _, x := range parts[1:] {
			switch {
			case x == "maint" && !m.Failover:
				m.Maint = true
			case x == "failover" && m.Group && !m.Maint:
				m.Failover = true
			case x == "prewritten" && m.Group:
				m.Prewritten = true
			default:
				return nil, fmt.Errorf("SIGLAKE_BENCH_MODES %q: mode %q: want direct or group, then +maint, and group also +failover (not with +maint) or +prewritten", v, f)
			}
		}
		modes = append(modes, m)
	}
	return modes, nil
}

// benchCommitter starts a committer called name on l, a Lake of its own (nil: opened now; its
// commits watched and counted by role), owning every table, its Run and handlers labelled committer. stop cancels
// its Run (its queue is lost) and waits for it; it also runs at the test's end.
func benchCommitter(cl *cluster, name string, l *lake.Lake, watch func(*lake.Lake), rc *roleCommits) (_ *lake.Lake, stop func()) {
	if l == nil {
		l = cl.lake()
	}
	watch(l)
	rc.hook(l)
	v := newView(name)
	v.owns = true
	c := NewCommitter(CommitterConfig{Lake: l, Interval: benchInterval, MaxWait: benchMaxWait(), Retry: lake.DefaultRetry, Observer: newRecorder()},
		roleTransport{cl.hub.Member(name), roleCommitter}, v)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go labelled(ctx, roleCommitter, func(ctx context.Context) { done <- c.Run(ctx) })
	stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			cl.t.Error(err)
		}
	})
	if cl.stop == nil {
		cl.stop = map[string]func(){}
	}
	cl.stop[name] = stop
	cl.t.Cleanup(stop)
	return l, stop
}

// maintTotals sums the maintainer's cycles in a run.
type maintTotals struct {
	Cycles, Rewrites, Conflicts, Failed, Errors int
}

func (m maintTotals) String() string {
	if m.Cycles == 0 {
		return ""
	}
	return fmt.Sprintf("maintainer: %d cycles, %d rewrites committed, %d bins lost to conflicts, %d failed, %d cycle errors",
		m.Cycles, m.Rewrites, m.Conflicts, m.Failed, m.Errors)
}

// benchOwner runs the owner's side of mode until the window ends: the maintainer cycling (on
// owner, the committer's Lake, or in direct mode on a Lake of its own, as another process's
// would be), or the failover. It returns the maintainer's totals.
func benchOwner(cl *cluster, mode benchMode, owner *lake.Lake, start time.Time, window time.Duration,
	watch func(*lake.Lake), rc *roleCommits, pods []*benchPod) maintTotals {
	end := start.Add(window)
	switch {
	case mode.Maint:
		if owner == nil {
			owner = cl.lake()
			watch(owner)
			rc.hook(owner)
		}
		return benchMaintain(cl, owner, end)
	case mode.Failover:
		// The successor's process is up before the failover (a standby member): opening its
		// catalog while a thousand pods reread theirs may find no connection left.
		next := cl.lake()
		time.Sleep(time.Until(start.Add(window / 2)))
		cl.stop["committer"]()
		cl.t.Logf("committer stopped at %s", time.Since(start).Round(time.Millisecond))
		time.Sleep(benchLease)
		benchCommitter(cl, "committer-2", next, watch, rc)
		for _, p := range pods {
			p.view.set(func(v *view) { v.committer = func(string) (string, bool) { return "committer-2", true } })
		}
		cl.t.Logf("committer-2 started at %s", time.Since(start).Round(time.Millisecond))
	}
	time.Sleep(time.Until(end))
	return maintTotals{}
}

// benchMaintain cycles a maintainer on l, labelled maintainer, a second apart until end.
func benchMaintain(cl *cluster, l *lake.Lake, end time.Time) (tot maintTotals) {
	m := maintainer(cl.t.(*testing.T), l)
	// The plan's checks fall due by its clock: it must move (maintainer's stands still).
	base, t0 := m.Now(), time.Now()
	m.Now = func() time.Time { return base.Add(time.Since(t0)) }
	for time.Now().Before(end) {
		labelled(context.Background(), roleMaintainer, func(ctx context.Context) {
			rep, err := m.Cycle(ctx)
			if err != nil {
				tot.Errors++
				cl.t.Logf("maintenance cycle: %v", err)
			}
			tot.Cycles++
			tot.Rewrites += rep.Rewrites
			tot.Conflicts += rep.Conflicts
			tot.Failed += rep.Failed
		})
		time.Sleep(min(time.Second, time.Until(end)))
	}
	return tot
}

// TestParseBenchModes: SIGLAKE_BENCH_MODES names each mode as String prints it, and refuses a
// mode that has no meaning (a direct failover, a failover with maintenance) naming it.
func TestParseBenchModes(t *testing.T) {
	modes, err := parseBenchModes("direct, group+maint,group+failover+prewritten,direct+maint")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range modes {
		got = append(got, m.String())
	}
	if want := "direct group+maint group+failover+prewritten direct+maint"; strings.Join(got, " ") != want {
		t.Fatalf("modes %q, want %q", got, want)
	}
	if d, _ := parseBenchModes(""); len(d) != 2 || d[0].Group || !d[1].Group {
		t.Fatalf("default modes %v, want direct,group", d)
	}
	for _, bad := range []string{"direct+failover", "group+maint+failover", "direct+prewritten", "grup", "group+fast"} {
		if _, err := parseBenchModes(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%q: %v, want an error naming it", bad, err)
		}
	}
}
