package expr

import (
	"errors"
	"reflect"
	"testing"
)

var env = Env{"heads": 28, "kv_heads": 4, "head_dim": 128, "batch": 2, "group": 7, "SPLITS": 32, "NR": 4}

func TestEval(t *testing.T) {
	for _, c := range []struct {
		src  string
		want int64
	}{
		{"7", 7},
		{"SPLITS", 32},
		{"SPLITS*heads", 896},
		{"1+2*3", 7},
		{"(1+2)*3", 9},
		{"10-4-3", 3},       // left-associative
		{"100/10/5", 2},     // left-associative
		{"17%5*2", 4},       // same precedence, left to right
		{"-3+5", 2},         //
		{"--3", 3},          // unary minus twice
		{"2*-3", -6},        //
		{"-7/2", -3},        // truncation toward zero, as in C
		{"-7%2", -1},        // sign of the dividend, as in C
		{"cdiv(7, 2)", 4},   //
		{"cdiv(8, 2)", 4},   //
		{"cdiv(-7, 2)", -3}, // ceil(-3.5)
		{"cdiv(7, -2)", -3}, // ceil(-3.5)
		{"cdiv(-7, -2)", 4}, // ceil(3.5)
		{"min(heads, 16)", 16},
		{"max(heads, 16)", 28},
		{"max(1, min(SPLITS, cdiv(head_dim, NR)))", 32},
		{"heads / group", 4},
		{"  batch\t* 3 ", 6},
	} {
		e, err := Parse(c.src)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.src, err)
			continue
		}
		got, err := e.Eval(env)
		if err != nil {
			t.Errorf("Eval(%q): %v", c.src, err)
			continue
		}
		if got != c.want {
			t.Errorf("Eval(%q) = %d, want %d", c.src, got, c.want)
		}
		if e.String() != c.src {
			t.Errorf("String() = %q, want %q", e.String(), c.src)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		src string
		col int
		msg string
	}{
		{"", 1, "expected a number, a symbol or '(', found end of expression"},
		{"1+", 3, "expected a number, a symbol or '(', found end of expression"},
		{"(1+2", 5, "expected ')', found end of expression"},
		{"1 2", 3, "unexpected number 2"},
		{"a $ b", 3, "unexpected character '$'"},
		{"12ab", 1, `malformed number "12a"`},
		{"pow(2, 3)", 1, `unknown function "pow" (want min, max, cdiv, log2, ceil_log2, fastdiv_m, fastdiv_s, fastdiv_a, fmd_mul, fmd_add, fmd_shift or wave_fill)`},
		{"min(1)", 1, "min takes 2 arguments, got 1"},
		{"max(1, 2, 3)", 1, "max takes 2 arguments, got 3"},
		{"cdiv(1 2)", 8, "expected ',' or ')' in call of cdiv, found number 2"},
		{"99999999999999999999", 1, "integer 99999999999999999999 out of range"},
		{"1+)", 3, `expected a number, a symbol or '(', found ")"`},
	} {
		_, err := Parse(c.src)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Parse(%q) = %v, want *Error", c.src, err)
			continue
		}
		if e.Col != c.col || e.Msg != c.msg {
			t.Errorf("Parse(%q) = col %d %q, want col %d %q", c.src, e.Col, e.Msg, c.col, c.msg)
		}
	}
}

func TestNestingLimit(t *testing.T) {
	deep := ""
	for range maxDepth + 1 {
		deep += "("
	}
	if _, err := Parse(deep + "1"); err == nil {
		t.Fatal("Parse accepted nesting deeper than maxDepth")
	}
	minus := ""
	for range maxDepth + 1 {
		minus += "-"
	}
	if _, err := Parse(minus + "1"); err == nil {
		t.Fatal("Parse accepted unary minus chains deeper than maxDepth")
	}
}

func TestEvalErrors(t *testing.T) {
	for _, c := range []struct {
		src string
		col int
		msg string
	}{
		{"SPLITS / (NR - 4)", 8, "division by zero"},
		{"7 % (NR-4)", 3, "division by zero"},
		{"cdiv(1, NR-4)", 1, "cdiv: division by zero"},
		{"2 * nkv", 5, `unknown symbol "nkv"`},
	} {
		e, err := Parse(c.src)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.src, err)
		}
		_, err = e.Eval(env)
		var ee *Error
		if !errors.As(err, &ee) || ee.Col != c.col || ee.Msg != c.msg {
			t.Errorf("Eval(%q) = %v, want col %d: %s", c.src, err, c.col, c.msg)
		}
	}
}

func TestSymbols(t *testing.T) {
	e, err := Parse("max(SPLITS, cdiv(nkv, NR)) * heads + SPLITS")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"NR", "SPLITS", "heads", "nkv"}
	if got := e.Symbols(); !reflect.DeepEqual(got, want) {
		t.Errorf("Symbols() = %v, want %v", got, want)
	}
}

// TestEvalOverflow: a result outside 64 bits is an error at its
// operator, never a wrapped value a launch would pass on.
func TestEvalOverflow(t *testing.T) {
	for _, c := range []struct {
		src string
		col int
	}{
		{"9223372036854775807 + 1", 21},
		{"-9223372036854775807 - 2", 22},
		{"4611686018427387904 * 2", 21},
		{"-4611686018427387905 * 2", 22},
		{"(-9223372036854775807 - 1) / -1", 28},
		{"(-9223372036854775807 - 1) % -1", 28},
		{"cdiv(-9223372036854775807 - 1, -1)", 1},
		{"3037000500 * 3037000500", 12},
	} {
		e, err := Parse(c.src)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.src, err)
		}
		got, err := e.Eval(env)
		var ee *Error
		if !errors.As(err, &ee) || ee.Col != c.col {
			t.Errorf("Eval(%q) = %d, %v; want an overflow at col %d", c.src, got, err, c.col)
		}
	}
	// The edges themselves are fine.
	for src, want := range map[string]int64{
		"9223372036854775806 + 1":        9223372036854775807,
		"-9223372036854775807 - 1":       -9223372036854775807 - 1,
		"3037000499 * 3037000499":        9223372030926249001,
		"-1 * 9223372036854775807":       -9223372036854775807,
		"(-9223372036854775807 - 1) / 1": -9223372036854775807 - 1,
		"0 * 9223372036854775807":        0,
		"(-9223372036854775807 - 1) % 1": 0,
		"cdiv(9223372036854775807, 1)":   9223372036854775807,
	} {
		e, _ := Parse(src)
		if got, err := e.Eval(env); err != nil || got != want {
			t.Errorf("Eval(%q) = %d, %v; want %d", src, got, err, want)
		}
	}
}
