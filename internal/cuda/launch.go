package cuda

import (
	"fmt"
	"math"
	"runtime"
)

// maxKernelArgs bounds the arguments of one launch; ktune's kernels take
// nine, an engine's up to a few dozen. Each argument gets an 8-byte
// pointer; the values follow in order, in
// argValueBytes: enough for by-value structs of a few hundred bytes
// (FlashAttention-2's 472) and 128-byte tensor maps, and small enough that
// the arguments and a launch configuration share one page.
const (
	maxKernelArgs = 64
	argSlot       = 8
	argValueBytes = 3 << 10
	argBufSize    = maxKernelArgs*argSlot + argValueBytes
)

// packArgs lays args out in buf, which must lie outside the Go heap and hold
// argBufSize bytes: buf[0 : 8n] is the void* kernelParams array cuLaunchKernel
// reads, and entry i points at argument i's value, stored after the array
// in 8-byte slots (a struct or vector in as many as it needs, from a
// 16-byte boundary). Each value is stored little-endian with the size
// of the kernel parameter it feeds: DevPtr, uint64 and int64 as 8 bytes;
// int32, uint32, float32 and int as 4 bytes; a []byte (a by-value struct
// or vector in its C layout) and a TensorMap as they are, from a 64-byte
// boundary when they are 64 bytes or more. An int becomes a 32-bit C int
// because that is what every ktune kernel's int parameters are; a value
// out of that range is an error, not a silent wrap.
func packArgs(buf []byte, args []any) error {
	if len(args) > maxKernelArgs {
		return fmt.Errorf("%d kernel arguments, at most %d are supported", len(args), maxKernelArgs)
	}
	if len(buf) < argBufSize {
		return fmt.Errorf("argument buffer of %d bytes, need %d", len(buf), argBufSize)
	}
	base := offHeapAddr(buf)
	off := maxKernelArgs * argSlot
	for i, a := range args {
		b, err := ArgBytes(a)
		if err != nil {
			return fmt.Errorf("kernel argument %d: %w", i, err)
		}
		switch {
		case len(b) >= 64:
			// A tensor map (or a struct holding one) is 64-byte aligned
			// (cuda.h); a struct this large loses nothing by it.
			off = (off + 63) &^ 63
		case len(b) > argSlot:
			off = (off + 15) &^ 15 // a struct or vector starts 16-aligned
		}
		n := max(argSlot, (len(b)+argSlot-1)&^(argSlot-1))
		if off+n > argBufSize {
			return fmt.Errorf("kernel arguments past %d: more than %d bytes of values", i, argValueBytes)
		}
		clear(buf[off : off+n])
		copy(buf[off:], b)
		putU64(buf[i*argSlot:], uint64(base)+uint64(off))
		off += n
	}
	return nil
}

// ArgBytes returns the bytes cuLaunchKernel reads for one kernel argument:
// its value little-endian, at the size of the kernel parameter it feeds
// (see packArgs for the types).
func ArgBytes(a any) ([]byte, error) {
	b := make([]byte, 8)
	switch v := a.(type) {
	case DevPtr:
		putU64(b, uint64(v))
	case uint64:
		putU64(b, v)
	case int64:
		putU64(b, uint64(v))
	case int32:
		putU32(b, uint32(v))
		b = b[:4]
	case uint32:
		putU32(b, v)
		b = b[:4]
	case uint8:
		b[0] = v
		b = b[:1]
	case int:
		if v < math.MinInt32 || v > math.MaxInt32 {
			return nil, fmt.Errorf("int %d does not fit a 32-bit C int", v)
		}
		putU32(b, uint32(int32(v)))
		b = b[:4]
	case float32:
		putU32(b, math.Float32bits(v))
		b = b[:4]
	case float64:
		putU64(b, math.Float64bits(v))
	case []byte:
		if len(v) == 0 {
			return nil, fmt.Errorf("an empty by-value argument")
		}
		return v, nil
	case TensorMap:
		return v[:], nil
	default:
		return nil, fmt.Errorf("unsupported type %T (use DevPtr, int, int32, uint32, int64, uint64, float32, float64 or []byte)", a)
	}
	return b, nil
}

// Launch runs f on a grid of grid[0]×grid[1]×grid[2] blocks of
// block[0]×block[1]×block[2] threads with sharedBytes of dynamic shared
// memory, in stream order on s (nil: the default stream). args are the
// kernel's parameters in order (see packArgs for the accepted types); they
// are copied, so they may change as soon as Launch returns. Launch does not
// wait for the kernel: a fault appears at the next synchronizing call.
func (c *Context) Launch(f *Function, grid, block [3]int, sharedBytes int, s *Stream, args ...any) error {
	return c.LaunchWith(LaunchAttrs{}, f, grid, block, sharedBytes, s, args...)
}

// LaunchAttrs are the launch attributes of cuLaunchKernelEx that ktune
// sets. The zero value launches with plain cuLaunchKernel.
type LaunchAttrs struct {
	// Programmatic is programmatic stream serialization (programmatic
	// dependent launch, PDL): the kernel may start before the previous
	// kernel in the stream has finished, once that one has executed
	// griddepcontrol.launch_dependents (or ended); it must execute
	// griddepcontrol.wait before reading what the previous kernel writes.
	// Engines chain the kernels of a decode step this way so that the
	// second's launch latency hides behind the first; a stream capture
	// keeps the dependency as a programmatic graph edge.
	Programmatic bool
	// Cluster, when not zero, launches the grid in thread-block clusters
	// of Cluster[0]×Cluster[1]×Cluster[2] blocks (each dimension divides
	// the grid's): the blocks of a cluster run at once on one GPC and may
	// read and write each other's shared memory. More than 8 blocks needs
	// the function's AllowNonPortableClusterSize first. A stream capture
	// keeps the attribute on the graph's kernel node.
	Cluster [3]int
}

