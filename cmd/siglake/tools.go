package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/lake"
)

// defaultDemoDir is where `siglake demo` puts its WAL, catalog and warehouse by default.
const defaultDemoDir = "./siglake-demo"

const dirUsage = "a demo directory `DIR` (siglake demo --dir): shortcut for --catalog sqlite:DIR/catalog.db --warehouse DIR/warehouse"

// demoLake is what --dir DIR stands for: the demo's embedded catalog and local warehouse.
func demoLake(dir string) (catalog, warehouse string) {
	return "sqlite:" + filepath.Join(dir, "catalog.db"), filepath.Join(dir, "warehouse")
}

// withDir turns --dir DIR into the catalog and warehouse options of a tool's remaining command
// line. Giving --dir and --catalog or --warehouse together is refused: one says what the other does.
func withDir(dir string, rest []string) ([]string, error) {
	if dir == "" {
		return rest, nil
	}
	for _, a := range rest {
		name := strings.TrimLeft(strings.SplitN(a, "=", 2)[0], "-")
		if strings.HasPrefix(a, "-") && (name == "catalog" || name == "warehouse") {
			return nil, fmt.Errorf("--dir %s sets the catalog and the warehouse; give either --dir or --%s", dir, name)
		}
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("--dir %s: no such directory (siglake demo --dir %s --keep-running creates one and keeps a sidecar on it)", dir, dir)
	}
	cat, wh := demoLake(dir)
	return append(rest, "--catalog="+cat, "--warehouse="+wh), nil
}

// requireCatalog fails, saying what to pass, when the catalog is an embedded one whose file does
// not exist. A tool would otherwise get SQLite's "unable to open database file (14)" for a missing
// directory, or silently create an empty catalog and find no table.
func requireCatalog(cfg config.Config) error {
	path, ok := strings.CutPrefix(cfg.Catalog, "sqlite:")
	if !ok {
		return nil
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	hint := ""
	if cat, _ := demoLake(defaultDemoDir); cat != cfg.Catalog {
		if _, err := os.Stat(filepath.Join(defaultDemoDir, "catalog.db")); err == nil {
			hint = fmt.Sprintf(" (%s holds one: --dir %s)", defaultDemoDir, defaultDemoDir)
		}
	}
	return fmt.Errorf("catalog %s: no such file. Pass --dir DIR for a demo directory%s, "+
		"--catalog sqlite:PATH (or SIGLAKE_CATALOG) for a sidecar's embedded catalog, "+
		"or --catalog postgres://... / rest+https://... for a shared one", cfg.Catalog, hint)
}

// splitArgs sorts a tool's command line into its own flags (those fs defines), the compactor
// options for config.Load, and positional arguments. Every compactor option takes a value, so
// "--name value" is one option; a tool's own boolean flag takes none.
func splitArgs(fs *flag.FlagSet, args []string) (own, rest, positional []string, help bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if isHelp(a) {
			return nil, nil, nil, true
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		name := strings.TrimLeft(strings.SplitN(a, "=", 2)[0], "-")
		takesValue := !strings.Contains(a, "=")
		into := &rest
		if f := fs.Lookup(name); f != nil {
			into = &own
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				takesValue = false
			}
		}
		*into = append(*into, a)
		if takesValue && i+1 < len(args) {
			i++
			*into = append(*into, args[i])
		}
	}
	return own, rest, positional, false
}

// checkOptionFlags checks what splitArgs left for config.Load: every flag is a compactor option
// and has its value.
func checkOptionFlags(rest []string) error {
	known := map[string]bool{}
	for _, o := range config.Options() {
		known[o.Flag] = true
	}
	for i := 0; i < len(rest); i++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(rest[i], "-"), "=")
		switch {
		case !known[name]:
			return fmt.Errorf("flag provided but not defined: -%s", name)
		case !hasValue && i+1 >= len(rest):
			return fmt.Errorf("flag needs an argument: -%s", name)
		case !hasValue:
			i++
		}
	}
	return nil
}

// withSynopsis makes fs's usage its synopsis and then its flags (the flag package's default is
// "Usage of NAME:" alone).
func withSynopsis(fs *flag.FlagSet, synopsis string) {
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s\n\n", synopsis)
		fs.PrintDefaults()
	}
}

// toolHelp prints a tool's flags and where the catalog options are documented.
func toolHelp(fs *flag.FlagSet) {
	fs.SetOutput(os.Stdout)
	fs.Usage()
	fmt.Println("\nCatalog, warehouse and S3 options are the compactor's: see 'siglake compactor -h'.")
}

// loadTable loads a table a command names; a name the catalog does not have is an error that
// lists the tables it has, so a typo shows its fix.
func loadTable(ctx context.Context, l *lake.Lake, name string) (*table.Table, error) {
	t, err := l.LoadTable(ctx, name)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return nil, noSuchTable(ctx, l, name)
	}
	return t, err
}

// requireTables fails, listing the catalog's tables, when one of names is not among them: every
// command that takes a TABLE checks it before it prints or writes anything.
func requireTables(ctx context.Context, l *lake.Lake, names ...string) error {
	if len(names) == 0 {
		return nil
	}
	have, err := l.ListTables(ctx)
	if err != nil {
		return err
	}
	for _, n := range names {
		if !slices.Contains(have, n) {
			return noSuchTable(ctx, l, n)
		}
	}
	return nil
}

// noSuchTable is the error for a table the catalog does not have: it lists the tables it has.
func noSuchTable(ctx context.Context, l *lake.Lake, name string) error {
	tables, err := l.ListTables(ctx)
	if err != nil {
		return fmt.Errorf("table %s is not in the catalog (namespace %s); listing its tables failed: %w", name, l.Namespace(), err)
	}
	if len(tables) == 0 {
		return fmt.Errorf("table %s is not in the catalog: namespace %s has no tables yet", name, l.Namespace())
	}
	sort.Strings(tables)
	return fmt.Errorf("table %s is not in the catalog; namespace %s has: %s", name, l.Namespace(), strings.Join(tables, ", "))
}

// openLake opens the catalog and warehouse of cfg for a one-shot command, under a context that
// SIGTERM or an interrupt cancels; done closes the lake and releases the signal handler.
func openLake(cfg config.Config) (context.Context, *lake.Lake, func(), error) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	l, err := lake.Open(ctx, config.LakeConfig(cfg))
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	return ctx, l, func() { l.Close(); stop() }, nil
}
