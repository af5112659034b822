package report

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/ktune/ktune/internal/golden"
)

// readmeImages maps each image of README.md (under docs/img) to the plot
// of `make report` it is: the README shows build outputs, never a copy
// taken by hand. `make docs-img` rewrites them.
var readmeImages = map[string]string{
	"h200-time-vs-nkv.png": "nkv_7b-cap32768",
	"h200-frontier-b1.png": "nkv_7b-b1",
}

// The README's images are what the committed results draw today. Pixels
// are compared, not bytes, so that a change of the PNG compressor between
// Go releases does not read as a stale image; a differing pixel in a
// thousand is allowed for floating-point rounding in the rasteriser
// (fused multiply-adds on other architectures), where a stale image
// differs in its lines, labels and legend.
func TestReadmeImages(t *testing.T) {
	t.Parallel()
	rep, err := Build(allH200(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	figs, err := rep.figures(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for img, base := range readmeImages {
		var got []byte
		for _, fg := range figs {
			if fg.file.Base != base {
				continue
			}
			name := filepath.Join(dir, img)
			if err := savePlot(fg.fig, name, "png"); err != nil {
				t.Fatal(err)
			}
			if got, err = os.ReadFile(name); err != nil {
				t.Fatal(err)
			}
			// The same figure drawn twice gives the same bytes: no map
			// order, clock or random state reaches the image.
			again := filepath.Join(dir, "again-"+img)
			if err := savePlot(fg.fig, again, "png"); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(again); !bytes.Equal(b, got) {
				t.Errorf("%s: two drawings of one figure differ", base)
			}
		}
		if got == nil {
			t.Errorf("make report draws no %s for docs/img/%s", base, img)
			continue
		}
		path := filepath.Join("..", "docs", "img", img)
		if *golden.Update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("reading %s: %v (make docs-img writes it)", path, err)
		}
		if n, total, err := pixelsDiffer(want, got); err != nil || n*1000 > total {
			t.Errorf("docs/img/%s is stale: %d of %d pixels differ from %s as the committed results draw it (%v); run make docs-img",
				img, n, total, base, err)
		}
	}
}

// pixelsDiffer decodes two PNGs and counts the pixels that differ; images
// of two sizes differ everywhere.
func pixelsDiffer(a, b []byte) (n, total int, err error) {
	ia, err := png.Decode(bytes.NewReader(a))
	if err != nil {
		return 0, 0, err
	}
	ib, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return 0, 0, err
	}
	ra, rb := ia.Bounds(), ib.Bounds()
	total = rb.Dx() * rb.Dy()
	if ra.Size() != rb.Size() {
		return total, total, nil
	}
	for y := 0; y < ra.Dy(); y++ {
		for x := 0; x < ra.Dx(); x++ {
			if !sameColour(ia, ib, image.Pt(ra.Min.X+x, ra.Min.Y+y), image.Pt(rb.Min.X+x, rb.Min.Y+y)) {
				n++
			}
		}
	}
	return n, total, nil
}

func sameColour(a, b image.Image, pa, pb image.Point) bool {
	r1, g1, b1, a1 := a.At(pa.X, pa.Y).RGBA()
	r2, g2, b2, a2 := b.At(pb.X, pb.Y).RGBA()
	return r1 == r2 && g1 == g2 && b1 == b2 && a1 == a2
}