// LaunchWith is Launch with launch attributes.
func (c *Context) LaunchWith(attrs LaunchAttrs, f *Function, grid, block [3]int, sharedBytes int, s *Stream, args ...any) error {
	var g, b [3]uint32
	for i := range 3 {
		if grid[i] < 1 || grid[i] > math.MaxUint32 || block[i] < 1 || block[i] > math.MaxUint32 {
			return fmt.Errorf("launching %s: grid %v and block %v must be positive", f.name, grid, block)
		}
		g[i], b[i] = uint32(grid[i]), uint32(block[i])
	}
	if sharedBytes < 0 || sharedBytes > math.MaxUint32 {
		return fmt.Errorf("launching %s: shared memory %d out of range", f.name, sharedBytes)
	}
	if err := checkCluster(attrs.Cluster, grid); err != nil {
		return fmt.Errorf("launching %s: %w", f.name, err)
	}
	c.argMu.Lock()
	defer c.argMu.Unlock()
	if c.closed.Load() {
		return fmt.Errorf("launching %s: context is closed", f.name)
	}
	if err := packArgs(c.args.mem, args); err != nil {
		return fmt.Errorf("launching %s: %w", f.name, err)
	}
	params := c.args.base()
	if len(args) == 0 {
		params = 0
	}
	var err error
	if attrs == (LaunchAttrs{}) {
		err = c.call("cuLaunchKernel", func() int32 {
			return c.d.cuLaunchKernel(f.h, g[0], g[1], g[2], b[0], b[1], b[2], uint32(sharedBytes), s.handle(), params, 0)
		})
	} else {
		cfg := c.args.mem[argBufSize : argBufSize+launchConfigSize]
		packLaunchConfig(cfg, offHeapAddr(cfg), g, b, uint32(sharedBytes), s.handle(), attrs)
		err = c.call("cuLaunchKernelEx", func() int32 {
			return c.d.cuLaunchKernelEx(offHeapAddr(cfg), f.h, params, 0)
		})
	}
	runtime.KeepAlive(c.args)
	if err != nil {
		return fmt.Errorf("launching %s (grid %v, block %v, %d B shared): %w", f.name, grid, block, sharedBytes, err)
	}
	return nil
}

// checkCluster reports a cluster the driver would refuse for the grid:
// a dimension below 1, or one that does not divide the grid's. The zero
// cluster is no cluster.
func checkCluster(cluster, grid [3]int) error {
	if cluster == ([3]int{}) {
		return nil
	}
	for i := range 3 {
		if cluster[i] < 1 || grid[i]%cluster[i] != 0 {
			return fmt.Errorf("cluster %v does not divide grid %v (dimension %d)", cluster, grid, i)
		}
	}
	return nil
}

// The layout of CUlaunchConfig and CUlaunchAttribute (cuda.h, CUDA 12 and
// 13, x86-64 and aarch64): the config is seven uint32 (grid, block, shared
// bytes), padding to 8, the stream handle at 32, the attribute pointer at 40
// and the attribute count at 48, 56 bytes in all; an attribute is a uint32
// id, padding, and a 64-byte value union at 8, 72 bytes in all. ktune puts
// both in the context's off-heap page after the kernel arguments, the
// attributes one after the other.
const (
	launchConfigBytes = 56
	launchAttrBytes   = 72
	maxLaunchAttrs    = 2                                                      // the ones LaunchAttrs can ask for at once
	launchConfigSize  = launchConfigBytes + 8 + maxLaunchAttrs*launchAttrBytes // the attributes 8-aligned after the config

	// attrClusterDimension is CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION; its
	// value (clusterDim) is three uint32, x, y and z, at the start of the
	// union.
	attrClusterDimension = 4
	// attrProgrammaticStreamSerialization is
	// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION.
	attrProgrammaticStreamSerialization = 6
)

// packLaunchConfig writes a CUlaunchConfig for the launch into buf (at
// address base) with its attributes after it.
func packLaunchConfig(buf []byte, base uintptr, grid, block [3]uint32, shared uint32, stream uintptr, attrs LaunchAttrs) {
	clear(buf)
	for i := range 3 {
		putU32(buf[4*i:], grid[i])
		putU32(buf[12+4*i:], block[i])
	}
	putU32(buf[24:], shared)
	putU64(buf[32:], uint64(stream))
	attrAt := func(i int) []byte { return buf[launchConfigBytes+8+i*launchAttrBytes:] }
	n := 0
	if attrs.Cluster != ([3]int{}) {
		attr := attrAt(n)
		putU32(attr[0:], attrClusterDimension)
		for i, d := range attrs.Cluster {
			putU32(attr[8+4*i:], uint32(d)) // value.clusterDim.x, y, z
		}
		n++
	}
	if attrs.Programmatic {
		attr := attrAt(n)
		putU32(attr[0:], attrProgrammaticStreamSerialization)
		putU32(attr[8:], 1) // value.programmaticStreamSerializationAllowed
		n++
	}
	putU64(buf[40:], uint64(base)+launchConfigBytes+8)
	putU32(buf[48:], uint32(n))
}
