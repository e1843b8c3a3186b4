package config

import (
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestShowRoundTrips(t *testing.T) {
	cfg := Default()
	cfg.Seed = 42
	cfg.Device.Threads = 3
	out, err := Show(cfg)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Load(writeConfig(t, string(out)), nil)
	if err != nil {
		t.Fatalf("Show output does not load: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(back, cfg) {
		t.Errorf("round trip: got %+v, want %+v", back, cfg)
	}
}

func TestShowRedactsSecrets(t *testing.T) {
	type creds struct {
		User  string `mapstructure:"user"`
		Key   string `mapstructure:"key" secret:"true"`
		Empty string `mapstructure:"empty" secret:"true"`
	}
	n, err := yamlNode(reflect.ValueOf(creds{User: "alice", Key: "hunter2"}))
	if err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if strings.Contains(s, "hunter2") || !strings.Contains(s, "key: '***'") {
		t.Errorf("secret not redacted:\n%s", s)
	}
	if !strings.Contains(s, "user: alice") || !strings.Contains(s, `empty: ""`) {
		t.Errorf("non-secret or empty secret changed:\n%s", s)
	}
}
