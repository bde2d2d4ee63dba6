package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// runMainEnv makes the test binary run main() with the arguments after its own name: the
// command-line tests run the real entry point (exit status, stdout, stderr) without a build.
const runMainEnv = "SIGLAKE_CMD_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		os.Args = append([]string{"siglake"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type result struct {
	stdout, stderr string
	code           int
}

// siglake runs the command line args through main in a child process.
func siglake(t *testing.T, args ...string) result {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SIGLAKE_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, runMainEnv+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("siglake %v: %v", args, err)
	}
	return r
}

// TestCompactorHelp: `siglake compactor -h` is help asked for: stdout, exit 0, --once listed, and
// every option shown with the placeholder "value" (a back-quoted word in a usage string would
// become the placeholder: `-role all`, `-log-format json`).
func TestCompactorHelp(t *testing.T) {
	for _, h := range []string{"-h", "--help", "-help"} {
		r := siglake(t, "compactor", h)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("compactor %s: exit %d, stderr %q; want exit 0 and nothing on stderr", h, r.code, head(r.stderr))
		}
		if !regexp.MustCompile(`(?m)^  -once$`).MatchString(r.stdout) {
			t.Errorf("compactor %s does not list -once:\n%s", h, r.stdout)
		}
		for _, want := range []string{"  -role value\n", "  -log-format value\n", "  -delete-tasks value\n", "  -catalog value\n"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("compactor %s: no line %q", h, strings.TrimSpace(want))
			}
		}
		if strings.Contains(r.stdout, "`") {
			t.Errorf("compactor %s shows a back quote", h)
		}
		// Every flag line of an option is "-name value": nothing else is a placeholder.
		for _, line := range regexp.MustCompile(`(?m)^  -\S+ ?.*$`).FindAllString(r.stdout, -1) {
			f := strings.Fields(line)
			if f[0] != "-once" && (len(f) != 2 || f[1] != "value") {
				t.Errorf("compactor %s: flag line %q, want \"-NAME value\"", h, strings.TrimSpace(line))
			}
		}
	}
}

// TestCommandsHelp: every command's -h prints to stdout and exits 0; so does siglake -h.
func TestCommandsHelp(t *testing.T) {
	lines := [][]string{{"-h"}, {"--help"}, {"help"}, {"help", "gc"}}
	for _, c := range commands() {
		lines = append(lines, []string{c.name, "-h"}, []string{c.name, "--help"})
	}
	for _, args := range lines {
		r := siglake(t, args...)
		if r.code != 0 || r.stderr != "" || strings.TrimSpace(r.stdout) == "" {
			t.Errorf("siglake %s: exit %d, %d bytes on stdout, stderr %q; want exit 0 and help on stdout",
				strings.Join(args, " "), r.code, len(r.stdout), head(r.stderr))
		}
	}
}

func TestVersion(t *testing.T) {
	for _, v := range []string{"--version", "-version", "version"} {
		r := siglake(t, v)
		if r.code != 0 || strings.TrimSpace(r.stdout) != buildVersion() || r.stderr != "" {
			t.Errorf("siglake %s: exit %d, stdout %q, stderr %q; want exit 0 and %q", v, r.code, r.stdout, head(r.stderr), buildVersion())
		}
	}
}

// TestCommandLineErrors: a wrong command line goes to stderr with the usage and exit status 2.
func TestCommandLineErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"no-such-command"},
		{"compactor", "--no-such-flag"},
		{"compactor", "stray"},
		{"status", "--no-such-flag"},
		{"gc", "--older-than", "soon"},
		{"gc", "stray"},
		{"inspect", "events", "audit"},
	} {
		r := siglake(t, args...)
		if r.code != 2 || r.stdout != "" || r.stderr == "" {
			t.Errorf("siglake %s: exit %d, stdout %q, stderr %d bytes; want exit 2 and the error on stderr",
				strings.Join(args, " "), r.code, r.stdout, len(r.stderr))
		}
	}
	r := siglake(t, "no-such-command")
	if !strings.Contains(r.stderr, `unknown command "no-such-command"`) || !strings.Contains(r.stderr, "Usage: siglake COMMAND") {
		t.Errorf("unknown command: stderr does not name it and show the usage:\n%s", r.stderr)
	}
	// A bad option value is an error of the command (exit 1) that names the option.
	r = siglake(t, "compactor", "--role", "compact")
	if r.code != 1 || !strings.Contains(r.stderr, "SIGLAKE_COMPACTOR_ROLE") {
		t.Errorf("compactor --role compact: exit %d, stderr %q; want exit 1 naming the option", r.code, head(r.stderr))
	}
	// ... once, without the whole usage burying it in a container's log.
	if n := strings.Count(r.stderr, "SIGLAKE_COMPACTOR_ROLE"); n != 1 || strings.Count(r.stderr, "\n") > 2 {
		t.Errorf("compactor --role compact: stderr names the option %d times in %d lines; want one short message:\n%s", n, strings.Count(r.stderr, "\n"), r.stderr)
	}
}

// head is the first line of s, for failure messages (a usage runs to a hundred lines).
func head(s string) string {
	first, rest, _ := strings.Cut(s, "\n")
	if rest != "" {
		first += " ..."
	}
	return first
}
