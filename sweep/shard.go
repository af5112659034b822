package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// A Shard is one of Count deterministic parts of a plan, for spreading a
// sweep over machines (a Slurm job array, a Kubernetes indexed Job): every
// machine builds the same plan and runs only its part.
//
// Points are dealt by gate group, not one by one: the points that share a
// GateKey (one compiled kernel at one shape, differing only in nkv) go to
// the same shard, so each kernel is compiled and gated on one machine
// only, as in an unsharded sweep. Groups are numbered in plan order and
// group g goes to shard g mod Count; since every group holds the same nkv
// values, each shard gets the same mix of short and long contexts.
type Shard struct {
	Index int // 0-based
	Count int // ≥ 1
}

// ParseShard parses "i/n" with 0 ≤ i < n.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("shard %q: want INDEX/COUNT, e.g. 0/4 (indices count from 0)", s)
	}
	if n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: want 0 ≤ INDEX < COUNT (indices count from 0, as SLURM_ARRAY_TASK_ID and JOB_COMPLETION_INDEX do)", s)
	}
	return Shard{Index: i, Count: n}, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Filter returns the selector of s's points among all, the whole plan
// (before any --only, so that a filter and a shard compose the same way
// on every machine).
func (s Shard) Filter(all []*plan.Point) func(*plan.Point) bool {
	group := map[string]int{}
	for _, p := range all {
		if _, ok := group[p.GateKey]; !ok {
			group[p.GateKey] = len(group)
		}
	}
	return func(p *plan.Point) bool {
		g, ok := group[p.GateKey]
		return ok && g%s.Count == s.Index
	}
}

// PlanHash identifies a whole plan: the first 16 hex digits of a SHA-256
// over its point hashes in order. Shards of one sweep share it; a spec
// edited between two shards' runs, other kernel sources, another
// architecture or other overrides give another.
func PlanHash(points []*plan.Point) string {
	h := sha256.New()
	for _, p := range points {
		h.Write([]byte(p.Hash))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// ManifestName is the file in a sharded sweep directory that says which
// part of which plan the directory holds.
const ManifestName = "shard.json"

// A Manifest describes the part of a plan a sweep directory holds. `ktune
// sweep --shard` writes it; `ktune merge` checks that the directories it
// joins are parts of one plan and says which parts are missing.
type Manifest struct {
	Spec   string `json:"spec"`   // the spec's name (Config.Spec of the records)
	Plan   string `json:"plan"`   // PlanHash of the whole plan
	Points int    `json:"points"` // points in the whole plan
	Count  int    `json:"count"`  // the plan is dealt into this many shards
	Shards []int  `json:"shards"` // the shards this directory holds, ascending
	// Selected is the number of points this directory's sweep set out to
	// record (its shards, narrowed by --only): merge compares it with the
	// records found, so a task that stopped early is reported, not merged
	// as if complete. 0 in manifests written before it existed: unchecked.
	Selected int `json:"selected,omitempty"`
}

// WriteManifest writes m to dir/shard.json, replacing it whole (a crash
// leaves the old one or the new one, never half of either).
func WriteManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the shard manifest: %w", err)
	}
	f, err := os.CreateTemp(dir, ".shard-*.json")
	if err != nil {
		return fmt.Errorf("writing the shard manifest: %w", err)
	}
	_, werr := f.Write(append(b, '\n'))
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing the shard manifest: %w", err)
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, ManifestName)); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing the shard manifest: %w", err)
	}
	return nil
}

// ReadManifest reads dir/shard.json; a directory without one gives nil and
// no error.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the shard manifest: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &m, nil
}

// CheckManifest compares the manifest a sweep directory already holds, if
// any, with the one a sharded run is about to write: a directory holds one
// shard of one deal, and two shards written into one directory would look
// like one to merge.
func CheckManifest(dir string, m *Manifest) error {
	old, err := ReadManifest(dir)
	if err != nil || old == nil {
		return err
	}
	if old.Count != m.Count || !slices.Equal(old.Shards, m.Shards) || old.Spec != m.Spec {
		return fmt.Errorf("%s holds %s, not %s: give each shard a directory of its own",
			dir, old.describe(), m.describe())
	}
	return nil
}

