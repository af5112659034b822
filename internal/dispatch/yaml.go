package dispatch

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The YAML layout is its own set of types so that the exported field names
// and their order are fixed here, not by the Go types.
type yamlDoc struct {
	Probe  string  `yaml:"probe"`
	Alpha  float64 `yaml:"alpha"`
	Device string  `yaml:"device"`
	// MaxArms is the arm limit the table was built under, omitted without one.
	MaxArms int         `yaml:"max_arms,omitempty"`
	Shapes  []yamlShape `yaml:"shapes"`
}

type yamlShape struct {
	Name     string      `yaml:"name,omitempty"`
	Heads    int         `yaml:"heads"`
	KVHeads  int         `yaml:"kv_heads"`
	HeadDim  int         `yaml:"head_dim"`
	KVDtype  string      `yaml:"kv_dtype"`
	KVScale  string      `yaml:"kv_scale,omitempty"`
	Batch    int         `yaml:"batch"`
	QLen     int         `yaml:"q_len,omitempty"`     // query tokens per sequence; omitted at 1
	PageSize int         `yaml:"page_size,omitempty"` // rows per KV page; omitted for a contiguous cache
	Options  string      `yaml:"options,omitempty"`   // the other attention options (optionsLabel)
	Ranges   []yamlRange `yaml:"ranges"`
}

type yamlRange struct {
	MinNKV       int         `yaml:"min_nkv"`
	MaxNKV       int         `yaml:"max_nkv"`
	Variant      string      `yaml:"variant"`
	Kernel       string      `yaml:"kernel"`
	Splits       int         `yaml:"splits"`
	Defines      yamlDefines `yaml:"defines"`
	Grid         flowInts    `yaml:"grid"`
	Block        flowInts    `yaml:"block"`
	CombineGrid  flowInts    `yaml:"combine_grid"`
	CombineBlock flowInts    `yaml:"combine_block"`
	MedianNS     nsValue     `yaml:"median_ns"`
	Margin       string      `yaml:"margin"`
	Measured     []yamlPick  `yaml:"measured"`
}

type yamlPick struct {
	NKV      int     `yaml:"nkv"`
	MedianNS nsValue `yaml:"median_ns"`
	Rule     string  `yaml:"rule"`
	Margin   string  `yaml:"margin"`
}

// flowInts prints a launch dimension on one line: [32, 28, 1].
type flowInts [3]int

func (f flowInts) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, v := range f {
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(v)})
	}
	return n, nil
}

// yamlDefines prints defines as a one-line mapping in their sorted order,
// values as strings (a define is text pasted after -DNAME=).
type yamlDefines [][2]string

func (d yamlDefines) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	for _, kv := range d {
		n.Content = append(n.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: kv[0]},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: kv[1], Style: yaml.DoubleQuotedStyle})
	}
	return n, nil
}

// nsValue prints nanoseconds with one decimal and never in exponent form.
type nsValue float64

func (v nsValue) MarshalYAML() (any, error) {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: formatNS(float64(v))}, nil
}

// WriteYAML writes the table as YAML, headed by a comment naming the
// results files it was built from and the rule that built it.
func (t *Table) WriteYAML(w io.Writer) error {
	doc := yamlDoc{Probe: string(t.Probe), Alpha: t.Alpha, Device: t.Device, MaxArms: t.MaxArms}
	for _, st := range t.Shapes {
		s := st.Shape
		ys := yamlShape{Name: s.Name, Heads: s.Heads, KVHeads: s.KVHeads, HeadDim: s.HeadDim, KVDtype: string(s.KVDtype), KVScale: s.KVScale, Batch: s.Batch,
			Options: optionsLabel(s.Attention), PageSize: st.PageSize}
		if q := s.Attention.Queries(); q > 1 {
			ys.QLen = q
		}
		for _, r := range st.Ranges {
			yr := yamlRange{
				MinNKV: r.MinNKV, MaxNKV: r.MaxNKV, Variant: r.Variant, Kernel: r.Kernel, Splits: r.Splits,
				Grid: r.Grid, Block: r.Block, CombineGrid: r.CombineGrid, CombineBlock: r.CombineBlock,
				MedianNS: nsValue(r.MedianNS), Margin: r.Margin,
			}
			for _, d := range r.Defines {
				yr.Defines = append(yr.Defines, [2]string{d.Name, d.Value})
			}
			for _, p := range r.Picks {
				yr.Measured = append(yr.Measured, yamlPick{NKV: p.NKV, MedianNS: nsValue(p.MedianNS), Rule: string(p.Rule), Margin: p.Margin})
			}
			ys.Ranges = append(ys.Ranges, yr)
		}
		doc.Shapes = append(doc.Shapes, ys)
	}

	var b bytes.Buffer
	b.WriteString(t.comment("# "))
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("encoding dispatch table as YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("encoding dispatch table as YAML: %w", err)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("writing dispatch YAML: %w", err)
	}
	return nil
}

// comment is the header shared by the YAML and C outputs, each line
// starting with prefix.
func (t *Table) comment(prefix string) string {
	var b bytes.Buffer
	line := func(format string, args ...any) {
		// A file name with a line break must not end the comment.
		s := strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " ")
		if s == "" {
			b.WriteString(trimRight(prefix) + "\n")
			return
		}
		b.WriteString(prefix + s + "\n")
	}
	line("Code generated by ktune tune; DO NOT EDIT.")
	line("")
	line("Decode attention dispatch for %s. For each shape, nkv ranges", t.Device)
	line("[min_nkv, max_nkv) (max_nkv 0: no upper bound) name the fastest")
	line("configuration that passed all its gates, by the median of the %s probe.", t.Probe)
	line("A faster median wins only when significant (Mann-Whitney U, alpha %g);", t.Alpha)
	line("ties go to the landed configuration, then to the one winning at the")
	line("neighbouring nkv, then to the smaller SPLITS. Range boundaries lie at")
	line("the log-space midpoint of the measured nkv around them.")
	if t.Invariant != "" {
		line("")
		line("Invariant: each shape's ranges are configurations of one class, whose")
		line("output bits do not depend on the batch, the position in it or the")
		line("range that served the sequence (%s).", t.Invariant)
	}
	line("")
	line("Built from:")
	for _, s := range t.Sources {
		line("  %s sha256:%s", s.Name, s.SHA256)
	}
	return b.String()
}

func trimRight(s string) string {
	for len(s) > 0 && s[len(s)-1] == ' ' {
		s = s[:len(s)-1]
	}
	return s
}
