package chart

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
