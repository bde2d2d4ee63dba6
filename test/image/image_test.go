package image

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// No Docker daemon or registry is reachable here, so the image itself cannot be built. These
// tests check everything short of that with BuildKit's own Dockerfile parser and linter: the
// Dockerfile parses without a lint warning, the final stage runs the binary as the chart's
// non-root user with `compactor` as its default command and exposes the chart's ports, and the
// build stage's instructions, run as written on a build context filtered by .dockerignore,
// produce the static binary the final stage copies.

const imageVersion = "image-test-1"

// dockerfile parses the repository's Dockerfile, failing the test on any parser or lint warning.
func dockerfile(t *testing.T) []instructions.Stage {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	for _, w := range res.Warnings {
		t.Errorf("Dockerfile line %d: %s", w.Location.Start.Line, w.Short)
	}
	lint := linter.New(&linter.Config{Warn: func(rule, desc, url, msg string, loc []parser.Range) {
		line := 0
		if len(loc) > 0 {
			line = loc[0].Start.Line
		}
		t.Errorf("Dockerfile line %d: lint %s: %s", line, rule, msg)
	}})
	stages, _, err := instructions.Parse(res.AST, lint)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	if len(stages) != 2 {
		t.Fatalf("Dockerfile has %d stages, this test knows a build stage and a final stage", len(stages))
	}
	return stages
}

// TestDockerfileFinalStage: the runtime image is distroless static, runs as the chart's
// runAsUser, starts `siglake compactor` by default and exposes the chart's ports.
func TestDockerfileFinalStage(t *testing.T) {
	final := dockerfile(t)[1]
	values := loadValues(t)
	if !strings.HasPrefix(final.BaseName, "gcr.io/distroless/static") || !strings.HasSuffix(final.BaseName, ":nonroot") {
		t.Errorf("final base %q, want distroless static :nonroot (no shell, no libc: the binary must be static)", final.BaseName)
	}
	uid, _ := lookupPath(values, "securityContext.runAsUser")
	var user string
	var entrypoint, cmd []string
	exposed := map[string]bool{}
	for _, c := range final.Commands {
		switch c := c.(type) {
		case *instructions.UserCommand:
			user = c.User
		case *instructions.EntrypointCommand:
			entrypoint = c.CmdLine
			if c.PrependShell {
				t.Error("ENTRYPOINT in shell form: distroless has no shell, use the JSON form")
			}
		case *instructions.CmdCommand:
			cmd = c.CmdLine
			if c.PrependShell {
				t.Error("CMD in shell form: distroless has no shell, use the JSON form")
			}
		case *instructions.ExposeCommand:
			for _, p := range c.Ports {
				exposed[p] = true
			}
		}
	}
	if want := toString(uid) + ":" + toString(uid); user != want {
		t.Errorf("USER %q, want %q (the chart's securityContext.runAsUser, numeric so runAsNonRoot can verify it)", user, want)
	}
	eq(t, "ENTRYPOINT", entrypoint, []string{"/siglake"})
	eq(t, "CMD", cmd, []string{"compactor"})
	for _, v := range []struct{ value, proto string }{
		{"http.port", "tcp"}, {"gossip.port", "tcp"}, {"gossip.port", "udp"},
	} {
		port, ok := lookupPath(values, v.value)
		if !ok {
			t.Fatalf("values.yaml has no %s", v.value)
		}
		if p := toString(port) + "/" + v.proto; !exposed[p] {
			t.Errorf("EXPOSE lacks %s (%s in values.yaml)", p, v.value)
		}
	}
}

// TestDockerfileBuildStage runs the build stage as written: the context is the repository
// filtered by .dockerignore, WORKDIR is that copy, ARGs become the environment (TARGETOS and
// TARGETARCH are this machine's), and each RUN runs in sh. Then every file the final stage
// copies from the build stage must exist, and the binary must be the static, version-stamped
// one TestMakeBuildIsStatic checks.
func TestDockerfileBuildStage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	stages := dockerfile(t)
	build, final := stages[0], stages[1]
	ctxDir := t.TempDir()
	copyContext(t, repoRoot(t), ctxDir)

	workdir := ""
	env := os.Environ()
	for _, c := range build.Commands {
		switch c := c.(type) {
		case *instructions.WorkdirCommand:
			workdir = c.Path
		case *instructions.CopyCommand:
			if c.From != "" {
				t.Fatalf("build stage: %s: the test only knows COPY from the context", c)
			}
			for _, src := range c.SourcePaths {
				if _, err := os.Stat(filepath.Join(ctxDir, src)); err != nil {
					t.Errorf("build stage: %s: %s is not in the build context (.dockerignore?)", c, src)
				}
			}
		case *instructions.ArgCommand:
			for _, a := range c.Args {
				v := ""
				if a.Value != nil {
					v = *a.Value
				}
				switch a.Key {
				case "VERSION":
					v = imageVersion
				case "TARGETOS":
					v = runtime.GOOS
				case "TARGETARCH":
					v = runtime.GOARCH
				}
				env = append(env, a.Key+"="+v)
			}
		case *instructions.RunCommand:
			script := strings.Join(c.CmdLine, " ")
			sh := exec.Command("sh", "-c", script)
			sh.Dir, sh.Env = ctxDir, env
			if out, err := sh.CombinedOutput(); err != nil {
				t.Fatalf("build stage: RUN %s: %v\n%s", script, err, out)
			}
		default:
			t.Fatalf("build stage: %s: this test does not know how to run it; teach it", c)
		}
	}
	if workdir == "" {
		t.Fatal("build stage sets no WORKDIR")
	}

	var bin string
	for _, c := range final.Commands {
		cp, ok := c.(*instructions.CopyCommand)
		if !ok || cp.From != build.Name {
			continue
		}
		for _, src := range cp.SourcePaths {
			rel, err := filepath.Rel(workdir, src)
			if err != nil || strings.HasPrefix(rel, "..") {
				t.Fatalf("final stage: %s copies %s from outside the build WORKDIR %s", cp, src, workdir)
			}
			if _, err := os.Stat(filepath.Join(ctxDir, rel)); err != nil {
				t.Errorf("final stage: %s: the build stage did not produce %s", cp, src)
			}
			if cp.DestPath == "/siglake" {
				bin = filepath.Join(ctxDir, rel)
			}
		}
	}
	if bin == "" {
		t.Fatal("final stage copies no /siglake from the build stage")
	}
	if t.Failed() {
		return
	}
	checkStatic(t, bin, imageVersion)
}

// copyContext copies the files of root that .dockerignore lets into the build context.
func copyContext(t *testing.T, root, dst string) {
	t.Helper()
	f, err := os.Open(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	patterns, err := ignorefile.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatalf(".dockerignore: %v", err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatalf(".dockerignore: %v", err)
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		if skip, err := pm.MatchesOrParentMatches(filepath.ToSlash(rel)); err != nil {
			return err
		} else if skip {
			if d.IsDir() && !slices.ContainsFunc(patterns, func(p string) bool { return strings.HasPrefix(p, "!") }) {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return copyFile(p, target)
	})
	if err != nil {
		t.Fatalf("build context: %v", err)
	}
}

func copyFile(src, dst string) error {
	raw, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, raw, st.Mode().Perm())
}

// toString prints a decoded YAML scalar (an int decodes as int or float64).
func toString(v any) string { return strings.TrimSuffix(fmt.Sprint(v), ".0") }
