package family

import (
	"strings"
	"testing"
)

// TestLookupNamesTheKeyAndTheFamilies checks that an unknown family is refused with the config
// key that named it and the registered names, and that a second registration panics.
func TestLookupNamesTheKeyAndTheFamilies(t *testing.T) {
	Register(Family{Name: "test-lookup"})
	if _, err := Lookup("finetune.env", "nope"); err == nil || !strings.Contains(err.Error(), `finetune.env: unknown family "nope"`) ||
		!strings.Contains(err.Error(), "test-lookup") {
		t.Fatalf("Lookup(nope) = %v", err)
	}
	if f, err := Lookup("finetune.env", "test-lookup"); err != nil || f.Name != "test-lookup" {
		t.Fatalf("Lookup(test-lookup) = %+v, %v", f, err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("second Register of test-lookup did not panic")
		}
	}()
	Register(Family{Name: "test-lookup"})
}

// TestHooks checks a layer's hooks: lookup by name, the error naming the layer and its
// families.
func TestHooks(t *testing.T) {
	h := NewHooks[int]("finetune")
	h.Register("a", 1)
	if v, err := h.Lookup("finetune.env", "a"); err != nil || v != 1 {
		t.Fatalf("Lookup(a) = %d, %v", v, err)
	}
	if _, err := h.Lookup("finetune.env", "b"); err == nil || err.Error() != `finetune.env: "b": finetune knows the families [a]` {
		t.Fatalf("Lookup(b) = %v", err)
	}
}
