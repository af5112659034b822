package cubin

import (
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// small.cubin is testdata/small.cu compiled by NVRTC 11.8 for sm_90; small.cu
// says why each number is what it is. The reading itself was checked
// against the driver: for r4 of experiments/slice.yaml it gives the 40 and
// 32 registers the H200 results record from cuFuncGetAttribute.
func TestParseSmall(t *testing.T) {
	b, err := os.ReadFile("testdata/small.cubin")
	if err != nil {
		t.Fatal(err)
	}
	img, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := img.Entries(); !slices.Equal(got, []string{"bounded", "plain"}) {
		t.Errorf("entries %q, want bounded and plain (helper is a device function)", got)
	}
	bounded, plain := img.Functions["bounded"], img.Functions["plain"]
	if bounded == nil || plain == nil {
		t.Fatalf("functions %v", img.Functions)
	}
	want := Function{Name: "bounded", Entry: true, Registers: 32, FrameBytes: 1024, StaticShared: 1280, MaxThreads: 64, MaxRegisters: 255,
		Params: []Param{{0, 0, 8}, {1, 8, 8}, {2, 16, 4}}, ParamsKnown: true}
	if !reflect.DeepEqual(*bounded, want) {
		t.Errorf("bounded = %+v\nwant      %+v", *bounded, want)
	}
	want = Function{Name: "plain", Entry: true, Registers: 8, MaxRegisters: 255, Params: []Param{{0, 0, 8}}, ParamsKnown: true}
	if !reflect.DeepEqual(*plain, want) {
		t.Errorf("plain = %+v\nwant    %+v", *plain, want)
	}
	for name, f := range img.Functions {
		if strings.Contains(name, "helper") && f.Entry {
			t.Errorf("%s is a device function, read as an entry", name)
		}
	}
}

func TestParseRejects(t *testing.T) {
	if _, err := Parse([]byte("// PTX\n.version 7.8\n")); !errors.Is(err, ErrNotCUBIN) {
		t.Errorf("PTX text: got %v, want ErrNotCUBIN", err)
	}
	b, err := os.ReadFile("testdata/small.cubin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(b[:200]); err == nil {
		t.Error("a truncated CUBIN parsed")
	}
}

func TestParseInfo(t *testing.T) {
	// An HVAL (max registers 255), an SVAL of two words, an NVAL.
	b := []byte{0x03, 0x1b, 0xff, 0x00, 0x04, 0x2f, 0x08, 0x00, 7, 0, 0, 0, 40, 0, 0, 0, 0x01, 0x31, 0, 0}
	attrs, err := parseInfo(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(attrs) != 3 || attrs[0].id != attrMaxRegCount || attrs[0].value != 255 ||
		!slices.Equal(attrs[1].u32s(), []uint32{7, 40}) || attrs[2].id != 0x31 {
		t.Errorf("parsed %+v", attrs)
	}
	for _, bad := range [][]byte{
		{0x04, 0x2f, 0x08, 0x00, 7, 0}, // size past the end
		{0x07, 0x2f, 0x00, 0x00},       // unknown format
		{0x03, 0x1b},                   // truncated
	} {
		if _, err := parseInfo(bad); err == nil {
			t.Errorf("% x parsed", bad)
		}
	}
}

func TestPTXEntries(t *testing.T) {
	ptx := `.version 7.8
.target sm_90
.visible .entry _Z7partialPf(
	.param .u64 p
)
.entry attn_combine
{
}
.func helper()
`
	if got := PTXEntries([]byte(ptx)); !slices.Equal(got, []string{"_Z7partialPf", "attn_combine"}) {
		t.Errorf("entries %q", got)
	}
}

// TestParams reads params.cubin's parameter records; the expected
// offsets and sizes are cuobjdump 11.8's -elf dump of the same file,
// which the source's types explain (testdata/params.cu).
func TestParams(t *testing.T) {
	b, err := os.ReadFile("testdata/params.cubin")
	if err != nil {
		t.Fatal(err)
	}
	img, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	mixed, none := img.Functions["mixed"], img.Functions["none"]
	if mixed == nil || none == nil {
		t.Fatalf("functions %v", img.Entries())
	}
	want := []Param{{0, 0, 8}, {1, 8, 4}, {2, 12, 1}, {3, 16, 32}, {4, 48, 8}, {5, 56, 2}, {6, 112, 128}}
	if !mixed.ParamsKnown || !slices.Equal(mixed.Params, want) {
		t.Errorf("mixed: known %v, params %v\nwant %v", mixed.ParamsKnown, mixed.Params, want)
	}
	if !none.ParamsKnown || len(none.Params) != 0 {
		t.Errorf("none: known %v, params %v; want known and none", none.ParamsKnown, none.Params)
	}
	dec := img.Functions["_ZN3eng6decodeILi128EtLi512EEEvPfPKT0_PKif"]
	if dec == nil || !slices.Equal(dec.Params, []Param{{0, 0, 8}, {1, 8, 8}, {2, 16, 8}, {3, 24, 4}}) {
		t.Errorf("eng::decode<128, unsigned short>: %+v", dec)
	}
}

func TestKParamRejects(t *testing.T) {
	if _, err := kparam(make([]byte, 8)); err == nil {
		t.Error("an 8-byte KPARAM_INFO decoded")
	}
	p, err := kparam([]byte{0, 0, 0, 0, 3, 0, 0x10, 0, 0, 0xf0, 0x81, 0x00})
	if err != nil || p != (Param{Ordinal: 3, Offset: 16, Size: 32}) {
		t.Errorf("decoded %+v, %v; want ordinal 3, offset 16, 32 bytes", p, err)
	}
}

// An entry written as C++ is found by demangling params.cubin's symbols;
// an ambiguous or missing one is refused with the candidates.
func TestResolve(t *testing.T) {
	b, err := os.ReadFile("testdata/params.cubin")
	if err != nil {
		t.Fatal(err)
	}
	img, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	syms := img.Entries()
	for name, want := range map[string]string{
		"eng::decode<128, unsigned short, 512>": "_ZN3eng6decodeILi128EtLi512EEEvPfPKT0_PKif",
		"eng::decode<64,__half,256>":            "_ZN3eng6decodeILi64E6__halfLi256EEEvPfPKT0_PKif",
		"tiled<float, 4, true>":                 "_Z5tiledIfLi4ELb1EEvPT_i",
		"tiled<float, 4, false>(float*, int)":   "_Z5tiledIfLi4ELb0EEvPT_i",
		"mixed":                                 "mixed",
		"_Z5tiledI6__halfLi8ELb0EEvPT_i":        "_Z5tiledI6__halfLi8ELb0EEvPT_i",
	} {
		if got, err := Resolve(syms, name); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %s", name, got, err, want)
		}
	}
	for name, want := range map[string]string{
		"tiled<float, 8, true>":            "no entry of the image is named tiled<float, 8, true>; entries named tiled: tiled<__half, 8, false> (_Z5tiledI6__halfLi8ELb0EEvPT_i); tiled<float, 4, false> (_Z5tiledIfLi4ELb0EEvPT_i); tiled<float, 4, true> (_Z5tiledIfLi4ELb1EEvPT_i)",
		"decode<128, unsigned short, 512>": "no entry of the image is named decode<128, unsigned short, 512>; entries named decode: eng::decode<128, unsigned short, 512>",
		"absent":                           "no entry of the image is named absent; its entries: eng::decode<128",
	} {
		if _, err := Resolve(syms, name); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v\nwant %s…", name, err, want)
		}
	}
	// Two symbols with one C++ name (overloads differing in parameters).
	over := []string{"_Z1fIiEvPf", "_Z1fIiEvPi"}
	if _, err := Resolve(over, "f<int>"); err == nil || !strings.Contains(err.Error(), "f<int> names 2 entries of the image (write its parameter types to choose one)") {
		t.Errorf("overloads: %v", err)
	}
	if got, err := Resolve(over, "f<int>(int*)"); err != nil || got != "_Z1fIiEvPi" {
		t.Errorf("f<int>(int*): %q, %v", got, err)
	}
}
