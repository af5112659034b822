package abi

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// A scratch buffer may also start with a constant in every 32-bit word,
// written TYPE:VALUE (f32:1, i32:-1, u32:7): the value an engine's host
// code writes before its first launch (a scale of 1.0, an empty-slot
// marker). The fill is canonical text, so that it hashes and records as
// it parses.

// constFill parses a constant fill: its canonical text and its word.
func constFill(s string) (ScratchFill, uint32, error) {
	typ, val, ok := strings.Cut(s, ":")
	if !ok {
		return "", 0, fmt.Errorf("want %s, %s, %s or a constant f32:V, i32:V or u32:V, got %q", FillZero, FillPoison, FillNever, s)
	}
	switch typ {
	case "f32":
		f, err := strconv.ParseFloat(val, 32)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return "", 0, fmt.Errorf("fill %q: want a finite f32", s)
		}
		return ScratchFill("f32:" + strconv.FormatFloat(f, 'g', -1, 32)), math.Float32bits(float32(f)), nil
	case "i32":
		n, err := strconv.ParseInt(val, 10, 32)
		if err != nil {
			return "", 0, fmt.Errorf("fill %q: want an i32", s)
		}
		return ScratchFill("i32:" + strconv.FormatInt(n, 10)), uint32(int32(n)), nil
	case "u32":
		n, err := strconv.ParseUint(val, 10, 32)
		if err != nil {
			return "", 0, fmt.Errorf("fill %q: want a u32", s)
		}
		return ScratchFill("u32:" + strconv.FormatUint(n, 10)), uint32(n), nil
	}
	return "", 0, fmt.Errorf("fill %q: a constant's type is f32, i32 or u32 (one 32-bit word)", s)
}

// Word is the 32-bit word a constant fill writes; ok is false for zero,
// poison and never.
func (f ScratchFill) Word() (word uint32, ok bool) {
	if f == FillZero || f == FillPoison || f == FillNever {
		return 0, false
	}
	_, w, err := constFill(string(f))
	return w, err == nil
}
