package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/lake"
)

// tableSubcommand runs `siglake NAME ACTION [TABLE] ...`: the action's function gets the table
// (empty when the first argument after the action is a flag) and the rest.
func tableSubcommand(name, usage string, args []string, actions map[string]func(table string, args []string) error) error {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprintln(os.Stdout, usage)
		if len(args) == 0 {
			return usageError{fmt.Errorf("a subcommand is required")}
		}
		return nil
	}
	action, rest := args[0], args[1:]
	var table string
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		table, rest = rest[0], rest[1:]
	}
	if f, ok := actions[action]; ok {
		return f(table, rest)
	}
	names := make([]string, 0, len(actions))
	for a := range actions {
		names = append(names, a)
	}
	sort.Strings(names)
	fmt.Fprintln(os.Stderr, usage)
	return usageError{fmt.Errorf("%s %q: accepted subcommands: %s", name, action, strings.Join(names, ", "))}
}

// openTables is openLake for a command on table, or on every table in name order when it is
// empty (`retention show`, `fold show`); done closes the lake.
func openTables(cfg config.Config, table string) (context.Context, *lake.Lake, []string, func(), error) {
	ctx, l, done, err := openLake(cfg)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	tables := []string{table}
	if table != "" {
		err = requireTables(ctx, l, table)
	} else {
		tables, err = l.ListTables(ctx)
		sort.Strings(tables)
	}
	if err != nil {
		done()
		return nil, nil, nil, nil, err
	}
	return ctx, l, tables, done, nil
}

// tableSetting is what `retention set` and `fold set` share for a setting kept in a table
// property: --clear and --replace, the edit checked against the stored value before anything is
// written, the edit applied by compare-and-swap to the value stored at commit time (a concurrent
// set makes the commit retry on its result), and the diff printed from what it replaced.
type tableSetting[T any] struct {
	noun           string // what is set, "policy" or "specification", for messages
	clear, replace bool
	read           func(map[string]string) (T, bool, error)
	apply          func(T) (T, error) // the edit
	update         func(ctx context.Context, l *lake.Lake, table string, edit func(cur T, curErr error) (T, error)) (before, after T, err error)
	lines          func(T) []string
}

// checkFlags refuses --clear with an edit or --replace, and no edit without --clear; editFlags
// names the flags that edit (given says whether one was).
func (s tableSetting[T]) checkFlags(given bool, editFlags ...string) error {
	switch {
	case s.clear && (given || s.replace):
		return fmt.Errorf("--clear removes the %s; it takes no %s or --replace", s.noun, strings.Join(editFlags, ", "))
	case !s.clear && !given:
		last := len(editFlags) - 1
		return fmt.Errorf("give %s or %s (or --clear to remove the table's %s)", strings.Join(editFlags[:last], ", "), editFlags[last], s.noun)
	}
	return nil
}

// edited is cur with the edit applied: the zero value for --clear, an error for a stored value
// that does not parse unless --replace sets a new one over it.
func (s tableSetting[T]) edited(cur T, curErr error) (T, error) {
	var zero T
	switch {
	case s.clear:
		return zero, nil
	case curErr != nil && !s.replace:
		return zero, fmt.Errorf("%w; --replace sets a new %s over it, --clear removes it", curErr, s.noun)
	}
	return s.apply(cur)
}

// check reads the stored value of table and returns it and what the edit makes of it, writing
// nothing: a bad edit fails before the commit, and a dry run shows next.
func (s tableSetting[T]) check(ctx context.Context, l *lake.Lake, table string) (before, next T, err error) {
	t, err := loadTable(ctx, l, table)
	if err != nil {
		return before, next, err
	}
	before, _, readErr := s.read(t.Properties())
	next, err = s.edited(before, readErr)
	return before, next, err
}

// commit applies the edit to the value stored at commit time and prints what it replaced under
// headline.
func (s tableSetting[T]) commit(ctx context.Context, l *lake.Lake, table string, headline func(after T) string) error {
	before, after, err := s.update(ctx, l, table, s.edited)
	if err != nil {
		return err
	}
	fmt.Println(headline(after))
	if !printDiff(os.Stdout, s.lines(before), s.lines(after)) {
		fmt.Println("  (unchanged)")
	}
	return nil
}

// printDiff writes a before/after diff of a setting's lines: "- " for a line only before, "+ "
// for one only after, "  " for one kept. It returns whether anything changed.
func printDiff(w io.Writer, before, after []string) bool {
	changed := false
	for _, l := range before {
		if !slices.Contains(after, l) {
			fmt.Fprintf(w, "  - %s\n", l)
			changed = true
		}
	}
	for _, l := range after {
		if slices.Contains(before, l) {
			fmt.Fprintf(w, "    %s\n", l)
		} else {
			fmt.Fprintf(w, "  + %s\n", l)
			changed = true
		}
	}
	return changed
}
