package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/config"
)

func runCompactor(args []string) error {
	// --once is a mode of this invocation, not a setting of the sidecar, so it is not in the option table.
	once := false
	var rest []string
	for _, a := range args {
		if isHelp(a) {
			compactorUsage(os.Stdout)
			return nil
		}
		if a == "--once" || a == "-once" {
			once = true
			continue
		}
		rest = append(rest, a)
	}
	cfg, err := config.Load(rest, nil)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return loadError(err)
	}
	log, err := sidecar.NewLogger(cfg.LogFormat, cfg.LogLevel)
	if err != nil {
		return err
	}
	defer log.Sync()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	p := sidecar.NewProcess(cfg, log, buildVersion())
	p.Metrics.SetBuildInfo(buildVersion(), buildRevision())
	if err := p.Run(ctx, once); err != nil {
		log.Error("siglake compactor failed", zap.Error(err))
		return reportedError{err} // logged: main does not print it again
	}
	return nil
}

// compactorUsage is `siglake compactor -h`: the --once mode, then every option (flags win over
// their SIGLAKE_* environment variables; docs/configuration.md).
func compactorUsage(w io.Writer) {
	fmt.Fprintf(w, `Usage: siglake compactor [--once] [flags]

Runs the sidecar: drains sealed WAL segments into Iceberg tables and maintains the tables. Every
flag also has a SIGLAKE_* environment variable; a flag wins over its variable.

  -once
    	drain every sealed segment regardless of batch age, then exit 0; no maintenance runs (for
    	jobs and tests; a mode of this invocation, so it has no environment variable)

Options (docs/configuration.md):
`)
	config.PrintFlags(w)
}
