package config

import (
	"reflect"
	"testing"
)

func TestEndpoints(t *testing.T) {
	if got := Default().Endpoints(); len(got) != 0 {
		t.Errorf("defaults name services %v; a file store and no MLflow should name none", got)
	}
	cfg := Default()
	cfg.Registry.Store = "s3://models"
	cfg.Registry.S3.Endpoint = "127.0.0.1:9000"
	cfg.Registry.Tracking.URI = "http://127.0.0.1:5000"
	want := []Endpoint{
		{Name: "registry.s3.endpoint", URL: "http://127.0.0.1:9000"},
		{Name: "registry.tracking.uri", URL: "http://127.0.0.1:5000"},
	}
	if got := cfg.Endpoints(); !reflect.DeepEqual(got, want) {
		t.Errorf("Endpoints() = %v, want %v", got, want)
	}
}

// Every section declares its defaults and its rules; a new section without them fails here.
func TestEverySectionIsASection(t *testing.T) {
	cfg := Default()
	forEachSection(&cfg, func(name string, s reflect.Value) {
		if _, ok := s.Addr().Interface().(Section); !ok {
			t.Errorf("section %q (%s) lacks SetDefaults() on its pointer or Validate() error", name, s.Type())
		}
	})
}
