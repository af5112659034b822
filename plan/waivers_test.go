package plan

import (
	"strings"
	"testing"
)

// An input-set waiver reaches every point with the bounds it gives (the
// rest stay the set's, applied by the gates), and moves the hash (and so the gate key): a verdict under a waiver
// is never the verdict without it.
func TestWaiversHashed(t *testing.T) {
	base := strings.Replace(engineYAML, "  - name: shipped\n    kernel: eng/k.ptx\n", "", 1)
	with := base + "gates:\n  max_rel: 0.05\n  inputs:\n    subnormal: {max_abs: 2e-6, nmse: 0.1, reason: f16 partials}\n    outliers: {skip: true, reason: clamped upstream}\n"
	plain := base + "gates:\n  max_rel: 0.05\n"
	files := func(y string) map[string]string {
		m := map[string]string{}
		for k, v := range engineFiles {
			m[k] = v
		}
		m["spec.yaml"] = y
		return m
	}
	pw, pp := buildEngine(t, files(with)).Points[0], buildEngine(t, files(plain)).Points[0]
	if len(pw.Waivers) != 2 || len(pp.Waivers) != 0 {
		t.Fatalf("waivers %+v and %+v", pw.Waivers, pp.Waivers)
	}
	if w := pw.Waivers[0]; w.Bounds != (Tolerance{MaxAbs: 2e-6, NMSE: 0.1}) || w.Skip || w.Reason != "f16 partials" {
		t.Errorf("subnormal waiver %+v: want its own max_abs and nmse, max_rel left to the set", w)
	}
	if w := pw.Waivers[0]; w.Over(Tolerance{MaxAbs: 1e-7, MaxRel: 0.05, NMSE: 1e-6}) != (Tolerance{MaxAbs: 2e-6, MaxRel: 0.05, NMSE: 0.1}) {
		t.Errorf("over the set's bounds: %+v", w.Over(Tolerance{MaxAbs: 1e-7, MaxRel: 0.05, NMSE: 1e-6}))
	}
	if got := pw.WaiverTexts(); got[0] != "subnormal: own bounds max_abs 2e-06 nmse 0.1, max_rel the set's (f16 partials)" || got[1] != "outliers: not applicable (clamped upstream)" {
		t.Errorf("texts %q", got)
	}
	if pw.Hash == pp.Hash || pw.GateKey == pp.GateKey {
		t.Error("a waiver leaves the hash or the gate key as it was")
	}
	reasoned := buildEngine(t, files(strings.Replace(with, "clamped upstream", "clamped upstream; always", 1))).Points[0]
	if reasoned.Hash == pw.Hash {
		t.Error("the reason is not hashed")
	}
}

// A declaration about the rows past each length (gates.stale) reaches
// every point, is among its record's waivers and moves the hash and the
// gate key (a finite-only stale verdict is never the full one's), its
// reason included; without one the point declares nothing.
func TestStaleDeclarationHashed(t *testing.T) {
	base := strings.Replace(engineYAML, "  - name: shipped\n    kernel: eng/k.ptx\n", "", 1)
	files := func(y string) map[string]string {
		m := map[string]string{}
		for k, v := range engineFiles {
			m[k] = v
		}
		m["spec.yaml"] = y
		return m
	}
	plain := base + "gates:\n  max_rel: 0.05\n"
	with := plain + "  stale: {rows: finite, reason: cleared at allocation}\n"
	ps, pp := buildEngine(t, files(with)).Points[0], buildEngine(t, files(plain)).Points[0]
	if ps.Stale != (StaleWaiver{Rows: StaleFinite, Reason: "cleared at allocation"}) || pp.Stale.Declared() {
		t.Fatalf("declarations %+v and %+v", ps.Stale, pp.Stale)
	}
	want := "stale gate: finite rows only past each length, no NaN or Inf (cleared at allocation)"
	if got := ps.WaiverTexts(); len(got) != 1 || got[0] != want {
		t.Errorf("texts %q, want [%q]", got, want)
	}
	if got := pp.WaiverTexts(); len(got) != 0 {
		t.Errorf("a point without a declaration has waivers %q", got)
	}
	if ps.Hash == pp.Hash || ps.GateKey == pp.GateKey {
		t.Error("the declaration leaves the hash or the gate key as it was")
	}
	reasoned := buildEngine(t, files(strings.Replace(with, "at allocation", "at allocation; always", 1))).Points[0]
	if reasoned.Hash == ps.Hash || reasoned.GateKey == ps.GateKey {
		t.Error("the reason is not hashed")
	}
}
