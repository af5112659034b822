package sass

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// A Function is one kernel function of a listing, its instructions in
// listing order.
type Function struct {
	// Name is the function's symbol, e.g. "attn_partial" (unmangled for
	// extern "C" kernels).
	Name string
	// Instrs are the function's instructions in the order listed, which
	// is address order.
	Instrs []Instr
}

// An Instr is one SASS instruction.
type Instr struct {
	// Offset is the byte offset from the start of the function, as
	// printed in the listing's /*hex*/ column.
	Offset int
	// Pred is the guard predicate as written ("@P0", "@!P0", "@!PT"), or
	// "" for an unconditional instruction.
	Pred string
	// Op is the opcode with its modifiers, e.g. "LDG.E.64.CONSTANT".
	Op string
	// Text is the instruction as listed, predicate included, without the
	// offset, the trailing ';' and the encoding comment.
	Text string
	// Target is the offset a BRA jumps to, or -1 for every other
	// instruction. cuobjdump prints it as hex; nvdisasm prints a label,
	// which Parse resolves to the offset of the instruction after it.
	Target int
}

// Never reports whether the instruction is guarded by the constant false
// predicate (@!PT): ptxas emits such instructions as placeholders (the
// cp.async path pads with "@!PT LDS RZ, [RZ]"), and they never execute.
func (in Instr) Never() bool { return in.Pred == "@!PT" }

// A ParseError is a line of a listing that Parse could not make sense of.
type ParseError struct {
	Line int    // 1-based line number in the listing
	Msg  string // what is wrong
}

func (e *ParseError) Error() string { return fmt.Sprintf("sass listing: line %d: %s", e.Line, e.Msg) }

var (
	// cuobjdump -sass: "		Function : attn_partial"
	reFunction = regexp.MustCompile(`^\s*Function\s*:\s*(\S+)\s*$`)
	// nvdisasm: "	.section	.text.attn_partial,"ax",@progbits"
	reSection = regexp.MustCompile(`^\s*\.section\s+\.text\.([^,\s]+)`)
	// nvdisasm: ".L_x_6:" (also the function's own symbol lines)
	reLabel = regexp.MustCompile(`^\s*([A-Za-z_.$][\w.$]*):\s*$`)
	// both: "        /*0a40*/   @P1 LDG.E.64.CONSTANT R4, desc[UR10][R4.64] ;   /* 0x... */"
	reInstr = regexp.MustCompile(`^\s*/\*([0-9a-fA-F]+)\*/\s*(.*)$`)
	// the encoding comment cuobjdump prints after an instruction
	reEncoding = regexp.MustCompile(`\s*/\*\s*0x[0-9a-fA-F]+\s*\*/\s*$`)
	// an nvdisasm branch target: `(.L_x_6)
	reLabelRef = regexp.MustCompile("^`\\(([^)]+)\\)$")
)

// Parse splits a disassembler listing (`cuobjdump -sass` or `nvdisasm -c`)
// into its functions, keyed by name. Lines that are neither a function
// header, a label nor an instruction (headers, flags, encodings, padding)
// are skipped. It is an error for a listing to hold no function, an
// instruction outside any function, the same function twice (a fat binary
// with several architectures: disassemble one CUBIN instead) or a branch
// to a label that is not defined in its function.
func Parse(text string) (map[string]*Function, error) {
	p := parser{funcs: map[string]*Function{}}
	for i, line := range strings.Split(text, "\n") {
		if err := p.line(i+1, strings.TrimRight(line, "\r")); err != nil {
			return nil, err
		}
	}
	if err := p.finish(); err != nil {
		return nil, err
	}
	if len(p.funcs) == 0 {
		return nil, &ParseError{Line: 1, Msg: "no function found (expected cuobjdump -sass or nvdisasm -c output)"}
	}
	return p.funcs, nil
}

// parser holds the state of one Parse call: the function being read and
// the labels and label branches it has seen, resolved when it ends.
type parser struct {
	funcs   map[string]*Function
	cur     *Function
	labels  map[string]int // label -> index into cur.Instrs of the next instruction
	pending []labelRef     // branches to labels, resolved in finish
}

