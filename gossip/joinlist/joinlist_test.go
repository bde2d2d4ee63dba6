package joinlist

import (
	"slices"
	"testing"
)

func TestSplit(t *testing.T) {
	cases := []struct {
		in   string
		host string
		port int
		bad  bool
	}{
		{"10.0.0.1:7000", "10.0.0.1", 7000, false},
		{"10.0.0.1", "10.0.0.1", 7946, false},
		{"siglake-gossip.default.svc.cluster.local", "siglake-gossip.default.svc.cluster.local", 7946, false},
		{"siglake-gossip:8000", "siglake-gossip", 8000, false},
		{"[fd00::1]:7000", "fd00::1", 7000, false},
		{"fd00::1", "fd00::1", 7946, false},
		{"[fd00::1]", "fd00::1", 7946, false},
		{"host:99999", "", 0, true},
		{"host:x", "", 0, true},
		{"", "", 0, true},
		{"a b", "", 0, true},
	}
	for _, c := range cases {
		h, p, err := Split(c.in, 7946)
		if (err != nil) != c.bad || (!c.bad && (h != c.host || p != c.port)) {
			t.Errorf("Split(%q) = %q %d %v", c.in, h, p, err)
		}
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string][]string{
		"":                       nil,
		" , ,":                   nil,
		"a:7946":                 {"a:7946"},
		" a:1 ,, siglake-peers ": {"a:1", "siglake-peers"},
	} {
		if got := Parse(in); !slices.Equal(got, want) {
			t.Errorf("Parse(%q) = %q, want %q", in, got, want)
		}
	}
}
