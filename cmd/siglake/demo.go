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
	fs.StringVar(&o.Dir, "dir", defaultDemoDir, "directory for the demo's WAL, catalog and warehouse (the tools take it as --dir)")
	o.Duration = 60 * time.Second
	durationVar(fs, &o.Duration, "duration", false, "how long to generate load")
	fs.Int64Var(&o.Rate, "rate", 20000, "rows per second per table")
	fs.StringVar(&o.HTTPAddr, "http-addr", "127.0.0.1:9464", "the sidecar's HTTP address (/metrics, /debug/status); a free port if it is taken")
	fs.BoolVar(&o.KeepRunning, "keep-running", false, "after the summary, keep a sidecar running on the demo's lake until Ctrl-C (try siglake status, curl /metrics)")
	verbose := fs.Bool("v", false, "show the sidecar's log lines")
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	o.Version, o.Revision = buildVersion(), buildRevision()
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