func (m *Manifest) describe() string {
	parts := make([]string, len(m.Shards))
	for i, s := range m.Shards {
		parts[i] = strconv.Itoa(s)
	}
	return fmt.Sprintf("shard %s/%d of spec %q", strings.Join(parts, ","), m.Count, m.Spec)
}

// A Merged is the union of several sweep directories.
type Merged struct {
	// Records holds one record per hash: the inputs in the order given,
	// each in its file order (the last record of a hash within one file
	// wins, as everywhere), so the same inputs always give the same file.
	Records []results.Record
	// Manifest describes the union when the inputs had manifests.
	Manifest *Manifest
	// Identical counts records found in more than one input with the same
	// content (the same directory given twice, a copied file); one is kept.
	Identical int
	// Superseded counts records replaced by a later line of the same hash
	// in the same input (`ktune sweep --force` re-measured the point): the
	// rule of every reader of the format, said out loud because merge is
	// the step after which inputs get deleted.
	Superseded int
	// Warnings lists missing shards.
	Warnings []string
}

// Merge joins sweep directories (or results files) into one set of
// records. It refuses records of different specs, directories whose
// manifests name different plans or the same shard, and a hash recorded
// with different contents in two inputs (a point measured twice: which
// measurement counts is for the user to say, by leaving one input out).
//
// It also refuses any line it cannot read as a record, a newer schema
// included: people delete the shards once merged, so a line merge cannot
// carry over must stop it, not become a warning and a smaller file.
func Merge(inputs []string) (*Merged, error) {
	if len(inputs) == 0 {
		return nil, errors.New("merge: no input directories")
	}
	out := &Merged{}
	type seen struct {
		from   string
		shards []int // the input's manifest's shards, nil without one
		body   []byte
		at     int // index in out.Records
	}
	byHash := map[string]seen{}
	var spec, specFrom string
	var conflicts []string // the first few, for the message
	nConflicts := 0
	var manifests []*Manifest
	var manifestFrom []string
	var copies []string // the first few, for the message
	nCopies := 0
	for _, in := range inputs {
		path := in
		var shards []int
		if st, err := os.Stat(in); err == nil && st.IsDir() {
			path = results.FilePath(in)
			m, err := ReadManifest(in)
			if err != nil {
				return nil, err
			}
			if m != nil {
				manifests = append(manifests, m)
				manifestFrom = append(manifestFrom, in)
				shards = m.Shards
			}
		}
		recs, warns, err := results.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if len(warns) > 0 {
			return nil, unreadableError(path, warns)
		}
		latest, superseded := results.Latest(recs)
		out.Superseded += superseded
		if len(manifestFrom) > 0 && manifestFrom[len(manifestFrom)-1] == in {
			if m := manifests[len(manifests)-1]; m.Selected > 0 && len(latest) < m.Selected {
				out.Warnings = append(out.Warnings, fmt.Sprintf("%s holds %d of the %d points of shard(s) %s: its task stopped early; "+
					"resubmit it with the same index (it resumes) and merge again", in, len(latest), m.Selected, shardList(m.Shards)))
			}
		}
		for _, r := range latest {
			if specFrom == "" {
				spec, specFrom = r.Config.Spec, path
			} else if r.Config.Spec != spec {
				return nil, fmt.Errorf("%s holds records of spec %q and %s of spec %q: merge joins the shards of one spec",
					specFrom, spec, path, r.Config.Spec)
			}
			r.Schema = results.SchemaVersion
			body, err := json.Marshal(r)
			if err != nil {
				return nil, fmt.Errorf("%s: record %s: %w", path, r.Hash, err)
			}
			if old, ok := byHash[r.Hash]; ok {
				if old.shards != nil && shards != nil && !slices.Equal(old.shards, shards) && string(old.body) == string(body) {
					// Shards deal disjoint points: one recorded alike in
					// two of them is a directory copied under another
					// shard's number, and the shard it stands for is
					// missing.
					nCopies++
					if len(copies) < 5 {
						copies = append(copies, fmt.Sprintf("point %s (%s, %s) is in %s (shard(s) %s) and %s (shard(s) %s)",
							r.Hash, r.Config.Variant, describeConfig(&r.Config), old.from, shardList(old.shards), path, shardList(shards)))
					}
					continue
				}
				if string(old.body) == string(body) {
					out.Identical++
					continue
				}
				nConflicts++
				if len(conflicts) < 5 {
					conflicts = append(conflicts, fmt.Sprintf("point %s (%s, %s) is recorded differently in %s (%s, %s) and %s (%s, %s)",
						r.Hash, r.Config.Variant, describeConfig(&r.Config),
						old.from, out.Records[old.at].Status, out.Records[old.at].Time.Format("2006-01-02 15:04:05"),
						path, r.Status, r.Time.Format("2006-01-02 15:04:05")))
				}
				continue
			}
			byHash[r.Hash] = seen{from: path, shards: shards, body: body, at: len(out.Records)}
			out.Records = append(out.Records, r)
		}
	}
	if n := nCopies; n > 0 {
		msg := strings.Join(copies, "\n  ")
		if n > len(copies) {
			msg += fmt.Sprintf("\n  and %d more", n-len(copies))
		}
		return nil, fmt.Errorf("merge: %d point(s) found in two different shards, which deal disjoint points: one directory is a copy of another under another shard number, and the shard it claims is not there:\n  %s", n, msg)
	}
	if n := nConflicts; n > 0 {
		msg := strings.Join(conflicts, "\n  ")
		if n > len(conflicts) {
			msg += fmt.Sprintf("\n  and %d more", n-len(conflicts))
		}
		return nil, fmt.Errorf("merge: %d point(s) measured in more than one input with different results; leave out the input that should not count:\n  %s", n, msg)
	}
	m, warns, err := mergeManifests(manifests, manifestFrom)
	if err != nil {
		return nil, err
	}
	out.Manifest = m
	out.Warnings = append(out.Warnings, warns...)
	return out, nil
}

