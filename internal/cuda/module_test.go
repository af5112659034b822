package cuda

import (
	"bytes"
	"math"
	"testing"
)

func TestKind(t *testing.T) {
	for _, c := range []struct {
		img  []byte
		want ImageKind
	}{
		{[]byte("\x7fELF\x02\x01"), ImageCUBIN},
		{[]byte{0x50, 0xed, 0x55, 0xba, 1, 0}, ImageFatbin},
		{[]byte("//\n.version 8.0\n"), ImagePTX},
	} {
		if got := Kind(c.img); got != c.want {
			t.Errorf("Kind(%q) = %s, want %s", c.img, got, c.want)
		}
	}
}

// TestArgBytes pins the byte layout of every argument type: what
// cuLaunchKernel reads through each kernelParams entry.
func TestArgBytes(t *testing.T) {
	for _, c := range []struct {
		arg  any
		want []byte
	}{
		{DevPtr(0x1122334455667788), []byte{0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11}},
		{int32(-2), []byte{0xfe, 0xff, 0xff, 0xff}},
		{uint32(7), []byte{7, 0, 0, 0}},
		{int64(-1), bytes.Repeat([]byte{0xff}, 8)},
		{uint64(1 << 40), []byte{0, 0, 0, 0, 0, 1, 0, 0}},
		{float32(1), []byte{0, 0, 0x80, 0x3f}},
		{3, []byte{3, 0, 0, 0}},
		{float64(1), []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}},
	} {
		got, err := ArgBytes(c.arg)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("ArgBytes(%T %v) = % x, %v; want % x", c.arg, c.arg, got, err, c.want)
		}
	}
	if _, err := ArgBytes(math.MaxInt32 + 1); err == nil {
		t.Error("an int past 32 bits was accepted")
	}
	if _, err := ArgBytes("x"); err == nil {
		t.Error("a string was accepted")
	}
}
