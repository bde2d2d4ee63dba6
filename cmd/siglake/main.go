// Command siglake is the siglake compactor sidecar and its tools.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
)

// version and revision are stamped at build time with -ldflags "-X main.version=... -X
// main.revision=..." (make build, the image). Without them buildVersion and buildRevision find
// what the build recorded (build.go).
var version, revision = "", ""

type command struct {
	name, summary string
	run           func(args []string) error
}

func commands() []command {
	return []command{
		{"compactor", "run the sidecar: drain sealed WAL segments and maintain tables", runCompactor},
		{"status", "print a running sidecar's /debug/status as a table", runStatus},
		{"gc", "list (or with --apply delete) objects no retained snapshot references", runGC},
		{"delete-request", "record a deletion request (rows matching column conditions and a time range) and print its id", runDeleteRequest},
		{"delete-cancel", "withdraw a pending deletion request before a sweep executes it", runDeleteCancel},
		{"delete-sweep", "show deletion requests, candidate files and matching rows (with --apply, delete them now)", runDeleteSweep},
		{"fold", "show a rollup table's fold specification, or set it (keys, bucket, aggregates, tiers)", runFold},
		{"retention", "show a table's retention and what it would remove now, or set its policy (period and rules)", runRetention},
		{"skipped", "list data files set aside after failed rewrites, or clear them so maintenance plans them again", runSkipped},
		{"walgen", "write WAL segments of realistic log rows, as an ingest pod would", runWalgen},
		{"tail", "print the newest rows of a table from the lake plus the WAL buffer, without duplicates (--follow for new ones)", runTail},
		{"search", "print a table's rows matching a time range, column values, a substring or a token, in time order, pruned by the search metadata (--explain: what it read)", runSearch},
		{"inspect", "show a table's files per partition and level, generations, overlap depth and a timeline", runInspect},
		{"simulate", "run the real compaction planner against a modelled ingest and report write amplification and depth", runSimulate},
		{"demo", "run walgen and the sidecar together on the embedded default and summarise the tables", runDemo},
		{"version", "print the version (also --version)", runVersion},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "siglake %s: the siglake compactor sidecar\n\nUsage: siglake COMMAND [flags]\n\nCommands:\n", buildVersion())
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-14s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'siglake COMMAND -h' for a command's flags. Options: docs/configuration.md.\n")
}

// usageError is a command line the flag parser refused; the parser has already printed the error
// and the usage to stderr, so main only sets the exit status.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// reportedError is a failure the command has already logged; main only sets the exit status, so
// a container's log shows the error once.
type reportedError struct{ err error }

func (e reportedError) Error() string { return e.err.Error() }
func (e reportedError) Unwrap() error { return e.err }

// isHelp reports whether a is one of the spellings the flag package takes as a request for help.
func isHelp(a string) bool {
	switch a {
	case "-h", "--h", "-help", "--help":
		return true
	}
	return false
}

// parseFlags parses a command's flags. Help asked for (-h) prints the usage to stdout and returns
// help true; a bad flag prints the error and the usage to stderr and returns a usageError.
func parseFlags(fs *flag.FlagSet, args []string) (help bool, err error) {
	var out bytes.Buffer
	fs.SetOutput(&out)
	err = fs.Parse(args)
	fs.SetOutput(os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Stdout.Write(out.Bytes())
		return true, nil
	}
	os.Stderr.Write(out.Bytes())
	if err != nil {
		return false, usageError{err}
	}
	return false, nil
}

func main() { os.Exit(run(os.Args[1:])) }

// run runs one command line and returns the exit status: 0, 1 when the command failed, 2 when the
// command line is wrong. Help goes to stdout, errors to stderr.
func run(args []string) int {
	if len(args) == 0 {
		usage(os.Stderr)
		return 2
	}
	name, rest := args[0], args[1:]
	switch {
	case isHelp(name) || name == "help" && len(rest) == 0:
		usage(os.Stdout)
		return 0
	case name == "help":
		name, rest = rest[0], []string{"-h"} // siglake help COMMAND: that command's flags
	case name == "-version" || name == "--version":
		name = "version"
	}
	for _, c := range commands() {
		if c.name != name {
			continue
		}
		err := c.run(rest)
		var ue usageError
		var re reportedError
		switch {
		case errors.As(err, &ue):
			return 2
		case errors.As(err, &re):
			return 1 // already logged, once
		case err != nil:
			fmt.Fprintf(os.Stderr, "siglake %s: %v\n", c.name, err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "siglake: unknown command %q\n\n", name)
	usage(os.Stderr)
	return 2
}

func runVersion(args []string) error {
	fs := flag.NewFlagSet("siglake version", flag.ContinueOnError)
	verbose := fs.Bool("v", false, "also print the VCS revision, the Go version and the platform")
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	fmt.Println(buildVersion())
	if *verbose {
		rev := buildRevision()
		if rev == "" {
			rev = "unknown"
		}
		fmt.Printf("revision %s\n%s %s/%s\n", rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	return nil
}
