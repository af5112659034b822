package report

import (
	"encoding/xml"
	"image/png"
	"os"
	"strings"
	"testing"
)

func TestPlots(t *testing.T) {
	rep, err := Build(loadJSONL(t, "fixture.jsonl"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if d := os.Getenv("KTUNE_PLOT_DIR"); d != "" {
		dir = d // keep the images to look at them
	}
	plots, err := rep.Plots(dir)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, pf := range plots {
		kinds[pf.Kind]++
		if len(pf.Series) == 0 {
			t.Errorf("%s: no series", pf.Base)
		}
		for _, name := range pf.Files {
			switch {
			case strings.HasSuffix(name, ".png"):
				checkPNG(t, name)
			case strings.HasSuffix(name, ".svg"):
				checkSVG(t, name, append([]string{pf.Title}, pf.Series...))
			default:
				t.Errorf("unexpected plot file %s", name)
			}
		}
	}
	// One nkv, probes and speedup plot for the shape, one SPLITS plot per nkv.
	want := map[string]int{"nkv": 1, "probes": 1, "speedup": 1, "splits": len(fixtureNKV)}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d %q plots, want %d", kinds[k], k, n)
		}
	}
	// The nkv plot carries every passing variant, the landed line and the floor.
	for _, pf := range plots {
		if pf.Kind != "nkv" {
			continue
		}
		got := strings.Join(pf.Series, "|")
		for _, s := range []string{"d2", "r4", "tc", "landed: r4 SPLITS=32", "memory floor"} {
			if !strings.Contains(got, s) {
				t.Errorf("nkv plot series %q lack %q", got, s)
			}
		}
	}
}

func checkPNG(t *testing.T, name string) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 350 {
		t.Errorf("%s: %v is too small to read", name, b)
	}
}

// checkSVG parses the SVG and checks that every text wanted appears in
// its text elements (titles, legend entries, heatmap row names).
func checkSVG(t *testing.T, name string, want []string) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var texts []string
	dec := xml.NewDecoder(f)
	inText := false
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("%s: %v", name, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			inText = tok.Name.Local == "text"
		case xml.EndElement:
			inText = false
		case xml.CharData:
			if inText {
				texts = append(texts, string(tok))
			}
		}
	}
	all := strings.Join(texts, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("%s: no text %q", name, w)
		}
	}
}
