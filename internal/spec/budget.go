package spec

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// A Budget is a variant's resource limits: what its compiled kernels may
// use per entry point, so that a kernel that grows past what the engine
// can afford (registers that cut occupancy, a spill, shared memory another
// kernel of the step needs) fails where it is built, in ktune check and in
// a sweep, instead of being measured. The zero Budget sets no limit.
type Budget struct {
	// MaxRegisters is max_registers: registers per thread, 0 for none.
	MaxRegisters int
	// NoSpills is no_spills: true: no local memory at all. The CUBIN
	// tells a stack frame, not what is in it, so a local array fails too,
	// not only a register spill: both are per-thread traffic to DRAM.
	NoSpills bool
	// MaxShared is max_shared: static plus dynamic shared memory per
	// block, in bytes, 0 for none.
	MaxShared int
}

// IsZero reports whether the budget sets no limit.
func (b Budget) IsZero() bool { return b == Budget{} }

// String is the budget as the spec writes it, for hashes and messages.
func (b Budget) String() string {
	return fmt.Sprintf("max_registers=%d no_spills=%v max_shared=%d", b.MaxRegisters, b.NoSpills, b.MaxShared)
}

// Breaks lists what an entry point with these resources breaks of the
// budget: registers per thread, local memory bytes per thread, and its
// static and dynamic shared memory per block. Empty: within it.
func (b Budget) Breaks(registers, localBytes, staticShared, dynamicShared int) []string {
	var out []string
	if b.MaxRegisters > 0 && registers > b.MaxRegisters {
		out = append(out, fmt.Sprintf("%d registers, over max_registers %d", registers, b.MaxRegisters))
	}
	if b.NoSpills && localBytes > 0 {
		out = append(out, fmt.Sprintf("%d bytes of local memory per thread (spills or a local array), against no_spills", localBytes))
	}
	if sh := staticShared + dynamicShared; b.MaxShared > 0 && sh > b.MaxShared {
		out = append(out, fmt.Sprintf("%d bytes of shared memory (%d static + %d dynamic), over max_shared %d", sh, staticShared, dynamicShared, b.MaxShared))
	}
	return out
}

// budgetKeys are the variant keys a Budget is read from.
var budgetKeys = []string{"max_registers", "no_spills", "max_shared"}

// budgetKey decodes one of budgetKeys into b.
func (d *decoder) budgetKey(key, where string, val *yaml.Node, b *Budget) {
	switch key {
	case "no_spills":
		switch p, ok := d.scalar(val, where); {
		case ok && p == "true":
			b.NoSpills = true
		case ok && p != "false":
			d.errorf(val, "%s: want true or false, got %q", where, p)
		}
	case "max_registers", "max_shared":
		n, ok := d.integer(val, where)
		if !ok {
			return
		}
		if n < 1 {
			d.errorf(val, "%s: want a positive integer, got %d", where, n)
			return
		}
		if key == "max_registers" {
			if n > 255 {
				d.errorf(val, "%s: %d is more than the 255 registers a thread can have", where, n)
				return
			}
			b.MaxRegisters = n
		} else {
			b.MaxShared = n
		}
	}
}
