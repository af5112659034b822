package results

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// LockName is the lock file a sweep holds inside its results directory.
const LockName = ".lock"

// A Holder describes the process holding a directory lock. It is written
// into the lock file so that a refused process can name who is in its way.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Start   time.Time `json:"start"`
	Command string    `json:"command"`
}

func (h Holder) String() string {
	if h.PID == 0 {
		return "another process (it has not written its details yet)"
	}
	s := fmt.Sprintf("pid %d on %s since %s", h.PID, h.Host, h.Start.Format(time.DateTime))
	if h.Command != "" {
		s += fmt.Sprintf(" (%s)", h.Command)
	}
	return s
}

// ThisProcess returns the Holder describing the calling process, started
// at start.
func ThisProcess(start time.Time) Holder {
	host, _ := os.Hostname()
	return Holder{PID: os.Getpid(), Host: host, Start: start, Command: strings.Join(os.Args, " ")}
}

// LockOptions configures LockDir.
type LockOptions struct {
	// Holder is written into the lock file once the lock is taken.
	Holder Holder
	// Wait makes LockDir wait for the holder to finish instead of
	// refusing; it still gives up when ctx is done.
	Wait bool
	// OnWait, if set, is called once when LockDir starts waiting, with the
	// current holder (to tell the user why nothing happens).
	OnWait func(Holder)
	// Poll is the retry interval while waiting; 0 means 200ms.
	Poll time.Duration
}

// A LockedError reports a results directory held by another process.
type LockedError struct {
	Dir    string
	Holder Holder
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("results directory %s is in use by %s; wait for it to finish (--wait), or use another directory", e.Dir, e.Holder)
}

// A Lock is an exclusive hold on a results directory: one sweep appends to
// a directory's results file at a time.
type Lock struct {
	f    *os.File
	path string
}

// LockDir takes the lock of dir (creating dir), or returns a *LockedError
// naming the holder. The lock is an flock(2) on dir/.lock: the kernel
// drops it when the holding process exits, however it exits, so a lock
// left by a killed sweep is never stale.
func LockDir(ctx context.Context, dir string, opts LockOptions) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating results directory: %w", err)
	}
	path := filepath.Join(dir, LockName)
	// No O_TRUNC: until the lock is ours, the file holds the holder's
	// details, which a refused process reads back.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	poll := opts.Poll
	if poll <= 0 {
		poll = 200 * time.Millisecond
	}
	waited := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		if !opts.Wait {
			h := readHolder(f)
			f.Close()
			return nil, &LockedError{Dir: dir, Holder: h}
		}
		if !waited && opts.OnWait != nil {
			opts.OnWait(readHolder(f))
		}
		waited = true
		// Polling a non-blocking flock rather than blocking in the kernel
		// keeps the wait cancellable by ctx (Ctrl-C).
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the lock of %s: %w", dir, ctx.Err())
		case <-time.After(poll):
		}
	}
	l := &Lock{f: f, path: path}
	if err := l.writeHolder(opts.Holder); err != nil {
		l.Unlock()
		return nil, err
	}
	return l, nil
}

func readHolder(f *os.File) Holder {
	var h Holder
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return h
	}
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil || len(b) == 0 {
		return h
	}
	json.Unmarshal(b, &h) // a half-written file reads as "no details yet"
	return h
}

func (l *Lock) writeHolder(h Holder) error {
	b, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("encoding lock holder: %w", err)
	}
	b = append(b, '\n')
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("writing lock file %s: %w", l.path, err)
	}
	if _, err := l.f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("writing lock file %s: %w", l.path, err)
	}
	return nil
}

// Unlock releases the lock. The file stays: removing it would let a
// process that opened it just before wait on an orphaned inode while a
// third creates a fresh file and locks that, two holders at once. It is
// emptied so that its stale details mislead no one.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	l.f.Truncate(0)
	err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	cerr := l.f.Close()
	l.f = nil
	if err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("releasing %s: %w", l.path, err)
	}
	return nil
}
