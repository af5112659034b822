package plan

import (
	"fmt"

	"github.com/ktune/ktune/internal/abi"
)

// tensorMaps evaluates every tensor map of a point's launches at the point
// and checks it against the driver's rules (abi.TensorMap.Eval), so that a
// box too large or a stride off 16 bytes is the plan's error, at the
// tensor map's place in the spec, instead of the driver's
// CUDA_ERROR_INVALID_VALUE in the middle of a sweep. The probe evaluates
// them again when it marshals them; the values are a function of what the
// point's hash covers (the shape, the defines, the io and the arguments'
// text).
func (b *builder) tensorMaps(pt *Point) error {
	c := &pt.Config
	d := pt.Dims()
	env := d.Env(c.Defines)
	var walk func(a abi.Arg) error
	walk = func(a abi.Arg) error {
		switch {
		case a.TensorMap != nil:
			m := a.TensorMap
			if _, err := m.Eval(env, c.Shape.KVDtype); err != nil {
				return fmt.Errorf("%s:%d:%d: variant %s, shape %s, %s, nkv %d: tensor map over %s: %w",
					b.s.Path, m.Line, m.Col, c.Variant, c.Shape.Name, c.Defines.String(), c.NKV, m.Buffer, err)
			}
		case a.Struct != nil:
			for _, f := range a.Struct.Fields {
				if err := walk(f.Arg); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, l := range pt.Launches {
		for _, a := range l.Args {
			if err := walk(a); err != nil {
				return err
			}
		}
	}
	return nil
}
