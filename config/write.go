package config

import (
	"bytes"
	"fmt"

	"github.com/BurntSushi/toml"
)

// TOML renders c as a self-contained config file: every key written out, no
// extends. Loading the output gives back the same Data, Model, Train and
// Sample (Path and Name come from the new file name), which is what lets a
// run folder's config.toml reproduce or resume the run.
func (c *Config) TOML() ([]byte, error) {
	var buf bytes.Buffer
	if c.Path != "" {
		fmt.Fprintf(&buf, "# gptg config resolved from %s (defaults and overrides applied).\n\n", c.Path)
	}
	enc := toml.NewEncoder(&buf)
	enc.Indent = ""
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("config %s: encode as TOML: %w", c.Path, err)
	}
	// A reader of a translation run's config.toml would take vocab = 0
	// for a size, and init = "torch" for its initialisation.
	return c.markUnread(buf.Bytes()), nil
}

// Diff lists the keys where c differs from base, as "section.key=value" in
// file order, e.g. ["model.heads=4", "model.norm=pre"]. A nil base means
// Default(). Each string can be passed back as a --set argument.
func (c *Config) Diff(base *Config) []string {
	if base == nil {
		base = Default()
	}
	var out []string
	for _, f := range getSchema().fields {
		if !f.value(c).Equal(f.value(base)) {
			out = append(out, f.name()+"="+f.format(c))
		}
	}
	return out
}
