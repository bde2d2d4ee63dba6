package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Browser is headless Chromium (Debian's package, scripts/chromium.sh install): the status pages
// are tested in a real browser.
type Browser struct {
	t   testing.TB
	bin string
}

// Chromium returns the browser, or skips (fails under CI) when it is not installed.
func Chromium(t testing.TB) *Browser {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return &Browser{t: t, bin: p}
		}
	}
	unavailable(t, "headless Chromium not installed (scripts/chromium.sh install)")
	return nil
}

// run runs the browser once on url with args. Every run gets a fresh profile directory; the
// flags keep it from reaching for the network on its own (update checks, sync, QUIC), which a
// closed network refuses, and --no-sandbox lets it run as root in a container.
func (b *Browser) run(url string, args ...string) []byte {
	b.t.Helper()
	profile := b.t.TempDir()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--user-data-dir=" + profile}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.bin, append(append(base, args...), url)...)
	cmd.Env = append(os.Environ(), "HOME="+profile)
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.t.Fatalf("chromium %v %s: %v\n%s", args, url, err, stderr.String())
	}
	return out
}

// DumpDOM loads url and returns the DOM as the browser built it.
func (b *Browser) DumpDOM(url string) string {
	b.t.Helper()
	return string(b.run(url, "--dump-dom"))
}

// Screenshot loads url in a window of width x height and writes a PNG to file.
func (b *Browser) Screenshot(url, file string, width, height int) {
	b.t.Helper()
	abs, err := filepath.Abs(file)
	if err != nil {
		b.t.Fatal(err)
	}
	b.run(url, "--screenshot="+abs, "--window-size="+strconv.Itoa(width)+","+strconv.Itoa(height))
	if st, err := os.Stat(abs); err != nil || st.Size() == 0 {
		b.t.Fatalf("chromium wrote no screenshot to %s (%v)", abs, err)
	}
}

// ArtifactDir is where a test keeps files for people to look at afterwards (screenshots):
// $SIGLAKE_TEST_ARTIFACTS/<test name> when set, else the test's temporary directory.
func ArtifactDir(t testing.TB) string {
	t.Helper()
	root := os.Getenv("SIGLAKE_TEST_ARTIFACTS")
	if root == "" {
		return t.TempDir()
	}
	dir := filepath.Join(root, strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// limitedBuffer keeps the last 8 KiB written: Chromium's stderr is chatty.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.b = append(l.b, p...)
	if len(l.b) > 8<<10 {
		l.b = l.b[len(l.b)-8<<10:]
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }
