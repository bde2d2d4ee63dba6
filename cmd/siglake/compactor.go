package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar"
)

func runCompactor(args []string) error {
	// --once is a mode of this invocation, not a setting of the sidecar, so it is not in the option table.
	once := false
	var rest []string
	for _, a := range args {
		if a == "--once" || a == "-once" {
			once = true
			continue
		}
		rest = append(rest, a)
	}
	cfg, err := sidecar.Load(rest, nil)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	log, err := sidecar.NewLogger(cfg.LogFormat, cfg.LogLevel)
	if err != nil {
		return err
	}
	defer log.Sync()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	p := sidecar.NewProcess(cfg, log, buildVersion())
	if err := p.Run(ctx, once); err != nil {
		log.Error("siglake compactor failed", zap.Error(err))
		return err
	}
	return nil
}
