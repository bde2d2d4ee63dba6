package gossip

import (
	"strings"
	"testing"
)

func TestMetaRoundTripAndLimits(t *testing.T) {
	in := meta{Roles: []string{RoleDrain, RoleMaintenance}, Version: "v0.1.0", HTTPAddr: "10.0.0.7:8080"}
	b, err := encodeMeta(in, 512)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeMeta(b)
	if err != nil || out.V != metaVersion || strings.Join(out.Roles, ",") != "drain,maintenance" || out.Version != in.Version || out.HTTPAddr != in.HTTPAddr || out.Leaving {
		t.Fatalf("round trip: %+v %v", out, err)
	}
	if _, err := encodeMeta(meta{Version: strings.Repeat("x", 600)}, 512); err == nil {
		t.Fatal("oversized metadata accepted")
	}
	// A newer version with unknown fields still yields the known ones.
	out, err = decodeMeta([]byte(`{"v":7,"roles":["maintenance"],"zone":"eu-1"}`))
	if err != nil || !hasRole(out.Roles, RoleMaintenance) {
		t.Fatalf("newer metadata: %+v %v", out, err)
	}
	for _, bad := range []string{"", "not json", `{"roles":["maintenance"]}`, `[1,2]`} {
		if m, err := decodeMeta([]byte(bad)); err == nil {
			t.Errorf("decodeMeta(%q) = %+v, want an error", bad, m)
		}
	}
}

func TestRolesFor(t *testing.T) {
	for in, want := range map[string]string{"all": "drain,maintenance", "": "drain,maintenance", "drain": "drain", " Maintenance ": "maintenance"} {
		got, err := RolesFor(in)
		if err != nil || strings.Join(got, ",") != want {
			t.Errorf("RolesFor(%q) = %v %v", in, got, err)
		}
	}
	if _, err := RolesFor("ingest"); err == nil || !strings.Contains(err.Error(), "all, drain, maintenance") {
		t.Fatalf("bad role: %v", err)
	}
}
