package config

import (
	"strings"
	"testing"
)

func TestRegistryValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    func(*RegistryConfig)
		wantErr string
	}{
		{"defaults", func(*RegistryConfig) {}, ""},
		{"s3", func(c *RegistryConfig) { c.Store, c.S3.Endpoint = "s3://models/team", "127.0.0.1:9000" }, ""},
		{"s3 without endpoint", func(c *RegistryConfig) { c.Store = "s3://models" }, "s3.endpoint: required"},
		{"endpoint with scheme", func(c *RegistryConfig) { c.Store, c.S3.Endpoint = "s3://m", "http://h:9000" }, "want host:port"},
		{"no bucket", func(c *RegistryConfig) { c.Store, c.S3.Endpoint = "s3:///x", "h:1" }, "names no bucket"},
		{"credentials in URL", func(c *RegistryConfig) { c.Store = "s3://key:secret@models" }, "credentials do not belong"},
		{"other scheme", func(c *RegistryConfig) { c.Store = "gs://models" }, "want file://DIR or s3://"},
		{"empty file", func(c *RegistryConfig) { c.Store = "file://" }, "names no directory"},
		{"tracking scheme", func(c *RegistryConfig) { c.Tracking.URI = "localhost:5000" }, "tracking.uri"},
		{"tracking ok", func(c *RegistryConfig) { c.Tracking.URI = "http://127.0.0.1:5000" }, ""},
		{"retries", func(c *RegistryConfig) { c.Tracking.Retries = -1 }, "tracking.retries"},
		{"backoff", func(c *RegistryConfig) { c.Tracking.Backoff = 0 }, "tracking.backoff"},
	} {
		var c RegistryConfig
		c.SetDefaults()
		tc.edit(&c)
		err := c.Validate()
		if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "key:secret") {
			t.Errorf("%s: error repeats the credentials: %v", tc.name, err)
		}
	}
}

func TestRegistrySecretsRedacted(t *testing.T) {
	cfg := Default()
	cfg.Registry.S3.AccessKey, cfg.Registry.S3.SecretKey = "AKID-x1", "sk-x2"
	cfg.Registry.Tracking.Token, cfg.Registry.Tracking.Password = "tok-x3", "pw-x4"
	out, err := Show(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"AKID-x1", "sk-x2", "tok-x3", "pw-x4"} {
		if strings.Contains(string(out), s) {
			t.Errorf("Show prints %s", s)
		}
	}
}
