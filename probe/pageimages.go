package probe

// Page images shared across uploads.
//
// A paged upload builds an image of every page it covers, row by row
// (scatterRow). The gates upload set after set and, for the peaked set,
// length after length; most of those sets share their base's V, and the
// peaked set its K too but for its needles' rows (oracle.Inputs.Strides,
// KPatches), so most pages are built again with the bytes an earlier
// upload's image holds. A whole page whose rows come unpatched from the
// same array at the same stride is built once; the copies share its
// bytes, which nothing changes once built (the record keeps them as they
// are, inputs.go).

// pageImages are the whole-page images built from one K array and one V
// array, by (sequence, page index).
type pageImages struct {
	arr    [2]*byte // K's array, V's: the images' source
	stride [2]int
	img    [2]map[[2]int][]byte
}

// imageSource says where the rows of an upload come from, for pageImages.
type imageSource struct {
	src packed
	// patched are the pages with a patched row of K, by (sequence, page
	// index): their K images are the upload's own.
	patched map[[2]int]bool
}

// pageImages returns the workspace's images for uploads from src's
// arrays, dropping those of other arrays (a new base, a set's own copy).
func (w *workspace) pageImages(src packed, pageRows int) *imageSource {
	if w.images == nil {
		w.images = &pageImages{}
	}
	m := w.images
	for i, a := range [][]byte{src.k, src.v} {
		var p *byte
		stride := src.kStride
		if i == 1 {
			stride = src.vStride
		}
		if len(a) > 0 {
			p = &a[0]
		}
		if m.arr[i] != p || m.stride[i] != stride || m.img[i] == nil {
			m.arr[i], m.stride[i], m.img[i] = p, stride, map[[2]int][]byte{}
		}
	}
	is := &imageSource{src: src, patched: map[[2]int]bool{}}
	for _, pt := range src.kPatch {
		is.patched[[2]int{pt.B, pt.R / pageRows}] = true
	}
	return is
}

// image returns the kept image of page j of sequence b of K (k) or V,
// nil if there is none or the page may not share one.
func (w *workspace) image(is *imageSource, k bool, b, j int) []byte {
	if is == nil || k && is.patched[[2]int{b, j}] {
		return nil
	}
	return w.images.img[side(k)][[2]int{b, j}]
}

// keepImage keeps the image built for page j of sequence b.
func (w *workspace) keepImage(is *imageSource, k bool, b, j int, img []byte) {
	if is == nil || k && is.patched[[2]int{b, j}] {
		return
	}
	w.images.img[side(k)][[2]int{b, j}] = img
}

func side(k bool) int {
	if k {
		return 0
	}
	return 1
}
