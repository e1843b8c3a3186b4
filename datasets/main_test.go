package datasets

import (
	"io"
	"log/slog"
	"os"
	"testing"
)

// TestMain keeps Build's progress lines out of test and benchmark output.
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	os.Exit(m.Run())
}
