package cuda

import (
	"fmt"
	"runtime"
)

// A Stream is a queue of device work that runs in order.
type Stream struct {
	c *Context
	h uintptr // CUstream
	// capturing is set between BeginCapture and EndCapture, while the
	// goroutine holds its OS thread.
	capturing bool
}

// CU_STREAM_NON_BLOCKING: the stream does not wait for the legacy default
// stream, so an unrelated synchronous copy cannot serialise with (or, during
// capture, invalidate) the work queued on it.
const streamNonBlocking = 0x1

// NewStream creates a non-blocking stream.
func (c *Context) NewStream() (*Stream, error) {
	var h uintptr
	if err := c.call("cuStreamCreate", func() int32 { return c.d.cuStreamCreate(&h, streamNonBlocking) }); err != nil {
		return nil, err
	}
	return &Stream{c: c, h: h}, nil
}

// handle is the CUstream; a nil *Stream means the legacy default stream (0).
func (s *Stream) handle() uintptr {
	if s == nil {
		return 0
	}
	return s.h
}

// Synchronize waits until all work queued on s has finished.
func (s *Stream) Synchronize() error {
	return s.c.call("cuStreamSynchronize", func() int32 { return s.c.d.cuStreamSynchronize(s.h) })
}

// Destroy destroys the stream once its queued work has finished.
func (s *Stream) Destroy() error {
	return s.c.call("cuStreamDestroy", func() int32 { return s.c.d.cuStreamDestroy(s.h) })
}

// CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: only this thread's unsafe calls (a
// synchronous copy, an allocation) abort the capture, so other goroutines
// using the device on other threads cannot invalidate it.
const captureModeThreadLocal = 1

// BeginCapture starts recording the work queued on s into a graph instead of
// running it. The calling goroutine stays locked to its OS thread until
// EndCapture, which it must call itself, because the driver binds a
// thread-local capture to the thread that began it.
func (s *Stream) BeginCapture() error {
	if s.capturing {
		return fmt.Errorf("cuStreamBeginCapture: stream is already capturing")
	}
	runtime.LockOSThread()
	if err := s.c.call("cuStreamBeginCapture", func() int32 { return s.c.d.cuStreamBeginCapture(s.h, captureModeThreadLocal) }); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	s.capturing = true
	return nil
}

// A Graph is an instantiated, executable CUDA graph (CUgraphExec). Replaying
// it costs one launch call however many kernels it holds, which is how ktune
// times a partial+combine pair without host launch overhead between them.
type Graph struct {
	c *Context
	h uintptr // CUgraphExec
}

// EndCapture stops the capture begun by BeginCapture and instantiates what
// was recorded. The recorded template graph is destroyed afterwards: only the
// executable graph is kept.
func (s *Stream) EndCapture() (*Graph, error) {
	if !s.capturing {
		return nil, fmt.Errorf("cuStreamEndCapture: stream is not capturing")
	}
	s.capturing = false
	defer runtime.UnlockOSThread()
	if err := s.c.enter("cuStreamEndCapture"); err != nil {
		return nil, err
	}
	defer s.c.exit()
	d := s.c.d
	var g uintptr
	if err := d.check("cuStreamEndCapture", d.cuStreamEndCapture(s.h, &g)); err != nil {
		return nil, fmt.Errorf("ending stream capture: %w", err)
	}
	var exec uintptr
	err := d.check("cuGraphInstantiateWithFlags", d.cuGraphInstantiateWithFlags(&exec, g, 0))
	if derr := d.check("cuGraphDestroy", d.cuGraphDestroy(g)); err == nil && derr != nil {
		d.cuGraphExecDestroy(exec)
		err = derr
	}
	if err != nil {
		return nil, fmt.Errorf("instantiating the captured graph: %w", err)
	}
	return &Graph{c: s.c, h: exec}, nil
}

// Launch replays the graph in stream order on s (nil: the default stream).
func (g *Graph) Launch(s *Stream) error {
	return g.c.call("cuGraphLaunch", func() int32 { return g.c.d.cuGraphLaunch(g.h, s.handle()) })
}

// Destroy frees the executable graph.
func (g *Graph) Destroy() error {
	return g.c.call("cuGraphExecDestroy", func() int32 { return g.c.d.cuGraphExecDestroy(g.h) })
}

// An Event is a point in a stream that the device timestamps.
type Event struct {
	c *Context
	h uintptr // CUevent
}

// NewEvent creates an event with timing enabled.
func (c *Context) NewEvent() (*Event, error) {
	var h uintptr
	if err := c.call("cuEventCreate", func() int32 { return c.d.cuEventCreate(&h, 0) }); err != nil {
		return nil, err
	}
	return &Event{c: c, h: h}, nil
}

// Record places the event in stream order on s (nil: the default stream).
func (e *Event) Record(s *Stream) error {
	return e.c.call("cuEventRecord", func() int32 { return e.c.d.cuEventRecord(e.h, s.handle()) })
}

// Synchronize waits until the device has reached the event.
func (e *Event) Synchronize() error {
	return e.c.call("cuEventSynchronize", func() int32 { return e.c.d.cuEventSynchronize(e.h) })
}

// Elapsed returns the device time between two recorded, completed events in
// milliseconds, with a resolution of about half a microsecond.
func Elapsed(start, end *Event) (ms float32, err error) {
	if start.c != end.c {
		return 0, fmt.Errorf("cuEventElapsedTime: events belong to different contexts")
	}
	err = start.c.call("cuEventElapsedTime", func() int32 { return start.c.d.cuEventElapsedTime(&ms, start.h, end.h) })
	return ms, err
}

// Destroy destroys the event.
func (e *Event) Destroy() error {
	return e.c.call("cuEventDestroy", func() int32 { return e.c.d.cuEventDestroy(e.h) })
}
