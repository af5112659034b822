package sweep

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ktune/ktune/internal/results"
)

// A worker is one running worker process.
type worker struct {
	cmd    *exec.Cmd
	device int
	in     io.WriteCloser
	resp   chan workerResponse // closed when stdout ends
	stderr *tailBuffer
	errEOF chan struct{} // closed when stderr ends
	exited chan struct{} // closed once Wait has returned
	killed bool          // the pool sent the kill
}

// startWorker starts cmd with pipes of its own (not exec's StdoutPipe: Wait
// would close those under the reader) in a new process group.
func startWorker(cmd *exec.Cmd, device int, p *Pool) (*worker, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = cmd.Start()
	// The child has its copies; the parent keeps only its own ends, so
	// that the child's exit is seen as EOF.
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, err
	}
	w := &worker{cmd: cmd, device: device, in: inW, resp: make(chan workerResponse, 1),
		stderr: newTailBuffer(8 << 10), errEOF: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(w.exited)
	}()
	go w.readStdout(outR, p)
	go w.readStderr(errR, p)
	return w, nil
}

// readStdout decodes tagged response lines and logs anything else.
func (w *worker) readStdout(r *os.File, p *Pool) {
	defer close(w.resp)
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		// Records carry samples and NVRTC logs: no useful line limit.
		line, err := br.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			var resp workerResponse
			if json.Unmarshal(t, &resp) == nil && resp.Tag == workerProtocol {
				w.resp <- resp
			} else {
				p.logf("device %d worker stdout: %s", w.device, t)
			}
		}
		if err != nil {
			return
		}
	}
}

func (w *worker) readStderr(r *os.File, p *Pool) {
	defer close(w.errEOF)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		w.stderr.Write(append(sc.Bytes(), '\n'))
		if p.opts.Verbose {
			p.logf("device %d: %s", w.device, sc.Text())
		}
	}
	// A line longer than the scanner's buffer: keep the raw rest.
	io.Copy(w.stderr, r)
}

// call sends req and waits up to limit for the response. It returns
// errGone when the worker had exited before the request could be sent,
// errNoAnswer when the time ran out, another error when the worker ended
// without answering, ctx.Err() when ctx was cancelled.
func (w *worker) call(ctx context.Context, req workerRequest, limit time.Duration) (workerResponse, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return workerResponse{}, fmt.Errorf("encoding a request: %w", err)
	}
	select {
	case <-w.exited:
		return workerResponse{}, errGone
	default:
	}
	if _, err := w.in.Write(append(b, '\n')); err != nil {
		return workerResponse{}, fmt.Errorf("%w: %v", errGone, err)
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case resp, ok := <-w.resp:
		if !ok {
			return workerResponse{}, errors.New("the worker exited")
		}
		return resp, nil
	case <-t.C:
		return workerResponse{}, errNoAnswer
	case <-ctx.Done():
		return workerResponse{}, ctx.Err()
	}
}

// kill ends the worker's whole process group at once and waits for it.
func (w *worker) kill() {
	w.killed = true
	if err := syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		w.cmd.Process.Kill()
	}
	<-w.exited
	w.in.Close()
	w.drain()
}

// stop closes the worker's stdin, which makes it release its device and
// exit, and kills it if it has not done so within wait, or at once when
// ctx ends first: true when it had to be killed.
func (w *worker) stop(ctx context.Context, wait time.Duration) bool {
	w.in.Close()
	select {
	case <-w.exited:
		w.drain()
		return false
	case <-time.After(wait):
	case <-ctx.Done():
	}
	w.kill()
	return true
}

// drain waits briefly for the rest of stderr, which may still be in the
// pipe when the process is gone (or held open by a grandchild).
func (w *worker) drain() {
	select {
	case <-w.errEOF:
	case <-time.After(time.Second):
	}
}

// death waits for a worker that stopped answering to exit (killing it
// after a moment) and classifies how it ended.
func (w *worker) death(mark int64) (results.Status, string) {
	select {
	case <-w.exited:
		w.in.Close()
		w.drain()
	case <-time.After(5 * time.Second):
		// Its stdout closed but the process lingers: a crash in
		// progress (a core dump) or a closed stdout. Either way it is
		// of no use any more.
		w.kill()
	}
	return classifyExit(w.cmd.ProcessState, w.killed, w.stderr.since(mark))
}

// classifyExit names the status of a point whose worker died while
// running it. A SIGKILL the pool did not send comes, in practice, from
// the kernel's OOM killer; a Go runtime or driver message about memory
// says the same. Anything else (a segfault in the driver, an abort, a
// panic) is a fault of the point.
func classifyExit(st *os.ProcessState, killedByUs bool, stderr string) (results.Status, string) {
	why := "no exit status"
	status := results.StatusFault
	if st != nil {
		why = st.String()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL && !killedByUs {
			status = results.StatusOOM
			why += ", not sent by ktune: most likely the kernel's OOM killer"
		}
	}
	if strings.Contains(strings.ToLower(stderr), "out of memory") {
		status = results.StatusOOM
	}
	return status, why
}

// stderrNote is the worker's stderr written since mark, for an error text.
func (w *worker) stderrNote(mark int64) string {
	s := strings.TrimSpace(w.stderr.since(mark))
	if s == "" {
		return ""
	}
	return "; its stderr ends: " + s
}

// A tailBuffer keeps the last bytes written to it.
type tailBuffer struct {
	mu    sync.Mutex
	buf   []byte
	max   int
	total int64 // bytes ever written
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(b))
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

// written returns a mark for since.
func (t *tailBuffer) written() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}

// since returns what was written after mark, as far as it is still kept.
func (t *tailBuffer) since(mark int64) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := int(min(t.total-mark, int64(len(t.buf))))
	if n <= 0 {
		return ""
	}
	return string(t.buf[len(t.buf)-n:])
}

func (t *tailBuffer) String() string { return t.since(0) }

var _ Concurrent = (*Pool)(nil)
