// Command siglake is the siglake compactor sidecar and its tools.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=..."; otherwise the module version.
var version = ""

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", ""
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "-dirty"
				}
			}
		}
		if rev != "" {
			return "dev-" + rev[:min(12, len(rev))] + dirty
		}
		if bi.Main.Version != "" {
			return bi.Main.Version
		}
	}
	return "dev"
}

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
		{"delete-sweep", "show deletion requests, candidate files and matching rows (with --apply, delete them now)", runDeleteSweep},
		{"walgen", "write WAL segments of realistic log rows, as an ingest pod would", runWalgen},
		{"inspect", "show a table's files per partition and level, generations, overlap depth and a timeline", runInspect},
		{"simulate", "run the real compaction planner against a modelled ingest and report write amplification and depth", runSimulate},
		{"demo", "run walgen and the sidecar together on the embedded default and summarise the tables", runDemo},
		{"version", "print the version", func([]string) error { fmt.Println(buildVersion()); return nil }},
	}
}

func usage() {
	fmt.Fprintf(os.Stderr, "siglake %s: the siglake compactor sidecar\n\nUsage: siglake COMMAND [flags]\n\nCommands:\n", buildVersion())
	for _, c := range commands() {
		fmt.Fprintf(os.Stderr, "  %-14s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(os.Stderr, "\nRun 'siglake COMMAND -h' for a command's flags. Options: docs/configuration.md.\n")
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	for _, c := range commands() {
		if c.name == os.Args[1] {
			if err := c.run(os.Args[2:]); err != nil {
				fmt.Fprintf(os.Stderr, "siglake %s: %v\n", c.name, err)
				os.Exit(1)
			}
			return
		}
	}
	fmt.Fprintf(os.Stderr, "siglake: unknown command %q\n\n", os.Args[1])
	usage()
	os.Exit(2)
}
