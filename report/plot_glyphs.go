package report

import (
	"math"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// A polyGlyph is a regular polygon marker, filled or outlined. gonum's
// own outlined glyphs stroke at 0.5 pt, which at the plots' size reads
// as a smudge, and it has eight shapes: a plot of eight kernel variants,
// two references and the landed kernel needs eleven.
type polyGlyph struct {
	sides  int     // 0: a circle
	turn   float64 // rotation of the first vertex from straight up, radians
	filled bool
	star   bool // every other vertex pulled in: a star of sides points
}

// DrawGlyph implements draw.GlyphDrawer.
func (g polyGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	p := make(vg.Path, 0, g.sides+2)
	r := sty.Radius
	if g.sides == 0 {
		p.Move(vg.Point{X: pt.X + r, Y: pt.Y})
		p.Arc(pt, r, 0, 2*math.Pi)
	} else {
		// Polygons of equal radius look smaller than a circle: scale them
		// to about its area.
		r *= 1.15
		n := g.sides
		if g.star {
			n, r = 2*n, r*1.25
		}
		for i := 0; i < n; i++ {
			a := g.turn + 2*math.Pi*float64(i)/float64(n)
			ri := r
			if g.star && i%2 == 1 {
				ri = r * 0.45
			}
			v := vg.Point{X: pt.X + ri*vg.Length(math.Sin(a)), Y: pt.Y + ri*vg.Length(math.Cos(a))}
			if i == 0 {
				p.Move(v)
			} else {
				p.Line(v)
			}
		}
	}
	p.Close()
	if g.filled {
		c.SetColor(sty.Color)
		c.Fill(p)
		return
	}
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.2)})
	c.Stroke(p)
}

// A strokeGlyph is a plus or a cross of two thick strokes.
type strokeGlyph struct{ turn float64 }

// DrawGlyph implements draw.GlyphDrawer.
func (g strokeGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.6)})
	r := sty.Radius * 1.2
	for _, a := range []float64{g.turn, g.turn + math.Pi/2} {
		dx, dy := r*vg.Length(math.Sin(a)), r*vg.Length(math.Cos(a))
		p := make(vg.Path, 0, 2)
		p.Move(vg.Point{X: pt.X - dx, Y: pt.Y - dy})
		p.Line(vg.Point{X: pt.X + dx, Y: pt.Y + dy})
		c.Stroke(p)
	}
}

// markers are the distinct markers a plot hands out, one per series:
// filled shapes first (they read best), then their outlines, then the
// strokes. landedMarker is kept apart for the landed kernel.
var markers = [...]draw.GlyphDrawer{
	polyGlyph{sides: 0, filled: true},
	polyGlyph{sides: 3, filled: true},
	polyGlyph{sides: 4, filled: true}, // a diamond
	polyGlyph{sides: 3, turn: math.Pi, filled: true},
	polyGlyph{sides: 5, filled: true, star: true},
	polyGlyph{sides: 0},
	polyGlyph{sides: 3},
	polyGlyph{sides: 4},
	polyGlyph{sides: 3, turn: math.Pi},
	polyGlyph{sides: 5, star: true},
	strokeGlyph{},
	strokeGlyph{turn: math.Pi / 4},
	polyGlyph{sides: 4, turn: math.Pi / 4}, // an outlined square
}

// landedMarker is the landed kernel's marker in every plot: a filled
// square, which no other series gets.
var landedMarker = polyGlyph{sides: 4, turn: math.Pi / 4, filled: true}
