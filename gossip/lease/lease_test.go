package lease

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func tableNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("logs.tenant_%04d", i)
	}
	return out
}

func podNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

func counts(tables, members []string) map[string]int {
	c := map[string]int{}
	for _, m := range members {
		c[m] = 0
	}
	for _, t := range tables {
		c[Owner(t, members)]++
	}
	return c
}

func TestOwnerBasics(t *testing.T) {
	if got := Owner("t", nil); got != "" {
		t.Fatalf("no members: got %q", got)
	}
	if got := Owner("t", []string{"a"}); got != "a" {
		t.Fatalf("one member: got %q", got)
	}
	ms := []string{"a", "b", "c", "d"}
	rev := []string{"d", "c", "b", "a"}
	dup := []string{"a", "b", "b", "c", "d", "a"}
	for _, tb := range tableNames(200) {
		o := Owner(tb, ms)
		if Owner(tb, rev) != o || Owner(tb, dup) != o {
			t.Fatalf("table %s: owner depends on member order or duplicates", tb)
		}
		if o2 := Pick(tb, []Candidate{NewCandidate("c"), NewCandidate("a"), NewCandidate("d"), NewCandidate("b")}); o2 != o {
			t.Fatalf("table %s: Pick %q != Owner %q", tb, o2, o)
		}
	}
}

// The hash is fixed across versions: a rolling upgrade with a changed hash
// would give two owners for every table until the last pod is replaced.
func TestOwnerIsStableAcrossVersions(t *testing.T) {
	if h := hashString(""); h != 14695981039346656037 {
		t.Fatalf("FNV-1a offset changed: %d", h)
	}
	if h := hashString("a"); h != 0xaf63dc4c8601ec8c {
		t.Fatalf("FNV-1a of \"a\" changed: %#x", h)
	}
	ms := podNames("siglake-ingest", 5)
	got := []string{Owner("logs.events", ms), Owner("logs.audit", ms), Owner("metrics.cpu", ms)}
	want := goldenOwners
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("owners changed: got %v want %v", got, want)
		}
	}
}

// Balance: over 1,000 tables each member's share must be within 4 binomial
// standard deviations of the fair share (T*p ± 4*sqrt(T*p*(1-p))), which a
// uniform random assignment meets with probability > 0.9999 per member.
// That is ±18% of the fair share at 3 members, ±25% at 5, ±38% at 10 and
// ±88% at 50 (20 tables each). The chi-square statistic over many random
// member sets must average n-1, as for a uniform assignment.
func TestRendezvousBalance(t *testing.T) {
	const T = 1000
	tables := tableNames(T)
	for _, n := range []int{2, 3, 5, 10, 50} {
		for _, prefix := range []string{"siglake-ingest", "ip-10-0-1", "m"} {
			members := podNames(prefix, n)
			c := counts(tables, members)
			p := 1 / float64(n)
			mean := T * p
			sd := math.Sqrt(T * p * (1 - p))
			worst := 0.0
			for m, k := range c {
				dev := math.Abs(float64(k) - mean)
				worst = max(worst, dev/mean)
				if dev > 4*sd {
					t.Errorf("n=%d %s: member %s owns %d tables, fair share %.1f ± %.1f (4 sd)", n, prefix, m, k, mean, 4*sd)
				}
			}
			t.Logf("n=%d names=%s-*: worst deviation from fair share %.1f%% (4 sd bound %.1f%%)", n, prefix, 100*worst, 100*4*sd/mean)
		}
	}

	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{3, 10} {
		const trials = 200
		sum := 0.0
		for range trials {
			members := make([]string, n)
			for i := range members {
				members[i] = fmt.Sprintf("pod-%x", rng.Uint64())
			}
			c := counts(tables, members)
			mean := float64(T) / float64(n)
			chi := 0.0
			for _, k := range c {
				chi += (float64(k) - mean) * (float64(k) - mean) / mean
			}
			sum += chi
		}
		avg := sum / trials
		// The mean of chi-square with n-1 degrees of freedom over 200
		// trials has standard error sqrt(2(n-1)/200); allow 5 of them.
		df := float64(n - 1)
		if se := math.Sqrt(2 * df / trials); math.Abs(avg-df) > 5*se {
			t.Errorf("n=%d: mean chi-square %.2f, want %.0f ± %.2f", n, avg, df, 5*se)
		}
		t.Logf("n=%d: mean chi-square over %d random member sets %.2f (uniform: %.0f)", n, trials, avg, df)
	}
}

// Minimal movement: a join moves only tables to the joiner, about T/(n+1)
// of them; a leave moves only the leaver's tables. No table moves between
// two members that stay.
func TestRendezvousMinimalMovement(t *testing.T) {
	const T = 1000
	tables := tableNames(T)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 3, 5, 9, 49} {
		for trial := range 20 {
			members := make([]string, n)
			for i := range members {
				members[i] = fmt.Sprintf("pod-%d-%x", i, rng.Uint64())
			}
			joiner := fmt.Sprintf("joiner-%d", trial)
			after := append(append([]string(nil), members...), joiner)
			moved := 0
			for _, tb := range tables {
				before, now := Owner(tb, members), Owner(tb, after)
				if before != now {
					if now != joiner {
						t.Fatalf("n=%d: join of %s moved %s from %s to %s", n, joiner, tb, before, now)
					}
					moved++
				}
			}
			p := 1 / float64(n+1)
			mean, sd := T*p, math.Sqrt(T*p*(1-p))
			if math.Abs(float64(moved)-mean) > 4*sd {
				t.Errorf("n=%d: join moved %d tables, want %.0f ± %.0f", n, moved, mean, 4*sd)
			}

			// Leave: drop a random member.
			gone := members[rng.IntN(n)]
			var rest []string
			for _, m := range members {
				if m != gone {
					rest = append(rest, m)
				}
			}
			for _, tb := range tables {
				before, now := Owner(tb, members), Owner(tb, rest)
				if before != now && before != gone {
					t.Fatalf("n=%d: leave of %s moved %s from %s (who stayed) to %s", n, gone, tb, before, now)
				}
				if before == gone && now == gone {
					t.Fatalf("n=%d: %s still owns %s after leaving", n, gone, tb)
				}
			}
		}
	}
}

func BenchmarkOwner10(b *testing.B) {
	ms := podNames("siglake-ingest", 10)
	tables := tableNames(1000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Owner(tables[i%len(tables)], ms)
	}
}

// goldenOwners pins the lease math: changing it is a breaking change that
// needs a coordinated (not rolling) upgrade.
var goldenOwners = []string{"siglake-ingest-0", "siglake-ingest-3", "siglake-ingest-4"}
