package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/variants"
)

const plannedYAML = `name: pl
shapes: [{name: s, heads: 8, kv_heads: 2, head_dim: 64, kv_dtype: f16, batch: 3, capacity: 1024}]
axes: {nkv: [50], SPLITS: [4], CHUNK: [256]}
variants:
  - name: eng
    kernel: k.cu
    planned:
      o_indptr: {prefix: "cdiv(nkv, CHUNK)"}
      request_indices: {expand: "cdiv(nkv, CHUNK)", value: i, length: LENGTH}
      kv_tile_indices: {expand: "cdiv(nkv, CHUNK)", value: j, length: LENGTH, pad: PAD, type: TYPE}
    launches:
      - {entry: k, grid: [SPLITS], block: [32], args: [out, "planned:o_indptr", "planned:request_indices", "planned:kv_tile_indices"]}
`

func planPlanned(t *testing.T, length, pad string) (*Plan, error) {
	return planPlannedType(t, length, pad, "i32")
}

func planPlannedType(t *testing.T, length, pad, typ string) (*Plan, error) {
	return planPlannedSpec(t, plannedYAML, length, pad, typ)
}

// planPlannedSpec plans a spec of plannedYAML's form, its placeholders
// replaced.
func planPlannedSpec(t *testing.T, yaml, length, pad, typ string) (*Plan, error) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "k.cu"), []byte("// k\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "spec.yaml")
	text := strings.NewReplacer("LENGTH", length, "PAD", pad, "TYPE", typ).Replace(yaml)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path, variants.Builtins())
	if err != nil {
		return nil, err
	}
	return Build(s, "sm_90")
}

// TestPlannedPlan: a point carries its planned arrays with their entries
// (prefix: batch + 1; expand: its length); an expand array too short for
// every sequence at the capacity is the plan's error at the variant; the
// arrays' declarations are in the hash.
func TestPlannedPlan(t *testing.T) {
	p, err := planPlanned(t, `"batch * cdiv(capacity, CHUNK)"`, "0")
	if err != nil {
		t.Fatal(err)
	}
	pt := p.Points[0]
	if len(pt.PlannedBufs) != 3 || pt.PlannedBufs[0].Entries != 4 || pt.PlannedBufs[1].Entries != 12 || pt.PlannedBufs[2].Entries != 12 {
		t.Errorf("planned entries %+v, want o_indptr 4, the expands 12", pt.PlannedBufs)
	}
	if _, err := planPlanned(t, "11", "0"); err == nil || !strings.Contains(err.Error(), "spec.yaml:5:5: ") || !strings.Contains(err.Error(), "more than its 11 entries") {
		t.Errorf("an expand of 11 entries for 12: %v", err)
	}
	q, err := planPlanned(t, `"batch * cdiv(capacity, CHUNK)"`, "-1")
	if err != nil {
		t.Fatal(err)
	}
	if q.Points[0].Hash == pt.Hash {
		t.Error("the pad of a planned array is not in the hash")
	}
}

// TestPlannedEntryType: an array's entry type sets its entries' size (u8:
// one byte), is in the hash, and bounds its values at the plan: a bool
// array of tile indices (0..3 at the capacity) is refused at the
// variant, as is a type that does not exist, at its line.
func TestPlannedEntryType(t *testing.T) {
	p, err := planPlanned(t, `"batch * cdiv(capacity, CHUNK)"`, "0")
	if err != nil {
		t.Fatal(err)
	}
	u, err := planPlannedType(t, `"batch * cdiv(capacity, CHUNK)"`, "0", "u8")
	if err != nil {
		t.Fatal(err)
	}
	if b := u.Points[0].PlannedBufs[2]; b.Entries != 12 || b.EntryBytes() != 1 {
		t.Errorf("u8 kv_tile_indices %+v, want 12 one-byte entries", b)
	}
	if p.Points[0].PlannedBufs[2].EntryBytes() != 4 || u.Points[0].Hash == p.Points[0].Hash {
		t.Errorf("i32 %+v, hashes %s %s: the entry type is not in the entries' size or the hash", p.Points[0].PlannedBufs[2], p.Points[0].Hash, u.Points[0].Hash)
	}
	if _, err := planPlannedType(t, `"batch * cdiv(capacity, CHUNK)"`, "0", "bool"); err == nil || !strings.Contains(err.Error(), "does not fit a bool entry") {
		t.Errorf("bool tile indices: %v", err)
	}
	if _, err := planPlannedType(t, `"batch * cdiv(capacity, CHUNK)"`, "0", "int"); err == nil || !strings.Contains(err.Error(), "spec.yaml:10:") || !strings.Contains(err.Error(), "not an entry type") {
		t.Errorf("type int: %v", err)
	}
	if _, err := planPlannedType(t, `"batch * cdiv(capacity, CHUNK)"`, "300", "u8"); err == nil || !strings.Contains(err.Error(), "pad: 300 does not fit a u8 entry") {
		t.Errorf("u8 pad 300: %v", err)
	}
}

// TestPlannedReadsTheLongest: a planned array may size its work from the
// step's longest sequence (max_nkv), as FlashInfer's planner sizes its
// chunk: four chunks of the longest at the capacity fit an expand of
// batch * 4 entries, and one entry fewer is the plan's error.
func TestPlannedReadsTheLongest(t *testing.T) {
	four := `"cdiv(nkv, cdiv(max_nkv, 4))"`
	yaml := strings.NewReplacer(`{prefix: "cdiv(nkv, CHUNK)"}`, `{prefix: `+four+`}`,
		`{expand: "cdiv(nkv, CHUNK)", value: i, length: LENGTH}`, `{expand: `+four+`, value: i, length: LENGTH}`).Replace(plannedYAML)
	if yaml == plannedYAML {
		t.Fatal("the test's spec did not change")
	}
	build := func(length string) error {
		_, err := planPlannedSpec(t, yaml, length, "0", "i32")
		return err
	}
	if err := build(`"batch * 4"`); err != nil {
		t.Errorf("four chunks of the longest for each of 3 sequences in 12 entries: %v", err)
	}
	if err := build("11"); err == nil || !strings.Contains(err.Error(), "more than its 11 entries") {
		t.Errorf("11 entries for 12: %v", err)
	}
}
