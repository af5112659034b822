package golden

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// context is how many unchanged lines surround each change, as in a
	// unified diff: enough to find the spot in the golden file.
	context = 3
	// maxChanged caps the changed lines shown: when a format change
	// rewrites a whole report, the first few dozen lines say what
	// happened and the rest would bury the test log.
	maxChanged = 60
	// maxCells bounds the longest-common-subsequence table (rows × columns
	// of the part that differs). Golden files are a few hundred lines, far
	// below it; past it the diff falls back to "all removed, all added",
	// still correct but not minimal, rather than allocating gigabytes.
	maxCells = 1 << 22
)

// Diff returns a line diff of want and got in the unified style: hunks
// headed "@@ -line,count +line,count @@", lines of want prefixed with
// "-", lines of got with "+", and up to three unchanged lines of context
// prefixed with a space. Within a run of changes, each removed line is
// followed by the line that replaced it. It returns "" when want and got
// are equal. Only
// the first changed lines are shown; a final line counts the rest. A line
// holding control characters or invalid UTF-8 is shown quoted, so that a
// stray \r or escape sequence is visible, and a last line without its
// newline is followed by "\ No newline at end of file".
func Diff(want, got string) string {
	if want == got {
		return ""
	}
	return render(edits(lines(want), lines(got), maxCells))
}

// lines splits s after each newline, keeping the newline, so that a
// missing final newline is a difference like any other.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	l := strings.SplitAfter(s, "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}

// An op is one line of an edit script: kept (' '), removed from want
// ('-') or added from got ('+'). wantLine and gotLine are the 1-based
// numbers of the next line of want and of got where the op stands.
type op struct {
	kind              byte
	text              string
	wantLine, gotLine int
}

// edits returns a shortest edit script from x to y, paired and numbered.
// The common prefix and suffix are kept without entering the quadratic
// table: a golden mismatch is usually a few lines in a long file.
func edits(x, y []string, maxCells int) []op {
	ops := make([]op, 0, len(x)+len(y))
	i, j := 0, 0
	keep := func() { ops = append(ops, op{kind: ' ', text: x[i]}); i, j = i+1, j+1 }
	del := func() { ops = append(ops, op{kind: '-', text: x[i]}); i++ }
	add := func() { ops = append(ops, op{kind: '+', text: y[j]}); j++ }

	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	for range pre {
		keep()
	}
	mx, my := x[pre:len(x)-suf], y[pre:len(y)-suf]
	n, m := len(mx), len(my)
	if n > 0 && m > 0 && n*m <= maxCells {
		// lcs[a*w+b] is the length of a longest common subsequence of
		// mx[a:] and my[b:].
		w := m + 1
		lcs := make([]int32, (n+1)*w)
		for a := n - 1; a >= 0; a-- {
			for b := m - 1; b >= 0; b-- {
				if mx[a] == my[b] {
					lcs[a*w+b] = lcs[(a+1)*w+b+1] + 1
				} else {
					lcs[a*w+b] = max(lcs[(a+1)*w+b], lcs[a*w+b+1])
				}
			}
		}
		a, b := 0, 0
		for a < n || b < m {
			switch {
			case a < n && b < m && mx[a] == my[b]:
				keep()
				a, b = a+1, b+1
			// On a tie, removals come first: "-old" above "+new" reads
			// as a replacement.
			case a < n && (b == m || lcs[(a+1)*w+b] >= lcs[a*w+b+1]):
				del()
				a++
			default:
				add()
				b++
			}
		}
	} else {
		for range n {
			del()
		}
		for range m {
			add()
		}
	}
	for range suf {
		keep()
	}
	return pair(ops)
}

// pair reorders each run of changes so that every removed line sits just
// above the line that took its place (-a +x -b +y rather than -a -b +x
// +y), then numbers the lines. Golden files are mostly tables, where a
// change touches many consecutive rows: paired, a changed column shows
// row by row, and a truncated diff still shows both sides.
func pair(ops []op) []op {
	out := make([]op, 0, len(ops))
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			out = append(out, ops[k])
			k++
			continue
		}
		var dels, adds []op
		for ; k < len(ops) && ops[k].kind != ' '; k++ {
			if ops[k].kind == '-' {
				dels = append(dels, ops[k])
			} else {
				adds = append(adds, ops[k])
			}
		}
		for i := range max(len(dels), len(adds)) {
			if i < len(dels) {
				out = append(out, dels[i])
			}
			if i < len(adds) {
				out = append(out, adds[i])
			}
		}
	}
	w, g := 1, 1
	for i := range out {
		out[i].wantLine, out[i].gotLine = w, g
		switch out[i].kind {
		case ' ':
			w, g = w+1, g+1
		case '-':
			w++
		case '+':
			g++
		}
	}
	return out
}

// render prints the changes of ops as hunks with context lines around
// them, merging hunks whose context would overlap or touch.
func render(ops []op) string {
	var changes []int
	for k, o := range ops {
		if o.kind != ' ' {
			changes = append(changes, k)
		}
	}
	var b strings.Builder
	shown := 0
hunks:
	for k := 0; k < len(changes); k++ {
		start, end := max(changes[k]-context, 0), changes[k]
		for k+1 < len(changes) && changes[k+1]-end <= 2*context+1 {
			k++
			end = changes[k]
		}
		h := ops[start:min(end+context+1, len(ops))]
		writeHeader(&b, h)
		for _, o := range h {
			if o.kind != ' ' {
				if shown == maxChanged {
					break hunks
				}
				shown++
			}
			writeLine(&b, o)
		}
	}
	if shown < len(changes) {
		fmt.Fprintf(&b, "… %d more changed lines not shown\n", len(changes)-shown)
	}
	return b.String()
}

// writeHeader writes a hunk's "@@ -l,n +l,n @@" line. As in GNU diff, a
// side with no lines in the hunk names the line before the hunk, and a
// count of one is left out.
func writeHeader(b *strings.Builder, h []op) {
	nw, ng := 0, 0
	for _, o := range h {
		if o.kind != '+' {
			nw++
		}
		if o.kind != '-' {
			ng++
		}
	}
	lw, lg := h[0].wantLine, h[0].gotLine
	if nw == 0 {
		lw--
	}
	if ng == 0 {
		lg--
	}
	fmt.Fprintf(b, "@@ -%s +%s @@\n", span(lw, nw), span(lg, ng))
}

func span(line, n int) string {
	if n == 1 {
		return strconv.Itoa(line)
	}
	return fmt.Sprintf("%d,%d", line, n)
}

func writeLine(b *strings.Builder, o op) {
	body, nl := strings.CutSuffix(o.text, "\n")
	if invisible(body) {
		body = strconv.Quote(body)
	}
	b.WriteByte(o.kind)
	b.WriteString(body)
	b.WriteByte('\n')
	if !nl {
		b.WriteString("\\ No newline at end of file\n")
	}
}

// invisible reports whether s holds something a terminal would not show
// as written: a control character other than tab, or invalid UTF-8.
func invisible(s string) bool {
	return !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool {
		return r != '\t' && unicode.IsControl(r)
	})
}
