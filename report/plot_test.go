package report

import (
	"encoding/xml"
	"image/png"
	"os"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/results"
)

// measuredVariants and measuredNKVs are what the plots must show, read
// from the records themselves.
func measuredVariants(recs []results.Record) map[string]bool {
	out := map[string]bool{}
	for _, r := range recs {
		if r.Status == results.StatusOK && r.Probe(results.ProbeCold) != nil {
			out[r.Config.Variant] = true
		}
	}
	return out
}

func measuredNKVs(recs []results.Record) map[int]bool {
	out := map[int]bool{}
	for _, r := range recs {
		if r.Status == results.StatusOK && r.Probe(results.ProbeCold) != nil {
			out[r.Config.NKV] = true
		}
	}
	return out
}

func landedConfig(t *testing.T, recs []results.Record) string {
	t.Helper()
	for _, r := range recs {
		if r.Landed {
			return ConfigLabel(&r.Config)
		}
	}
	t.Fatal("no landed record")
	return ""
}

// The splits experiment: rows, r4 and d2 over SPLITS 8..64 and eight
// context lengths, with all three probes.
func TestPlots(t *testing.T) {
	recs := loadH200(t, "splits.jsonl")
	plots := writePlots(t, recs)
	checkPlots(t, recs, plots)
}

// Every committed file at once, as `make report` renders them: seven
// variants, some measured at a few context lengths only.
func TestPlotsAllH200(t *testing.T) {
	var recs []results.Record
	for _, f := range []string{"slice.jsonl", "splits.jsonl", "window.jsonl", "staging.jsonl", "multiwarp.jsonl", "rerun.jsonl"} {
		recs = append(recs, loadH200(t, f)...)
	}
	checkPlots(t, recs, writePlots(t, recs))
}

func writePlots(t *testing.T, recs []results.Record) []PlotFile {
	t.Helper()
	rep, err := Build(recs, Options{})
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
	return plots
}

// checkPlots decodes every file, checks its size and that the series the
// records call for are drawn.
func checkPlots(t *testing.T, recs []results.Record, plots []PlotFile) {
	t.Helper()
	variants, nkvs := measuredVariants(recs), measuredNKVs(recs)
	kinds := map[string]int{}
	for _, pf := range plots {
		kinds[pf.Kind]++
		if len(pf.Series) == 0 {
			t.Errorf("%s: no series", pf.Base)
		}
		if len(pf.Files) != len(plotFormats) {
			t.Errorf("%s: files %q", pf.Base, pf.Files)
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
	// One shape: one nkv, probes and speedup plot, one SPLITS plot per nkv.
	want := map[string]int{"nkv": 1, "probes": 1, "speedup": 1, "splits": len(nkvs)}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d %q plots, want %d", kinds[k], k, n)
		}
	}
	landed := "landed: " + landedConfig(t, recs)
	for _, pf := range plots {
		got := "|" + strings.Join(pf.Series, "|") + "|"
		switch pf.Kind {
		case "nkv":
			// Every variant, the landed line and the floor.
			for v := range variants {
				if !strings.Contains(got, "|"+v+"|") {
					t.Errorf("nkv plot series %q lack %q", got, v)
				}
			}
			for _, s := range []string{"|" + landed + "|", "|memory floor"} {
				if !strings.Contains(got, s) {
					t.Errorf("nkv plot series %q lack %q", got, s)
				}
			}
		case "speedup":
			// Every variant has a row: each was measured where the landed
			// kernel was.
			for v := range variants {
				if !strings.Contains(got, "|"+v+"|") {
					t.Errorf("speedup plot rows %q lack %q", got, v)
				}
			}
		case "probes":
			// The plot's nkv is one at which the most variants were measured.
			most := 0
			for n := range nkvs {
				c := 0
				for v := range variants {
					for _, r := range recs {
						if r.Config.Variant == v && r.Config.NKV == n && r.Status == results.StatusOK {
							c++
							break
						}
					}
				}
				most = max(most, c)
			}
			if len(pf.Series) != most {
				t.Errorf("probes plot series %q: %d, want %d", got, len(pf.Series), most)
			}
		case "splits":
			if !strings.Contains(got, "|"+landed+"|") {
				t.Errorf("%s series %q lack %q", pf.Base, got, landed)
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
	// The axes are 18 × 11 cm (680 × 416 px at 96 dpi); a legend widens
	// the image but never past twice that.
	if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 350 || b.Dx() > 1400 || b.Dy() > 600 {
		t.Errorf("%s: %v is not the size of a readable plot", name, b)
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
