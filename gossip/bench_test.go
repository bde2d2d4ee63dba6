package gossip

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The measurements behind docs/gossip.md. They take minutes, so they run
// only with SIGLAKE_GOSSIP_BENCH=1:
//
//	SIGLAKE_GOSSIP_BENCH=1 go test ./gossip/ -run 'Bench' -v -count=1 -timeout 30m

func benchEnabled(t *testing.T) {
	if os.Getenv("SIGLAKE_GOSSIP_BENCH") != "1" {
		t.Skip("set SIGLAKE_GOSSIP_BENCH=1 to run the gossip measurements")
	}
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
		return v
	}
	return def
}

// prodConfig is DefaultConfig on loopback with a free port.
func prodConfig(name string, join ...string) Config {
	c := DefaultConfig()
	c.NodeName, c.BindAddr, c.BindPort, c.Join = name, "127.0.0.1", 0, join
	return c
}

func medianMax(ds []time.Duration) (time.Duration, time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[n-1]
}

// Failover after a crash (Shutdown without Leave, which is what peers see
// of a SIGKILL: the process stops answering). "detect" is when every
// survivor sees a new owner for all the victim's tables; "acting" is when
// each of those tables has exactly one survivor whose Owns is true.
func TestBenchFailover(t *testing.T) {
	benchEnabled(t)
	runs := envInt("SIGLAKE_GOSSIP_BENCH_RUNS", 7)
	tables := tableNames(200)
	profiles := []struct {
		name string
		mk   func(string, ...string) Config
	}{{"default", prodConfig}, {"fast", fastConfig}}
	for _, p := range profiles {
		for _, n := range []int{3, 10} {
			var detects, actings []time.Duration
			for r := range runs {
				tc := &testCluster{t: t, dead: map[string]bool{}}
				for i := range n {
					tc.add(p.mk, i)
				}
				tc.waitConverged(tables, 60*time.Second)
				time.Sleep(p.mk("x").SettlePeriod + 200*time.Millisecond)
				tc.assertOneOwnerEach(tables)
				d, a := failover(t, tc, tables, false)
				detects, actings = append(detects, d), append(actings, a)
				t.Logf("%s n=%d run %d: detect %s acting %s", p.name, n, r, d.Round(time.Millisecond), a.Round(time.Millisecond))
				for _, m := range tc.live() {
					_ = m.Shutdown()
				}
			}
			dm, dx := medianMax(detects)
			am, ax := medianMax(actings)
			t.Logf("RESULT failover %s timings, %d members, %d runs: detect median %s max %s; acting median %s max %s",
				p.name, n, runs, dm.Round(time.Millisecond), dx.Round(time.Millisecond), am.Round(time.Millisecond), ax.Round(time.Millisecond))
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Steady-state cost of gossip per member with the default timings: CPU of
// this test process divided by members (an upper bound: it includes the
// Go runtime and GC of all members together) and gossip payload bytes.
func TestBenchGossipCost(t *testing.T) {
	benchEnabled(t)
	window := time.Duration(envInt("SIGLAKE_GOSSIP_BENCH_WINDOW_SECS", 60)) * time.Second
	for _, n := range []int{10, 50} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			tc := startCluster(t, n, prodConfig)
			tc.waitConverged(nil, 60*time.Second)
			time.Sleep(5 * time.Second)
			sum := func() (s, r uint64) {
				for _, m := range tc.members {
					st := m.Stats()
					s += st.SentBytes
					r += st.ReceivedBytes
				}
				return
			}
			s0, r0 := sum()
			c0, w0 := cpuTime(), time.Now()
			time.Sleep(window)
			c1, w1 := cpuTime(), time.Now()
			s1, r1 := sum()
			secs := w1.Sub(w0).Seconds()
			perCPU := (c1 - c0).Seconds() / secs / float64(n)
			t.Logf("RESULT gossip cost, %d members, %s window: CPU %.2f ms/s per member (%.3f%% of a core), sent %.0f B/s, received %.0f B/s per member",
				n, window, perCPU*1000, perCPU*100, float64(s1-s0)/secs/float64(n), float64(r1-r0)/secs/float64(n))
			if ok, why := tc.converged(nil); !ok {
				t.Fatalf("cluster not stable during the measurement: %s", why)
			}
		})
	}
}
