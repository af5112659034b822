package sweep

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/sanitizer"
	"github.com/ktune/ktune/internal/stats"
	"github.com/ktune/ktune/plan"
)

// A sanTask is one (tool, first point) pair of a sanitize, and what its
// tries showed.
type sanTask struct {
	tool  sanitizer.Tool
	p     *plan.Point
	g     results.Gate // the verdict, once done
	done  bool
	tries int
	why   string // the last try's reason, while undecided
	// undecided: no try decided, and no more will be made.
	undecided bool
}

// A sanQueue hands a sanitize's tasks to its workers and settles what
// each run showed, under one lock. It holds each task not yet ended at
// most once, so a task put back never blocks, and closes when every task
// has ended, decided or not.
type sanQueue struct {
	mu      sync.Mutex
	tasks   []*sanTask // every task, in order
	todo    chan *sanTask
	pending int           // tasks not ended
	workers int           // workers still taking tasks
	done    int           // tasks with a verdict, kept ones included
	stopped int           // runs cut short by the context
	lost    time.Duration // the time they had had
	first   error
	cancel  context.CancelFunc
	kept    *kept
	log     io.Writer
	// took is how long this sanitize's decided runs took, per tool: what
	// the time left is guessed from.
	took map[sanitizer.Tool][]time.Duration
}

func newSanQueue(tasks []*sanTask, workers int, kept *kept, log io.Writer, cancel context.CancelFunc) *sanQueue {
	q := &sanQueue{tasks: tasks, todo: make(chan *sanTask, len(tasks)), workers: workers, kept: kept, log: log, cancel: cancel,
		took: map[sanitizer.Tool][]time.Duration{}}
	for _, t := range tasks {
		if t.done {
			q.done++
			continue
		}
		q.todo <- t
		q.pending++
	}
	if q.pending == 0 {
		close(q.todo)
	}
	return q
}

// next is the next task for a worker, or nil when none is left or ctx is
// done.
func (q *sanQueue) next(ctx context.Context) *sanTask {
	select {
	case t, ok := <-q.todo:
		if !ok || ctx.Err() != nil {
			return nil
		}
		return t
	case <-ctx.Done():
		return nil
	}
}

// end marks a task ended, decided or not; under mu.
func (q *sanQueue) end() {
	if q.pending--; q.pending == 0 {
		close(q.todo)
	}
}

// settle takes what one run of t showed (sanitizePoint's o and err,
// after elapsed) and says whether its worker goes on: one whose run
// found the device crowded leaves, so that fewer run at once.
func (q *sanQueue) settle(ctx context.Context, t *sanTask, o sanRun, err error, elapsed time.Duration) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	took := elapsed.Seconds()
	switch {
	case err != nil && ctx.Err() != nil:
		// Stopped (a time limit, Ctrl-C, another run's error): the time
		// it had is lost, and says how long a call must be for the run
		// to finish.
		q.stopped++
		q.lost += elapsed
		fmt.Fprintf(q.log, "sanitize %s: %s: stopped after %.0f s, not kept (it runs again next time)\n",
			t.p.Config.Variant, t.tool, took)
		q.fail(err)
	case err != nil:
		q.fail(err)
		q.cancel()
	case !o.decided:
		t.tries++
		t.why = o.why
		if t.tries < o.tries {
			fmt.Fprintf(q.log, "sanitize %s: %s: undecided, tried again later (try %d of %d): %s (%.0f s%s)\n",
				t.p.Config.Variant, t.tool, t.tries, o.tries, o.why, took, o.split)
			q.todo <- t
			if o.crowded && q.workers > 1 {
				q.workers--
				fmt.Fprintf(q.log, "sanitize: the device is crowded (its memory, or the sanitizer failing): %d sanitized workers at a time from now on\n", q.workers)
				return false
			}
			return true
		}
		t.undecided = true
		fmt.Fprintf(q.log, "sanitize %s: %s: undecided after %s, no verdict: %s (%.0f s%s)\n",
			t.p.Config.Variant, t.tool, triesText(t.tries), o.why, took, o.split)
		q.end()
	default:
		t.g, t.done = o.g, true
		q.done++
		q.end()
		q.took[t.tool] = append(q.took[t.tool], elapsed)
		left := ""
		// Under half a minute left, the next lines come soon enough.
		if d, ok := timeLeft(q.tasks, q.took, q.workers); ok && d >= 30*time.Second {
			left = "; " + leftText(d)
		}
		fmt.Fprintf(q.log, "sanitize %s: %s: %s (%.0f s; %d of %d runs done%s%s)\n",
			t.p.Config.Variant, t.tool, o.g.Detail, took, q.done, len(q.tasks), left, o.split)
		// A finding without a whole report (the worker died, a time
		// limit) is not kept: the next sanitize runs it again rather
		// than inherit a verdict nobody read.
		if !o.keep {
			break
		}
		if err := q.kept.put(t.tool, t.p.Hash, keptKernel(t.p), o.g, o.gated); err != nil {
			q.fail(err)
			q.cancel()
		}
	}
	return true
}

