package app

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// owner is a package configuration the file's values go to: how Config
// builds it and the package's own defaulting of it.
type owner struct {
	name     string
	build    func(*Config) any
	defaults func(any) any
}

// owners are every package configuration Start builds from the file.
var owners = []owner{
	{"queue.Config", func(c *Config) any { return c.queueConfig() }, func(v any) any { return withDefaults(v) }},
	{"queue.ConsumerConfig", func(c *Config) any { return c.runnerConfig().Consumer }, func(v any) any { return withDefaults(v) }},
	{"runner.Config", func(c *Config) any { rc := c.runnerConfig(); rc.Consumer = zeroOf(rc.Consumer); return rc }, func(v any) any { return withDefaults(v) }},
	{"runner.OutboxConfig", func(c *Config) any { return c.outboxConfig() }, func(v any) any { return withDefaults(v) }},
	{"ingress.Config", func(c *Config) any { return c.ingressConfig() }, func(v any) any { return withDefaults(v) }},
	{"stores.RetentionConfig", func(c *Config) any { return c.retentionConfig() }, func(v any) any { return v }},
	{"slack.Config", func(c *Config) any { return c.slackReporterConfig() }, func(v any) any { return withDefaults(v) }},
	{"sbx.Config", func(c *Config) any { return c.sbxConfig() }, func(v any) any { return withDefaults(v) }},
}

// A key of the file that goes to a package's configuration defaults to
// that package's default, or has a default only when the package has
// none. appDefaults are the exceptions, each with why; ownedHere are the
// keys that go to no package configuration compared here.
var (
	appDefaults = map[string]string{
		"runner.max_ack_pending": "the consumer's default is its concurrency; a server leaves room for runs waiting on their group",
		"runs.retention":         "stored deliveries and their large bodies are kept as long as runs (the deliveries view), not only the queue's dedupe window",
	}
	ownedHere = map[string]string{
		"workflows": "workflows.NewWorkflowSet's directory", "shutdown_grace": "App.Shutdown's", "log.level": "cmd/hookrun's logger",
		"log.format": "cmd/hookrun's logger", "runner.allow_docker_socket": "docker.Config, default false there too",
		"runner.orphan_age": "removeOrphans'", "runner.default_timeout": "the engine's; its own default is none",
		"runner.host_steps": "hoststeps.go", "runner.step_user": "hoststeps.go", "runner.metrics_listen": "metrics.go",
		"runs.request_key": "reqkey.go", "runs.request_key_file": "reqkey.go", "api.token": "the API's and the UI's",
		"Tracing": "telemetry.Setup", "Path": "the loader's",
	}
	// prefixes of sections that go to the forges' configurations
	// (forges.go), which have no defaults of the file's.
	forgeSections = []string{"github.", "gitlab.", "gitea."}
)

// TestDefaultsAreTheOwnersDefaults fails when a default of Config differs
// from the default of the package its value goes to, and when a key of
// Config goes nowhere this test knows (a new key must be placed).
func TestDefaultsAreTheOwnersDefaults(t *testing.T) {
	var defaulted Config
	defaulted.SetDefaults()
	for _, key := range leafKeys(reflect.TypeFor[Config](), "") {
		fed := false
		for _, o := range owners {
			for _, field := range fedFields(o, &defaulted, key) {
				fed = true
				checkOwnerDefault(t, o, &defaulted, key, field)
			}
		}
		_, here := ownedHere[key]
		forge := slices.ContainsFunc(forgeSections, func(p string) bool { return strings.HasPrefix(key, p) })
		switch {
		case fed && here:
			t.Errorf("%s goes to a package configuration: remove it from ownedHere", key)
		case !fed && !here && !forge:
			t.Errorf("%s goes to no package configuration compared here: add it to owners' builders or to ownedHere", key)
		case forge && !fieldByKey(reflect.ValueOf(defaulted), key).IsZero():
			t.Errorf("%s has a default in internal/app; the forge's package owns it", key)
		}
	}
}

// checkOwnerDefault compares field of o's configuration built from the
// defaulted file with o's own default of it (the same configuration with
// the field unset, defaulted by o).
func checkOwnerDefault(t *testing.T, o owner, defaulted *Config, key, field string) {
	t.Helper()
	built := reflect.New(reflect.TypeOf(o.build(defaulted))).Elem()
	built.Set(reflect.ValueOf(o.build(defaulted)))
	got := fieldByPath(reflect.ValueOf(o.defaults(built.Interface())), field)
	unset := fieldByPath(built, field)
	unset.Set(reflect.Zero(unset.Type()))
	want := fieldByPath(reflect.ValueOf(o.defaults(built.Interface())), field)
	same := reflect.DeepEqual(got.Interface(), want.Interface())
	if !same && want.IsZero() {
		return // the package has no default: the file's is the one
	}
	if why, ok := appDefaults[key]; ok {
		if same {
			t.Errorf("%s defaults to %s.%s's default %v: remove it from appDefaults (%s)", key, o.name, field, got, why)
		}
		return
	}
	if !same {
		t.Errorf("%s defaults to %v but %s.%s defaults to %v: take the default from %s", key, got, o.name, field, want, o.name)
	}
}

