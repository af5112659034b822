package gate

import (
	"context"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// f32s encodes float32s as an out buffer.
func f32s(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// replaySession replays a graph whose launches give replayed, beside
// fresh launches that give fresh, against an oracle that says ref.
type replaySession struct {
	fakeSession
	replayed, fresh []byte
	ref             []float64
	captured        int
}

func (s *replaySession) UploadSet(oracle.InputSet, int, []int) (*oracle.Inputs, error) {
	return &oracle.Inputs{}, nil
}

func (s *replaySession) References(_ *oracle.Inputs, launches [][]int) ([]oracle.Output, error) {
	out := make([]oracle.Output, len(launches))
	for i := range out {
		out[i].Out = s.ref
	}
	return out, nil
}

func (s *replaySession) Bounds() oracle.Bounds {
	return oracle.Bounds{MaxAbs: 1e-3, MaxRel: 1e-3, NMSE: 1e-6}
}

func (s *replaySession) Launch(Kernel, int, []int) (Outputs, error) {
	return Outputs{Out: s.fresh}, nil
}

func (s *replaySession) Capture(int, []int) (Graph, error) {
	s.captured++
	return replayGraph{s}, nil
}

type replayGraph struct{ s *replaySession }

func (g replayGraph) Replay(int, []int) (Outputs, error) { return Outputs{Out: g.s.replayed}, nil }
func (replayGraph) Close()                               {}

// TestReplayGate: a replay passes only when it equals a fresh launch byte
// for byte and, where the inputs cover the length, the oracle: equal bytes
// that are both wrong fail. A grid that reads nkv fails outright, unless
// the engine never captures the kernel, which is then not replayed.
func TestReplayGate(t *testing.T) {
	right, wrong := f32s(1, 2), f32s(1, 2.5)
	for _, c := range []struct {
		name            string
		replayed, fresh []byte
		replayNKV       []int
		grid, never     bool
		want            []bool
		detail          string
	}{
		{"equal and right", right, right, []int{9}, false, false, []bool{true}, ""},
		{"replay differs from a fresh launch", wrong, right, []int{9}, false, false, []bool{false}, "replayed at 9"},
		{"equal and both wrong", wrong, wrong, []int{9}, false, false, []bool{false}, "against the oracle"},
		{"past the inputs: bytes only", wrong, wrong, []int{60}, false, false, []bool{true}, ""},
		{"grid reads nkv", right, right, []int{9}, true, false, []bool{false, true}, "reads nkv"},
		{"never captured", wrong, right, []int{9}, true, true, nil, ""},
		{"no replay length fits", wrong, right, []int{0, 65}, false, false, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := testPoint(1, 64)
			p.ReplayNKV, p.CaptureNKV, p.NeverCaptured = c.replayNKV, 1, c.never
			if c.grid {
				p.Geometry = &plan.Geometry{Grid: [3]string{"nkv", "1", "1"}}
			}
			s := &replaySession{fakeSession: fakeSession{p: p}, replayed: c.replayed, fresh: c.fresh, ref: []float64{1, 2}}
			log := &Log{}
			if err := replay.Run(context.Background(), s, log); err != nil {
				t.Fatal(err)
			}
			var got []bool
			for _, g := range log.Gates {
				got = append(got, g.Pass)
				if g.Kind != results.GateReplay {
					t.Errorf("kind %s", g.Kind)
				}
			}
			if len(got) != len(c.want) {
				t.Fatalf("verdicts %+v, want passes %v", log.Gates, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("verdict %d: %+v, want pass %v", i, log.Gates[i], c.want[i])
				}
			}
			if c.detail != "" && !strings.Contains(log.Gates[0].Detail, c.detail) {
				t.Errorf("detail %q, want it to say %q", log.Gates[0].Detail, c.detail)
			}
			if c.never && s.captured != 0 {
				t.Error("a kernel never captured was captured")
			}
		})
	}
}
