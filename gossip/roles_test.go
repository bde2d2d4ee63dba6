package gossip

import (
	"strings"
	"testing"
)

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
