package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"

	"gopkg.in/yaml.v3"

	"github.com/hookrun/hookrun/internal/app"
	"github.com/hookrun/hookrun/workflows"
)

// loadConfig reads path (empty: defaults only), rejects unknown keys, expands
// ${NAME} in every string value from lookup, fills defaults and validates. A
// missing variable expands to "". Expansion happens after YAML parsing, so an
// expanded value (a secret with ": " or "#" in it) is data, never YAML.
func loadConfig(path string, lookup func(string) (string, bool)) (*app.Config, error) {
	var c app.Config
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading config: %w", err)
		}
		d := yaml.NewDecoder(bytes.NewReader(data))
		d.KnownFields(true)
		if err := d.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("parsing config %s: %w", path, err)
		}
		// A section that sets anything enables its forge (or Slack); decided before
		// expansion, so that an unset ${VAR} cannot silently disable it.
		if c.GitHub.Enabled == nil && !reflect.ValueOf(c.GitHub).IsZero() {
			c.GitHub.Enabled = boolPtr(true)
		}
		if c.GitLab.Enabled == nil && !reflect.ValueOf(c.GitLab).IsZero() {
			c.GitLab.Enabled = boolPtr(true)
		}
		if c.Gitea.Enabled == nil && !reflect.ValueOf(c.Gitea).IsZero() {
			c.Gitea.Enabled = boolPtr(true)
		}
		if c.Slack.Enabled == nil && !reflect.ValueOf(c.Slack).IsZero() {
			c.Slack.Enabled = boolPtr(true)
		}
		expandStrings(reflect.ValueOf(&c).Elem(), lookup)
	}
	c.Path = path
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		where := path
		if where == "" {
			where = "(defaults)"
		}
		return nil, fmt.Errorf("invalid config %s: %w", where, err)
	}
	return &c, nil
}

// expandStrings replaces ${NAME} in every string (and []string element)
// reachable from v.
func expandStrings(v reflect.Value, lookup func(string) (string, bool)) {
	switch v.Kind() {
	case reflect.String:
		// workflows.Expand knows what a ${NAME} is; here an unset NAME
		// expands to "".
		v.SetString(workflows.Expand(v.String(), func(name string) (string, bool) {
			val, _ := lookup(name)
			return val, true
		}))
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				expandStrings(v.Field(i), lookup)
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			expandStrings(v.Index(i), lookup)
		}
	}
}

func boolPtr(b bool) *bool { return &b }
