package splice

import (
	"fmt"
	"testing"

	"github.com/siglake/siglake/merge/input"
)

func TestSpliceCopiesPlan(t *testing.T) {
	pg := func(row, n, lo, hi int64) input.TimestampPage {
		return input.TimestampPage{Row: row, N: n, Min: lo, Max: hi}
	}
	all := func(int, int) bool { return true }
	for _, c := range []struct {
		name     string
		pages    [][]input.TimestampPage
		indexed  []bool
		rgRows   [][]int64
		eligible func(int, int) bool
		want     [][]bool
	}{
		{"disjoint", [][]input.TimestampPage{{pg(0, 10, 0, 9), pg(10, 10, 10, 19)}, {pg(0, 10, 100, 109)}}, []bool{true, true},
			[][]int64{{10, 10}, {10}}, all, [][]bool{{true, true}, {true}}},
		{"a late sliver inside the second row group", [][]input.TimestampPage{{pg(0, 10, 0, 9), pg(10, 10, 10, 19)}, {pg(0, 2, 15, 16)}}, []bool{true, true},
			[][]int64{{10, 10}, {2}}, all, [][]bool{{true, false}, {false}}},
		{"touching bounds overlap", [][]input.TimestampPage{{pg(0, 10, 0, 9)}, {pg(0, 10, 9, 20)}}, []bool{true, true},
			[][]int64{{10}, {10}}, all, [][]bool{{false}, {false}}},
		{"one page of a row group overlaps", [][]input.TimestampPage{{pg(0, 5, 0, 4), pg(5, 5, 5, 9)}, {pg(0, 3, 7, 8)}}, []bool{true, true},
			[][]int64{{10}, {3}}, all, [][]bool{{false}, {false}}},
		{"no page index: nothing copied", [][]input.TimestampPage{{pg(0, 10, 0, 9)}, nil}, []bool{true, false},
			[][]int64{{10}, {10}}, all, [][]bool{{false}, {false}}},
		{"too small", [][]input.TimestampPage{{pg(0, 10, 0, 9), pg(10, 3, 10, 12)}, {pg(0, 10, 100, 109)}}, []bool{true, true},
			[][]int64{{10, 3}, {10}}, func(i, rg int) bool { return !(i == 0 && rg == 1) }, [][]bool{{true, false}, {true}}},
	} {
		got := spliceCopies(c.pages, c.indexed, c.rgRows, c.eligible)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

// TestPromoteLoneSmall: a small isolated row group is copied only when
// re-encoding it would give a row group of its own rows anyway: copies on
// both sides in time, and no re-encoded row group near it.
func TestPromoteLoneSmall(t *testing.T) {
	pg := func(row, n, lo, hi int64) input.TimestampPage {
		return input.TimestampPage{Row: row, N: n, Min: lo, Max: hi}
	}
	for _, c := range []struct {
		name             string
		pages            [][]input.TimestampPage
		rgRows           [][]int64
		copies, isolated [][]bool
		want             [][]bool
	}{
		{"an L1 file's short last row group between two copies",
			[][]input.TimestampPage{{pg(0, 10, 0, 9), pg(10, 3, 10, 12)}, {pg(0, 10, 20, 29)}}, [][]int64{{10, 3}, {10}},
			[][]bool{{true, false}, {true}}, [][]bool{{true, true}, {true}}, [][]bool{{true, true}, {true}}},
		{"the last of all, after a copy",
			[][]input.TimestampPage{{pg(0, 10, 0, 9)}, {pg(0, 3, 20, 22)}}, [][]int64{{10}, {3}},
			[][]bool{{true}, {false}}, [][]bool{{true}, {true}}, [][]bool{{true}, {true}}},
		{"two small ones next to each other merge into one re-encoded row group",
			[][]input.TimestampPage{{pg(0, 10, 0, 9), pg(10, 3, 10, 12)}, {pg(0, 3, 13, 15)}, {pg(0, 10, 20, 29)}}, [][]int64{{10, 3}, {3}, {10}},
			[][]bool{{true, false}, {false}, {true}}, [][]bool{{true, true}, {true}, {true}}, [][]bool{{true, false}, {false}, {true}}},
		{"not isolated",
			[][]input.TimestampPage{{pg(0, 10, 0, 9), pg(10, 3, 10, 12)}, {pg(0, 10, 20, 29)}}, [][]int64{{10, 3}, {10}},
			[][]bool{{true, false}, {true}}, [][]bool{{true, false}, {true}}, [][]bool{{true, false}, {true}}},
		{"a re-encoded row group spans around it",
			[][]input.TimestampPage{{pg(0, 10, 0, 9), pg(10, 3, 10, 12)}, {pg(0, 10, 20, 29)}, {pg(0, 1, 5, 5), pg(1, 1, 25, 25)}}, [][]int64{{10, 3}, {10}, {2}},
			[][]bool{{true, false}, {true}, {false}}, [][]bool{{true, true}, {true}, {false}}, [][]bool{{true, false}, {true}, {false}}},
	} {
		promoteLoneSmall(c.copies, c.isolated, c.pages, c.rgRows)
		if fmt.Sprint(c.copies) != fmt.Sprint(c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.copies, c.want)
		}
	}
}
