package variants

import (
	"testing"

	"github.com/ktune/ktune/internal/catalog"
)

func TestBuiltinsCopy(t *testing.T) {
	a := &catalog.Kernel{Name: "a"}
	bi := Builtins()
	if len(bi) != len(All()) {
		t.Errorf("Builtins has %d kernels, All %d", len(bi), len(All()))
	}
	bi["zz-test"] = a
	if _, ok := Lookup("zz-test"); ok {
		t.Error("changing the Set from Builtins changed the registry")
	}
}
