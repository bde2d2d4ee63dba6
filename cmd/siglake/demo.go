package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/demo"
)

func runDemo(args []string) error {
	fs := flag.NewFlagSet("siglake demo", flag.ContinueOnError)
	var o demo.Options
	fs.StringVar(&o.Dir, "dir", "./siglake-demo", "directory for the demo's WAL, catalog and warehouse")
	fs.DurationVar(&o.Duration, "duration", 60*time.Second, "how long to generate load")
	fs.Int64Var(&o.Rate, "rate", 20000, "rows per second per table")
	verbose := fs.Bool("v", false, "show the sidecar's log lines")
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	level := "error"
	if *verbose {
		level = "info"
	}
	log, err := sidecar.NewLogger("console", level)
	if err != nil {
		return err
	}
	defer log.Sync()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return demo.Run(ctx, o, os.Stdout, log)
}
