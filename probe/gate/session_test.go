package gate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// A fakeSession is the part of a Session the gates under test use; a
// call to any other method panics (the embedded nil interface), so a
// test also says which of the session a gate reaches.
type fakeSession struct {
	Session
	p        *plan.Point
	launches int
	// out is what every launch gives; fresh and stale, when set, what a
	// fresh module's launch and a launch over stale rows give.
	out, fresh, stale *Outputs
	boundsNames       []string
	boundsRan         bool
	boundsErr         error
	afterLaunch       int
	findings          Findings
	inputs, all       []string
}

type fakeKernel struct {
	p     *plan.Point
	fresh bool
}

func (k fakeKernel) Point() *plan.Point { return k.p }

func (s *fakeSession) Point() *plan.Point            { return s.p }
func (s *fakeSession) Logf(string, ...any)           {}
func (s *fakeSession) Kernel() Kernel                { return fakeKernel{p: s.p} }
func (s *fakeSession) Recycle(...[]byte)             {}
func (s *fakeSession) Findings() *Findings           { return &s.findings }
func (s *fakeSession) Buffers() ([]string, []string) { return s.inputs, s.all }
func (s *fakeSession) AfterLaunch(int) error         { s.afterLaunch++; return nil }

func (s *fakeSession) BoundsLaunch() ([]string, bool, error) {
	return s.boundsNames, s.boundsRan, s.boundsErr
}

func (s *fakeSession) Fresh(int) (Kernel, func(), error) {
	return fakeKernel{p: s.p, fresh: true}, func() {}, nil
}

func (s *fakeSession) Launch(k Kernel, _ int, _ []int) (Outputs, error) {
	s.launches++
	if k.(fakeKernel).fresh && s.fresh != nil {
		return *s.fresh, nil
	}
	return *s.out, nil
}

func (s *fakeSession) StaleLaunch(int, []int) (Outputs, error) {
	s.launches++
	return *s.stale, nil
}

func testPoint(batch, capacity int) *plan.Point {
	p := &plan.Point{Seed: 7, GateNKV: []int{5, 9}}
	p.Config.Shape = abi.Shape{Batch: batch, Capacity: capacity, Heads: 1, KVHeads: 1, HeadDim: 4}
	return p
}

func outs(b byte) *Outputs { return &Outputs{Partial: []byte{b}, Out: []byte{b, b}} }

// TestBoundsGate: a launch that could not be made records no verdict (a
// missing check never passes), a fault is a failing verdict and the
// point's error, and only a launch that ran clean passes, followed by the
// checks after every launch.
func TestBoundsGate(t *testing.T) {
	fault := fmt.Errorf("launching: %w", cuda.ErrIllegalAddress)
	for _, c := range []struct {
		name    string
		ran     bool
		err     error
		wantErr bool
		want    []bool // the verdicts' Pass
		after   int
	}{
		{"no room for the copies", false, nil, false, nil, 0},
		{"stopped before the launch", false, errors.New("uploading positions"), true, nil, 0},
		{"fault", true, fault, true, []bool{false}, 0},
		{"launch error, not a fault", true, errors.New("invalid value"), true, nil, 0},
		{"clean", true, nil, false, []bool{true}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &fakeSession{p: testPoint(2, 64), boundsNames: []string{"k", "v"}, boundsRan: c.ran, boundsErr: c.err}
			log := &Log{}
			err := bounds.Run(context.Background(), s, log)
			if (err != nil) != c.wantErr {
				t.Fatalf("error %v, want one: %v", err, c.wantErr)
			}
			var got []bool
			for _, g := range log.Gates {
				got = append(got, g.Pass)
				if g.Kind != results.GateBounds || g.NKV != 64 || g.Buffer != "k,v" {
					t.Errorf("verdict %+v", g)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) || s.afterLaunch != c.after {
				t.Errorf("verdicts %v (want %v), checks after the launch %d (want %d)", got, c.want, s.afterLaunch, c.after)
			}
		})
	}
}

