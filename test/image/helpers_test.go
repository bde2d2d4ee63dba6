package image

import (
	"debug/buildinfo"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// repoRoot is the siglake checkout this module sits in (two levels up).
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "Dockerfile")); err != nil {
		t.Fatalf("no Dockerfile two levels above test/image: %v", err)
	}
	return root
}

// loadValues decodes the chart's values.yaml.
func loadValues(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "charts", "siglake-compactor", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(raw, &v); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	return v
}

// lookupPath finds a dotted value path (a.b.c) in decoded values.
func lookupPath(v map[string]any, path string) (any, bool) {
	var cur any = v
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func eq[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// checkStatic: bin has no ELF interpreter and no shared libraries, was built with CGO_ENABLED=0
// and -trimpath, and prints version: what runs on distroless static.
func checkStatic(t *testing.T, bin, version string) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has an ELF interpreter: it is dynamically linked")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v (err %v)", libs, err)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" {
		t.Errorf("CGO_ENABLED=%q, want 0", settings["CGO_ENABLED"])
	}
	if settings["-trimpath"] != "true" {
		t.Errorf("-trimpath=%q, want true", settings["-trimpath"])
	}
	// -trimpath keeps -ldflags out of the build info; running the binary shows the stamp.
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("siglake version: %v", err)
	}
	if strings.TrimSpace(string(out)) != version {
		t.Errorf("siglake version printed %q, want %q", out, version)
	}
}