type labelRef struct {
	instr int // index into cur.Instrs
	label string
	line  int
}

func (p *parser) line(n int, line string) error {
	if m := reFunction.FindStringSubmatch(line); m != nil {
		return p.start(n, m[1])
	}
	if m := reSection.FindStringSubmatch(line); m != nil {
		return p.start(n, m[1])
	}
	if m := reLabel.FindStringSubmatch(line); m != nil {
		if p.cur != nil {
			p.labels[m[1]] = len(p.cur.Instrs)
		}
		return nil
	}
	m := reInstr.FindStringSubmatch(line)
	if m == nil {
		return nil
	}
	if p.cur == nil {
		return &ParseError{Line: n, Msg: "instruction before any function header"}
	}
	off, err := strconv.ParseInt(m[1], 16, 64)
	if err != nil {
		return &ParseError{Line: n, Msg: fmt.Sprintf("offset %q: %v", m[1], err)}
	}
	in, label, err := decode(int(off), m[2])
	if err != nil {
		return &ParseError{Line: n, Msg: err.Error()}
	}
	if in.Op == "" {
		// "/*1530*/" with nothing after it is not an instruction.
		return nil
	}
	if label != "" {
		p.pending = append(p.pending, labelRef{instr: len(p.cur.Instrs), label: label, line: n})
	}
	p.cur.Instrs = append(p.cur.Instrs, in)
	return nil
}

func (p *parser) start(n int, name string) error {
	if err := p.finish(); err != nil {
		return err
	}
	if _, dup := p.funcs[name]; dup {
		return &ParseError{Line: n, Msg: fmt.Sprintf("function %s listed twice (a fat binary? disassemble a single-architecture CUBIN)", name)}
	}
	p.cur = &Function{Name: name}
	p.funcs[name] = p.cur
	p.labels = map[string]int{}
	p.pending = nil
	return nil
}

// finish resolves the current function's label branches.
func (p *parser) finish() error {
	if p.cur == nil {
		return nil
	}
	for _, r := range p.pending {
		i, ok := p.labels[r.label]
		if !ok || i >= len(p.cur.Instrs) {
			return &ParseError{Line: r.line, Msg: fmt.Sprintf("branch to label %s, which is not followed by an instruction of %s", r.label, p.cur.Name)}
		}
		p.cur.Instrs[r.instr].Target = p.cur.Instrs[i].Offset
	}
	p.pending = nil
	return nil
}

// decode splits the text after an offset column into an instruction. It
// returns the label of a branch that nvdisasm printed symbolically.
func decode(off int, rest string) (Instr, string, error) {
	rest = reEncoding.ReplaceAllString(rest, "")
	rest = strings.TrimSpace(rest)
	rest = strings.TrimSpace(strings.TrimSuffix(rest, ";"))
	in := Instr{Offset: off, Text: rest, Target: -1}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return in, "", nil
	}
	if strings.HasPrefix(fields[0], "@") {
		in.Pred = fields[0]
		fields = fields[1:]
		if len(fields) == 0 {
			return in, "", fmt.Errorf("predicate %s guards no instruction", in.Pred)
		}
	}
	in.Op = fields[0]
	if !isOp(in.Op, "BRA") {
		return in, "", nil
	}
	// The target is the last operand: "BRA 0x7c0", "BRA !P2, 0x14a0",
	// "BRA `(.L_x_6)".
	ops := strings.Split(strings.Join(fields[1:], " "), ",")
	last := strings.TrimSpace(ops[len(ops)-1])
	if m := reLabelRef.FindStringSubmatch(last); m != nil {
		return in, m[1], nil
	}
	if h, ok := strings.CutPrefix(last, "0x"); ok {
		t, err := strconv.ParseInt(h, 16, 64)
		if err != nil {
			return in, "", fmt.Errorf("branch target %q: %v", last, err)
		}
		in.Target = int(t)
	}
	return in, "", nil
}

// isOp reports whether op is base itself or base with modifiers: isOp
// ("LDG.E.64", "LDG") is true, isOp("LDGSTS.E", "LDG") is false.
func isOp(op, base string) bool {
	return op == base || strings.HasPrefix(op, base+".")
}