// TestStaleGate: a batch at the capacity has no rows past its lengths and
// is not launched; otherwise any changed bit fails.
func TestStaleGate(t *testing.T) {
	s := &fakeSession{p: testPoint(2, 64), stale: outs(1)}
	log := &Log{}
	if err := stale(s, 64, []int{64, 64}, *outs(1), log); err != nil || s.launches != 0 || len(log.Gates) != 0 {
		t.Fatalf("at the capacity: err %v, %d launches, %d verdicts", err, s.launches, len(log.Gates))
	}
	if err := stale(s, 9, []int{9, 7}, *outs(1), log); err != nil || len(log.Gates) != 1 || !log.Gates[0].Pass {
		t.Fatalf("same bytes: err %v, %+v", err, log.Gates)
	}
	s.stale = &Outputs{Partial: []byte{1}, Out: []byte{1, 2}}
	if err := stale(s, 9, []int{9, 7}, *outs(1), log); err != nil || len(log.Gates) != 2 || log.Gates[1].Pass || log.Gates[1].Buffer != "out" {
		t.Fatalf("a changed out byte: err %v, %+v", err, log.Gates)
	}
}

// TestFreshGate: the log's Reference is the gated module's launch at the
// shortest gate length, and a fresh module that differs fails.
func TestFreshGate(t *testing.T) {
	for _, differs := range []bool{false, true} {
		s := &fakeSession{p: testPoint(1, 64), out: outs(3), fresh: outs(3)}
		if differs {
			s.fresh = outs(4)
		}
		s.Session = uploads{}
		log := &Log{}
		if err := fresh.Run(context.Background(), s, log); err != nil {
			t.Fatal(err)
		}
		if log.Reference == nil || log.Reference.NKV != 5 || string(log.Reference.Out) != string(outs(3).Out) {
			t.Errorf("reference %+v, want the gated module's launch at nkv 5", log.Reference)
		}
		if len(log.Gates) != 1 || log.Gates[0].Pass == differs || log.Gates[0].Kind != results.GateFresh {
			t.Errorf("differs %v: %+v", differs, log.Gates)
		}
	}
}

// uploads is a Session whose only method the test reaches is UploadSet.
type uploads struct{ Session }

func (uploads) UploadSet(oracle.InputSet, int, []int) (*oracle.Inputs, error) { return nil, nil }

// TestMemoryGate: each finding is a failing verdict; a pass names only the
// buffers no finding was on, and no pass is recorded when no launch was
// checked.
func TestMemoryGate(t *testing.T) {
	s := &fakeSession{p: testPoint(1, 64), inputs: []string{"q", "k"}, all: []string{"q", "k", "out"}}
	log := &Log{}
	if err := memory.Run(context.Background(), s, log); err != nil || len(log.Gates) != 0 {
		t.Fatalf("no launch checked: err %v, %+v", err, log.Gates)
	}
	s.findings.Checked()
	s.findings.Flag(results.Gate{Kind: results.GateReadOnly, Buffer: "k"})
	s.findings.Flag(results.Gate{Kind: results.GateReadOnly, Buffer: "k", Detail: "again"})
	if err := memory.Run(context.Background(), s, log); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range log.Gates {
		got = append(got, fmt.Sprintf("%s %v %s", g.Kind, g.Pass, g.Buffer))
	}
	want := "readonly false k|readonly true q|guard true q,k,out"
	if strings.Join(got, "|") != want {
		t.Errorf("verdicts %q, want %q", strings.Join(got, "|"), want)
	}
	if len(s.findings.AfterGates()) != 0 {
		t.Errorf("the memory gate reported the findings, yet %d are left for after the probes", len(s.findings.AfterGates()))
	}
	s.findings.Flag(results.Gate{Kind: results.GateGuard, Buffer: "out"})
	if len(s.findings.AfterGates()) != 1 {
		t.Errorf("a finding after the gates: %d left", len(s.findings.AfterGates()))
	}
}