// fedFields are the fields of o's configuration that the file's key
// changes: the key is set to another value and the configuration built
// again.
func fedFields(o owner, defaulted *Config, key string) []string {
	changed := *defaulted
	perturb(fieldByKey(reflect.ValueOf(&changed).Elem(), key))
	before, after := reflect.ValueOf(o.build(defaulted)), reflect.ValueOf(o.build(&changed))
	var out []string
	for _, f := range leafPaths(before.Type(), "") {
		if !reflect.DeepEqual(fieldByPath(before, f).Interface(), fieldByPath(after, f).Interface()) {
			out = append(out, f)
		}
	}
	return out
}

func TestFedFieldsFindsTheField(t *testing.T) {
	var c Config
	c.SetDefaults()
	got := fedFields(owners[1], &c, "runner.ack_wait")
	if !reflect.DeepEqual(got, []string{"AckWait"}) {
		t.Fatalf("runner.ack_wait feeds %v of the consumer's configuration, want [AckWait]", got)
	}
}

// leafKeys are the file's keys (yaml names joined by dots; a field
// without one by its Go name) down to values that are not sections.
func leafKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		key := prefix + yamlName(f)
		if f.Type.Kind() == reflect.Struct {
			out = append(out, leafKeys(f.Type, key+".")...)
			continue
		}
		out = append(out, key)
	}
	return out
}

func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "" || name == "-" {
		return f.Name
	}
	return name
}

// fieldByKey is the value under a leafKeys key.
func fieldByKey(v reflect.Value, key string) reflect.Value {
	for _, part := range strings.Split(key, ".") {
		for i := range v.NumField() {
			if yamlName(v.Type().Field(i)) == part {
				v = v.Field(i)
				break
			}
		}
	}
	return v
}

// leafPaths are a package configuration's exported fields by Go name
// (joined by dots), down to values that are not structs.
func leafPaths(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Time]() {
			out = append(out, leafPaths(f.Type, prefix+f.Name+".")...)
			continue
		}
		out = append(out, prefix+f.Name)
	}
	return out
}

func fieldByPath(v reflect.Value, path string) reflect.Value {
	for _, name := range strings.Split(path, ".") {
		v = v.FieldByName(name)
	}
	return v
}

// perturb sets v to another value than it has.
func perturb(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Int, reflect.Int64:
		v.SetInt(v.Int() + 7)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Slice:
		v.Set(reflect.Append(v, reflect.New(v.Type().Elem()).Elem()))
		if v.Type().Elem().Kind() == reflect.String {
			v.Index(v.Len() - 1).SetString("x")
		}
	case reflect.Pointer:
		if v.Type().Elem().Kind() == reflect.Bool { // an enabled: on
			on := true
			v.Set(reflect.ValueOf(&on))
		} else if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		} else {
			v.Set(reflect.Zero(v.Type()))
		}
	default:
		panic(fmt.Sprintf("perturb: no rule for %s", v.Type()))
	}
}

func zeroOf[T any](T) T {
	var z T
	return z
}

// withDefaults calls a package configuration's WithDefaults.
func withDefaults(v any) any {
	return reflect.ValueOf(v).MethodByName("WithDefaults").Call(nil)[0].Interface()
}

// TestValidateAppliesThePackagesRules: a value only a package's rule
// refuses is refused when the file is validated, not when Start builds
// the package; the rules written once are named by the file's keys.
func TestValidateAppliesThePackagesRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"retry command", func(c *Config) { c.Commands.Retry = "re try" }, `checking commands: retry "re try" must be a name`},
		{"heartbeat", func(c *Config) { c.Runner.Heartbeat = c.Runner.AckWait }, "runner.heartbeat: must be positive and shorter than the ack wait (30s), got 30s"},
		{"slack command", func(c *Config) { c.Slack.Command = "hookrun" }, `slack.command: want a slash command such as /hookrun, got "hookrun"`},
		{"nats cert without key", func(c *Config) { c.NATS.URL, c.NATS.CertFile = "nats://a:4222", "/c.pem" }, "nats: cert file and key file go together"},
		{"outbox backoff past its cap", func(c *Config) { c.Runner.ReportOutbox.Backoff = time.Hour }, "runner.report_outbox: validating outbox config: max backoff (10m0s) is shorter than backoff (1h0m0s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Config
			c.SetDefaults()
			tc.set(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
