package nodemeta

import (
	"slices"
	"strings"
	"testing"
)

func TestRoundTripAndLimits(t *testing.T) {
	in := Meta{Roles: []string{"drain", "maintenance"}, Version: "v0.1.0", HTTPAddr: "10.0.0.7:8080"}
	b, err := Encode(in, 512)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Decode(b)
	if err != nil || out.V != Version || strings.Join(out.Roles, ",") != "drain,maintenance" || out.Version != in.Version || out.HTTPAddr != in.HTTPAddr || out.Leaving {
		t.Fatalf("round trip: %+v %v", out, err)
	}
	if _, err := Encode(Meta{Version: strings.Repeat("x", 600)}, 512); err == nil {
		t.Fatal("oversized metadata accepted")
	}
	// A newer version with unknown fields still yields the known ones.
	out, err = Decode([]byte(`{"v":7,"roles":["maintenance"],"zone":"eu-1"}`))
	if err != nil || !slices.Contains(out.Roles, "maintenance") {
		t.Fatalf("newer metadata: %+v %v", out, err)
	}
	// "gc" round-trips; metadata of a version without it reads as 0.
	b, _ = Encode(Meta{Roles: []string{"maintenance"}, GroupCommit: GroupCommitVersion}, 512)
	if out, err := Decode(b); err != nil || out.GroupCommit != GroupCommitVersion || !strings.Contains(string(b), `"gc":1`) {
		t.Fatalf("group commit: %s %+v %v", b, out, err)
	}
	if out, err := Decode([]byte(`{"v":1,"roles":["maintenance"]}`)); err != nil || out.GroupCommit != 0 {
		t.Fatalf("old metadata: %+v %v", out, err)
	}
	for _, bad := range []string{"", "not json", `{"roles":["maintenance"]}`, `[1,2]`} {
		if m, err := Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%q) = %+v, want an error", bad, m)
		}
	}
}
