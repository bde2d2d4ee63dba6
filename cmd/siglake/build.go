package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// The version a build reports, whichever way it was built:
//
//   - make build and the image stamp main.version and main.revision with -ldflags;
//   - go build and go install record the module version and, in a git checkout, the VCS revision
//     (runtime/debug.ReadBuildInfo): go install ...@v1.2.3 reports v1.2.3, a build in a checkout
//     the version Go derives from the revision (v0.0.0-<time>-<revision>, +dirty when modified);
//   - go run records neither (the module version is "(devel)"), so the revision is read from the
//     checkout the binary was compiled from, which go run has just compiled, and the version is
//     dev-<revision>.
//
// "dev" is left only for a build with none of these (a copy of the sources without .git).
var build = sync.OnceValues(func() (ver, rev string) {
	ver, rev = version, revision
	modVersion, dirty := "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if rev == "" {
					rev = s.Value
				}
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			modVersion = v
		}
	}
	if ver == "" && rev == "" && modVersion == "" {
		rev, dirty = sourceRevision()
	}
	switch {
	case ver != "":
	case modVersion != "":
		ver = modVersion
	case rev != "":
		ver = "dev-" + rev[:min(12, len(rev))]
		if dirty {
			ver += "-dirty"
		}
	default:
		ver = "dev"
	}
	return ver, rev
})

// buildVersion is the version this binary reports (siglake version, /debug/status, gossip,
// siglake_build_info).
func buildVersion() string { v, _ := build(); return v }

// buildRevision is the VCS revision it was built from, "" when unknown.
func buildRevision() string { _, r := build(); return r }

// sourceRevision asks git for the revision of the checkout this file was compiled from, when that
// checkout is on this machine (go run; never a -trimpath build, whose file names are not paths).
func sourceRevision() (rev string, dirty bool) {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", false
	}
	dir := filepath.Dir(file)
	if _, err := os.Stat(dir); err != nil {
		return "", false
	}
	git := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0") // a status must not take the index lock
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	rev, err := git("rev-parse", "HEAD")
	if err != nil || len(rev) < 12 {
		return "", false
	}
	status, err := git("status", "--porcelain", "--untracked-files=no")
	return rev, err == nil && status != ""
}
