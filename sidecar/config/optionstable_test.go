package config

import (
	"fmt"
	"strings"
)

// OptionsTable renders the option table of docs/configuration.md from Options(), so the document
// cannot drift from the code (TestConfigurationDocInStep compares them).
func OptionsTable() string {
	var b strings.Builder
	b.WriteString("| flag | environment | default | Helm value | meaning |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, o := range Options() {
		def := "`" + o.Default + "`"
		if o.Default == "" {
			def = "(empty)"
		}
		chart := "-"
		if o.Chart != "" {
			chart = "`" + o.Chart + "`"
		}
		fmt.Fprintf(&b, "| `--%s` | `%s` | %s | %s | %s |\n", o.Flag, o.Env, def, chart, strings.ReplaceAll(o.Usage, "|", "\\|"))
	}
	return b.String()
}
