package level

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func rng(min, max int64) File { return File{MinTime: min, MaxTime: max} }

func TestDepth(t *testing.T) {
	cases := []struct {
		name  string
		files []File
		depth int
		at    int64
	}{
		{"empty", nil, 0, 0},
		{"one", []File{rng(5, 9)}, 1, 5},
		{"disjoint", []File{rng(0, 4), rng(5, 9)}, 1, 0},
		{"touching shares the instant", []File{rng(0, 5), rng(5, 9)}, 2, 5},
		{"nested", []File{rng(0, 100), rng(10, 20), rng(15, 16)}, 3, 15},
		{"stack then tail", []File{rng(0, 10), rng(0, 10), rng(0, 10), rng(20, 30)}, 3, 0},
		{"max int end", []File{rng(0, maxInt64), rng(maxInt64, maxInt64)}, 2, maxInt64},
		{"point ranges", []File{rng(7, 7), rng(7, 7), rng(8, 8)}, 2, 7},
	}
	for _, c := range cases {
		d, at := Depth(c.files)
		if d != c.depth || at != c.at {
			t.Errorf("%s: Depth = %d at %d, want %d at %d", c.name, d, at, c.depth, c.at)
		}
	}
}

// bruteDepth counts, at every range start (where depth can only rise),
// the files containing it.
func bruteDepth(fs []File) int {
	best := 0
	for _, a := range fs {
		n := 0
		for _, b := range fs {
			if b.MinTime <= a.MinTime && a.MinTime <= b.MaxTime {
				n++
			}
		}
		best = max(best, n)
	}
	return best
}

func TestDepthAndClustersAgreeWithBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := range 3000 {
		n := r.IntN(40)
		fs := make([]File, n)
		for i := range fs {
			lo := r.Int64N(1000)
			fs[i] = File{Path: fmt.Sprint(i), MinTime: lo, MaxTime: lo + r.Int64N(60)}
		}
		d, at := Depth(fs)
		if want := bruteDepth(fs); d != want {
			t.Fatalf("iter %d: Depth = %d, brute force %d", iter, d, want)
		}
		if n > 0 {
			hits := 0
			for _, f := range fs {
				if f.MinTime <= at && at <= f.MaxTime {
					hits++
				}
			}
			if hits != d {
				t.Fatalf("iter %d: %d files contain reported instant %d, depth %d", iter, hits, at, d)
			}
		}
		// Clusters: a partition of the input; files of different clusters
		// never overlap; each cluster is connected.
		cs := Clusters(fs)
		seen := 0
		for ci, c := range cs {
			seen += len(c)
			for cj := ci + 1; cj < len(cs); cj++ {
				for _, a := range c {
					for _, b := range cs[cj] {
						if a.Overlaps(b) {
							t.Fatalf("iter %d: clusters %d and %d overlap: %v %v", iter, ci, cj, a, b)
						}
					}
				}
			}
			if !connected(c) {
				t.Fatalf("iter %d: cluster %d not connected: %v", iter, ci, c)
			}
		}
		if seen != n {
			t.Fatalf("iter %d: clusters hold %d files, input %d", iter, seen, n)
		}
	}
}

func connected(c []File) bool {
	reached := map[int]bool{0: true}
	queue := []int{0}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for j := range c {
			if !reached[j] && c[i].Overlaps(c[j]) {
				reached[j] = true
				queue = append(queue, j)
			}
		}
	}
	return len(reached) == len(c)
}

func TestPartitionDepths(t *testing.T) {
	fs := []File{
		{Partition: "a", MinTime: 0, MaxTime: 10},
		{Partition: "a", MinTime: 5, MaxTime: 15},
		{Partition: "b", MinTime: 5, MaxTime: 15},
	}
	got := PartitionDepths(ByPartition(fs))
	if got["a"] != 2 || got["b"] != 1 || len(got) != 2 {
		t.Fatalf("PartitionDepths = %v", got)
	}
}
