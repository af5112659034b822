package table

import (
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	var tb Table
	tb.Col("variant", false)
	tb.Col("cold µs", true)
	tb.Add("d2", "552.9")
	tb.Add("mma-short-and-long", "25.9")
	var term, md strings.Builder
	if err := tb.Render(&term, false); err != nil {
		t.Fatal(err)
	}
	if err := tb.Render(&md, true); err != nil {
		t.Fatal(err)
	}
	// Headers keep their case; numbers align right (the short one is
	// padded on the left).
	if !strings.Contains(term.String(), "cold µs") || strings.Contains(term.String(), "COLD") {
		t.Errorf("header case not kept:\n%s", term.String())
	}
	if !strings.Contains(term.String(), "  25.9 ") {
		t.Errorf("numbers not right-aligned:\n%s", term.String())
	}
	if !strings.Contains(md.String(), "|:---") || !strings.Contains(md.String(), "---:|") {
		t.Errorf("markdown alignment row missing:\n%s", md.String())
	}
}
