package report

import (
	"errors"
	"strings"
	"testing"
)

// The help's example, 28 layers and an 11.5 ms step over every committed
// result: the landed kernel alone takes longer than the step at long
// contexts. Those points are refused with the figures that show it, and
// no projected throughput is negative or infinite.
func TestProjectionNeverNegative(t *testing.T) {
	rep, err := Build(allH200(t), Options{Layers: 28, StepMS: 11.5})
	if err != nil {
		t.Fatal(err)
	}
	pr := rep.Projection
	if pr == nil || len(pr.Rows) == 0 || len(pr.Refused) == 0 {
		t.Fatalf("projection %+v: want rows and refused points", pr)
	}
	for _, r := range pr.Rows {
		if r.TokensPerSec <= 0 || r.RestMS < 0 || r.TokensPerSec > 1e9 {
			t.Errorf("%s %s nkv=%d: %.1f tokens/s, rest %.3f ms", r.Shape, r.Config, r.NKV, r.TokensPerSec, r.RestMS)
		}
		if got := float64(pr.Layers) * r.LandedUS / 1000; got > pr.StepMS {
			t.Errorf("%s nkv=%d projected although the landed attention takes %.2f ms of an %.2f ms step", r.Shape, r.NKV, got, pr.StepMS)
		}
	}
	for _, s := range pr.Refused {
		if !strings.Contains(s, "> the 11.5 ms step") {
			t.Errorf("refusal %q does not show the figures", s)
		}
	}
	n := 0
	for _, w := range rep.Warnings {
		if w.Kind == WarnProjection {
			n++
		}
	}
	if n != len(pr.Refused) {
		t.Errorf("%d projection warnings for %d refused points", n, len(pr.Refused))
	}
}

// A step shorter than any landed attention cannot describe any point:
// Build refuses the figures instead of printing a table of nonsense.
func TestProjectionRefusedEverywhere(t *testing.T) {
	_, err := Build(loadH200(t, "slice.jsonl"), Options{Layers: 28, StepMS: 0.01})
	if !errors.Is(err, ErrProjection) {
		t.Fatalf("error %v, want ErrProjection", err)
	}
	if !strings.Contains(err.Error(), "--step-ms 0.01") {
		t.Errorf("error %q does not name the figures", err)
	}
}