// fail keeps the first error; under mu.
func (q *sanQueue) fail(err error) {
	if q.first == nil {
		q.first = err
	}
}

// finish, once every worker has left, says what was lost and what stayed
// undecided, and returns the verdicts in task order.
func (q *sanQueue) finish(ctx context.Context) (Verdicts, error) {
	v := Verdicts{Gates: map[string][]results.Gate{}, Undecided: map[string][]string{}}
	if q.stopped > 0 {
		fmt.Fprintf(q.log, "sanitize stopped: %d of %d runs done, %d in flight lost (%.0f s of worker time)\n",
			q.done, len(q.tasks), q.stopped, q.lost.Seconds())
	}
	undecided := 0
	for _, t := range q.tasks {
		key := groupKey(t.p)
		switch {
		case t.done:
			v.Gates[key] = append(v.Gates[key], t.g)
		case t.undecided:
			undecided++
			v.Undecided[key] = append(v.Undecided[key], t.why)
		}
	}
	if undecided > 0 {
		fmt.Fprintf(q.log, "sanitize: %d of %d runs undecided (up to %d tries each): their kernels get no sanitizer verdict and are not measured\n",
			undecided, len(q.tasks), maxTries)
	}
	if q.first != nil {
		return v, q.first
	}
	return v, ctx.Err()
}

// triesText is "1 try" or "N tries".
func triesText(n int) string {
	if n == 1 {
		return "1 try"
	}
	return fmt.Sprintf("%d tries", n)
}

// timeLeft guesses how long the tasks not ended will take: each at the
// median of its tool's decided runs (of every tool's, for a tool none of
// whose runs has ended), over the workers. The runs in flight count
// whole, and a tool's first runs say little of its last: a guess to plan
// by, not a bound. False before any run has been decided.
func timeLeft(tasks []*sanTask, took map[sanitizer.Tool][]time.Duration, workers int) (time.Duration, bool) {
	var all []time.Duration
	medians := map[sanitizer.Tool]time.Duration{}
	for tool, ds := range took {
		all = append(all, ds...)
		medians[tool] = median(ds)
	}
	if len(all) == 0 || workers < 1 {
		return 0, false
	}
	overall := median(all)
	var sum time.Duration
	for _, t := range tasks {
		if t.done || t.undecided {
			continue
		}
		m, ok := medians[t.tool]
		if !ok {
			m = overall
		}
		sum += m
	}
	return sum / time.Duration(workers), true
}

// median is stats.Quantile's median of ds.
func median(ds []time.Duration) time.Duration {
	x := make([]float64, len(ds))
	for i, d := range ds {
		x[i] = float64(d)
	}
	slices.Sort(x)
	return time.Duration(stats.Quantile(x, 0.5))
}

// leftText says a time left: seconds under two minutes, then minutes,
// then hours and minutes.
func leftText(d time.Duration) string {
	switch {
	case d < 2*time.Minute:
		return fmt.Sprintf("about %.0f s left", d.Seconds())
	case d < 2*time.Hour:
		return fmt.Sprintf("about %.0f min left", d.Minutes())
	}
	return fmt.Sprintf("about %d h %02d min left", int(d.Hours()), int(d.Minutes())%60)
}
