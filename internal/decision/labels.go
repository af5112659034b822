package decision

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ktune/ktune/internal/results"
)

// ShapeLabel names a shape for tables: the spec's label when it has one,
// otherwise its dimensions.
func ShapeLabel(s results.Shape) string {
	if s.Name != "" {
		return s.Name
	}
	return s.Dims()
}

// ShapeLabels names every shape identity of recs (abi.Shape.Identity),
// keyed by it, so that no two identities share a name: tables, report
// sections, plot file names and the gate's rows all use these labels.
//
// A shape takes the spec label its records use most often, preferring a
// label that no other shape's records use (a PyTorch reference labelled
// "7b" beside a sweep's "7b-b1" and "7b-b16" resolves to those). Shapes
// still left sharing a label get a suffix for each field that tells them
// apart: "-b16" (batch), "-h32" (heads), "-kv8", "-d64", "-f32",
// "-cap131072" (capacity), "-window4096" (the attention options). A
// shape without any spec label is named by its dimensions.
func ShapeLabels(recs []results.Record) map[string]string {
	names := map[string]map[string]int{} // shape key → label → records
	shapes := map[string]results.Shape{}
	users := map[string]map[string]bool{} // label → shape keys using it
	for i := range recs {
		s := recs[i].Config.Shape
		k := s.Identity()
		shapes[k] = s
		if names[k] == nil {
			names[k] = map[string]int{}
		}
		if s.Name == "" {
			continue
		}
		names[k][s.Name]++
		if users[s.Name] == nil {
			users[s.Name] = map[string]bool{}
		}
		users[s.Name][k] = true
	}
	keys := make([]string, 0, len(shapes))
	for k := range shapes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	label := map[string]string{}
	for _, k := range keys {
		label[k] = pickName(names[k], users, shapes[k])
	}
	byLabel := map[string][]string{}
	for _, k := range keys {
		byLabel[label[k]] = append(byLabel[label[k]], k)
	}
	for l, ks := range byLabel {
		if len(ks) < 2 {
			continue
		}
		for _, k := range ks {
			label[k] = l + distinguish(shapes[k], ks, shapes)
		}
	}
	return label
}

// pickName returns the most used label of one shape, a label unique to it
// first; ties go to the shorter, then the alphabetically first label.
func pickName(count map[string]int, users map[string]map[string]bool, s results.Shape) string {
	best, bestUnique, bestN := "", false, 0
	for n, c := range count {
		unique := len(users[n]) == 1
		better := best == "" ||
			unique && !bestUnique ||
			unique == bestUnique && (c > bestN || c == bestN && (len(n) < len(best) || len(n) == len(best) && n < best))
		if better {
			best, bestUnique, bestN = n, unique, c
		}
	}
	if best == "" {
		return s.Dims()
	}
	return best
}

// distinguish is the suffix naming the fields in which s differs from at
// least one of the shapes it shares a label with.
func distinguish(s results.Shape, keys []string, shapes map[string]results.Shape) string {
	differs := func(f func(results.Shape) string) bool {
		for _, k := range keys {
			if f(shapes[k]) != f(s) {
				return true
			}
		}
		return false
	}
	var b strings.Builder
	for _, f := range []func(results.Shape) string{
		func(x results.Shape) string { return fmt.Sprintf("-h%d", x.Heads) },
		func(x results.Shape) string { return fmt.Sprintf("-kv%d", x.KVHeads) },
		func(x results.Shape) string { return fmt.Sprintf("-d%d", x.HeadDim) },
		func(x results.Shape) string { return "-" + x.KV() },
		func(x results.Shape) string { return fmt.Sprintf("-b%d", x.Batch) },
		func(x results.Shape) string { return fmt.Sprintf("-cap%d", x.Capacity) },
		optionsSuffix,
	} {
		if differs(f) {
			b.WriteString(f(s))
		}
	}
	return b.String()
}

// optionsSuffix is the label suffix of a shape's attention options
// (abi.Attention.Label) in a file name's alphabet: "-softcap50-window4096",
// "" for plain attention.
func optionsSuffix(s results.Shape) string {
	var b strings.Builder
	for _, o := range strings.Fields(s.Attention.Label()) {
		b.WriteString("-" + strings.NewReplacer("=", "", "/", "-", "_", "").Replace(o))
	}
	return b.String()
}
