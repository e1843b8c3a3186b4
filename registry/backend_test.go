package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/schedrl/schedrl/internal/config"
)

// TestCreateIsExclusive: of eight concurrent creators of one key exactly one wins, and the
// object holds the winner's bytes whole.
func TestCreateIsExclusive(t *testing.T) {
	backends(t, func(t *testing.T, cfg config.RegistryConfig) {
		ctx := context.Background()
		b, err := OpenBackend(cfg)
		if err != nil {
			t.Fatal(err)
		}
		const n = 8
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				body := strings.Repeat(fmt.Sprint(i), 100000)
				errs[i] = b.Create(ctx, "k/obj", strings.NewReader(body), int64(len(body)))
			})
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("creators %d and %d both succeeded", winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, ErrExists):
				t.Fatalf("creator %d: %v", i, err)
			}
		}
		if winner < 0 {
			t.Fatal("no creator succeeded")
		}
		rc, err := b.Get(ctx, "k/obj")
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		got, _ := io.ReadAll(rc)
		if string(got) != strings.Repeat(fmt.Sprint(winner), 100000) {
			t.Fatal("object is not the winner's bytes")
		}
		if names, err := b.List(ctx, "k/"); err != nil || !slices.Equal(names, []string{"obj"}) {
			t.Fatalf("list %v %v", names, err)
		}
		if _, err := b.Get(ctx, "k/none"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("missing key: %v", err)
		}
	})
}