// unreadableError refuses an input with lines that are not records this
// build can read, naming the first few.
func unreadableError(path string, warns []error) error {
	var lines []string
	for i, w := range warns {
		if i == 5 {
			lines = append(lines, fmt.Sprintf("and %d more", len(warns)-i))
			break
		}
		lines = append(lines, w.Error())
	}
	return fmt.Errorf("merge: %s has %d line(s) this build cannot read as records; merging would drop them, so nothing was written "+
		"(a newer schema needs a newer ktune; a damaged line needs repair or removal by hand):\n  %s",
		path, len(warns), strings.Join(lines, "\n  "))
}

// mergeManifests checks that the inputs' manifests are parts of one plan
// and returns the manifest of their union.
func mergeManifests(ms []*Manifest, from []string) (*Manifest, []string, error) {
	if len(ms) == 0 {
		return nil, nil, nil
	}
	u := &Manifest{Spec: ms[0].Spec, Plan: ms[0].Plan, Points: ms[0].Points, Count: ms[0].Count}
	owner := map[int]string{}
	for i, m := range ms {
		if m.Plan != u.Plan || m.Count != u.Count || m.Spec != u.Spec {
			return nil, nil, fmt.Errorf("%s and %s are parts of different sweeps (%s of plan %s, %s of plan %s): "+
				"the spec, its kernels or the flags changed between them; re-run the older shard with the current spec into a new directory",
				from[0], from[i], ms[0].describe(), ms[0].Plan, m.describe(), m.Plan)
		}
		for _, s := range m.Shards {
			if prev, ok := owner[s]; ok {
				return nil, nil, fmt.Errorf("%s and %s both hold shard %d/%d: merge each shard once", prev, from[i], s, u.Count)
			}
			owner[s] = from[i]
			u.Shards = append(u.Shards, s)
		}
	}
	slices.Sort(u.Shards)
	var missing []string
	for s := range u.Count {
		if _, ok := owner[s]; !ok {
			missing = append(missing, strconv.Itoa(s))
		}
	}
	var warns []string
	if len(missing) > 0 {
		warns = append(warns, fmt.Sprintf("shard(s) %s of %d are missing: the merged results cover part of the plan",
			strings.Join(missing, ", "), u.Count))
	}
	return u, warns, nil
}

func shardList(ss []int) string {
	parts := make([]string, len(ss))
	for i, x := range ss {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ",")
}

// describeConfig names a point for a message: its shape, defines and nkv.
func describeConfig(c *results.Config) string {
	parts := []string{c.Shape.Name}
	for _, d := range c.Defines {
		parts = append(parts, d.Name+"="+d.Value)
	}
	parts = append(parts, "nkv="+strconv.Itoa(c.NKV))
	return strings.Join(parts, " ")
}
