package results

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestLockRefusesNamingHolder(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 11, 30, 22, 41, 0, 0, time.UTC)
	first := Holder{PID: 4242, Host: "h200-a", Start: start, Command: "ktune sweep slice.yaml -o out"}
	l, err := LockDir(context.Background(), dir, LockOptions{Holder: first})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()

	// flock(2) locks belong to the open file description, so a second
	// open in this same process contends exactly like another process.
	_, err = LockDir(context.Background(), dir, LockOptions{Holder: Holder{PID: 1}})
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("second LockDir: %v, want a *LockedError", err)
	}
	if le.Holder != first {
		t.Errorf("holder %+v, want %+v", le.Holder, first)
	}
	want := "results directory " + dir + " is in use by pid 4242 on h200-a since 2026-11-30 22:41:00 (ktune sweep slice.yaml -o out)"
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %q\nwant prefix %q", err.Error(), want)
	}
}

func TestLockWaitGetsItAfterRelease(t *testing.T) {
	dir := t.TempDir()
	l, err := LockDir(context.Background(), dir, LockOptions{Holder: Holder{PID: 1, Host: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan Holder, 1)
	got := make(chan error, 1)
	go func() {
		l2, err := LockDir(context.Background(), dir, LockOptions{
			Holder: Holder{PID: 2, Host: "b"}, Wait: true, Poll: time.Millisecond,
			OnWait: func(h Holder) { waiting <- h },
		})
		if err == nil {
			err = l2.Unlock()
		}
		got <- err
	}()
	select {
	case h := <-waiting:
		if h.PID != 1 {
			t.Errorf("OnWait named pid %d, want 1", h.PID)
		}
	case err := <-got:
		t.Fatalf("the waiter returned (%v) while the lock was held", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter never started waiting")
	}
	select {
	case err := <-got:
		t.Fatalf("the waiter returned (%v) while the lock was held", err)
	case <-time.After(20 * time.Millisecond):
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not get the lock after its release")
	}
}

func TestLockWaitCancelled(t *testing.T) {
	dir := t.TempDir()
	l, err := LockDir(context.Background(), dir, LockOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = LockDir(ctx, dir, LockOptions{Wait: true, Poll: time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the context's error", err)
	}
}

func TestLockReleasedIsReusable(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 2; i++ {
		l, err := LockDir(context.Background(), dir, LockOptions{Holder: ThisProcess(time.Now())})
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if err := l.Unlock(); err != nil {
			t.Fatal(err)
		}
	}
}
