package chart

import (
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const buildVersion = "chart-test-1"

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
	buildDir  string // removed by TestMain
)

// TestMain removes the copy of the built binary.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// makeBuild runs `make build` once and returns a private copy of bin/siglake, so a concurrent
// build in the checkout cannot change the binary under a running test.
func makeBuild(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	root := repoRoot(t)
	buildOnce.Do(func() {
		cmd := exec.Command("make", "-s", "build", "VERSION="+buildVersion)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("make build: %v\n%s", err, out)
			return
		}
		if buildDir, buildErr = os.MkdirTemp("", "siglake-chart-test-"); buildErr != nil {
			return
		}
		raw, err := os.ReadFile(filepath.Join(root, "bin", "siglake"))
		if err != nil {
			buildErr = err
			return
		}
		buildBin = filepath.Join(buildDir, "siglake")
		buildErr = os.WriteFile(buildBin, raw, 0o755)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

// TestMakeBuildIsStatic: `make build`, the command the Dockerfile runs, produces a static binary
// (no ELF interpreter, no shared libraries, CGO_ENABLED=0, -trimpath, version stamped), which
// is what runs on distroless static.
func TestMakeBuildIsStatic(t *testing.T) {
	docker, err := os.ReadFile(filepath.Join(repoRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(docker), "make build") {
		t.Fatal("the Dockerfile does not build with `make build`, so this test does not cover the image")
	}
	bin := makeBuild(t)

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("bin/siglake has an ELF interpreter: it is dynamically linked")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("bin/siglake needs shared libraries %v (err %v)", libs, err)
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
	if strings.TrimSpace(string(out)) != buildVersion {
		t.Errorf("siglake version printed %q, want %q", out, buildVersion)
	}
}
