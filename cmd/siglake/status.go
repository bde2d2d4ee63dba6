package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/demo"
	"github.com/siglake/siglake/sidecar/statustext"
)

func runStatus(args []string) error {
	fs := flag.NewFlagSet("siglake status", flag.ContinueOnError)
	withSynopsis(fs, "siglake status [--addr HOST:PORT | --dir DIR] [--json]")
	addr := fs.String("addr", envOr("SIGLAKE_HTTP_ADDR", "127.0.0.1:9464"), "the sidecar's HTTP address, `HOST:PORT` (env SIGLAKE_HTTP_ADDR)")
	asJSON := fs.Bool("json", false, "print the raw JSON")
	dir := fs.String("dir", "", "a demo `DIR`: the address of the sidecar that 'siglake demo --dir DIR' runs on it")
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if *dir != "" {
		explicit := false
		fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "addr" })
		if explicit {
			return fmt.Errorf("--dir %s names the sidecar's address; give either --dir or --addr", *dir)
		}
		a, err := demo.RunningAddr(*dir)
		if err != nil {
			return err
		}
		*addr = a
	}
	url := "http://" + strings.TrimPrefix(*addr, "http://") + "/debug/status"
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return fmt.Errorf("is the sidecar running? (siglake demo --keep-running starts one; --addr or SIGLAKE_HTTP_ADDR names another) %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if *asJSON {
		_, err = os.Stdout.Write(body)
		return err
	}
	var r sidecar.StatusReport
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("decode %s: %w", url, err)
	}
	statustext.Write(os.Stdout, r)
	return nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
