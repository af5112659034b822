// Package slurm holds no code: its test runs the job samples of this
// directory (the Slurm batch script, the Kubernetes Jobs' shell commands)
// against a stand-in ktune that records its arguments, and checks that
// every task sweeps its own shard into a directory that the merge step
// reads. experiments/slurm/test.sh runs sweep.sbatch under a real Slurm.
package slurm

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/ktune/ktune/sweep"
)

// job is the part of a batch/v1 Job the samples rely on.
type job struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Spec       struct {
		CompletionMode       string `yaml:"completionMode"`
		Completions          *int   `yaml:"completions"`
		Parallelism          *int   `yaml:"parallelism"`
		BackoffLimitPerIndex *int   `yaml:"backoffLimitPerIndex"`
		Template             struct {
			Spec struct {
				RestartPolicy string `yaml:"restartPolicy"`
				Containers    []struct {
					Command []string `yaml:"command"`
					Args    []string `yaml:"args"`
					Env     []struct {
						Name  string `yaml:"name"`
						Value string `yaml:"value"`
					} `yaml:"env"`
					VolumeMounts []struct {
						Name      string `yaml:"name"`
						MountPath string `yaml:"mountPath"`
					} `yaml:"volumeMounts"`
				} `yaml:"containers"`
				Volumes []struct {
					Name                  string `yaml:"name"`
					PersistentVolumeClaim struct {
						ClaimName string `yaml:"claimName"`
					} `yaml:"persistentVolumeClaim"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

func loadJob(t *testing.T, path string) *job {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var j job
	if err := yaml.Unmarshal(b, &j); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if j.APIVersion != "batch/v1" || j.Kind != "Job" || len(j.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("%s: want one batch/v1 Job with one container, got %s %s with %d", path, j.APIVersion, j.Kind,
			len(j.Spec.Template.Spec.Containers))
	}
	return &j
}

// stub puts a ktune on PATH that appends its arguments, one call a line,
// to the returned file.
func stub(t *testing.T) (dir, calls string) {
	t.Helper()
	for _, sh := range []string{"sh", "bash"} {
		if _, err := exec.LookPath(sh); err != nil {
			t.Skipf("no %s to run the samples' scripts", sh)
		}
	}
	dir = t.TempDir()
	calls = filepath.Join(dir, "calls")
	script := "#!/bin/sh\necho \"$*\" >> " + calls + "\n"
	if err := os.WriteFile(filepath.Join(dir, "ktune"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, calls
}

// runContainer runs the container's command as its pod would, with the
// Job's environment and extra, and returns the stub's calls.
func runContainer(t *testing.T, j *job, extra ...string) []string {
	t.Helper()
	bin, calls := stub(t)
	c := j.Spec.Template.Spec.Containers[0]
	argv := append(slices.Clone(c.Command), c.Args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}
	for _, e := range c.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	cmd.Env = append(cmd.Env, extra...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%q: %v\n%s", argv, err, out)
	}
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// mountOf returns the claim mounted at the mount point holding path.
func mountOf(j *job, path string) (claim, mount string) {
	spec := j.Spec.Template.Spec
	for _, m := range spec.Containers[0].VolumeMounts {
		if path == m.MountPath || strings.HasPrefix(path, m.MountPath+"/") {
			for _, v := range spec.Volumes {
				if v.Name == m.Name {
					return v.PersistentVolumeClaim.ClaimName, m.MountPath
				}
			}
		}
	}
	return "", ""
}

// flagValue returns the value after flag in a call's words.
func flagValue(words []string, flag string) string {
	if i := slices.Index(words, flag); i >= 0 && i+1 < len(words) {
		return words[i+1]
	}
	return ""
}

func TestKubernetesIndexedJob(t *testing.T) {
	sweepJob, mergeJob := loadJob(t, "sweep-job.yaml"), loadJob(t, "merge-job.yaml")
	s := sweepJob.Spec
	if s.CompletionMode != "Indexed" || s.Completions == nil || s.Parallelism == nil {
		t.Fatalf("want completionMode Indexed with completions and parallelism, got %q", s.CompletionMode)
	}
	n := *s.Completions
	if *s.Parallelism < 1 || *s.Parallelism > n {
		t.Errorf("parallelism %d: want 1..completions (%d)", *s.Parallelism, n)
	}
	// backoffLimitPerIndex and podFailurePolicy both need restartPolicy Never.
	if s.BackoffLimitPerIndex == nil || s.Template.Spec.RestartPolicy != "Never" {
		t.Errorf("want backoffLimitPerIndex with restartPolicy Never (a retried index resumes its shard)")
	}

	// Every index sweeps shard i of n into a directory of its own on the
	// results volume, which the merge job mounts and globs.
	mergeCalls := runContainer(t, mergeJob)
	merge := strings.Fields(mergeCalls[len(mergeCalls)-1])
	if len(merge) < 4 || merge[0] != "merge" {
		t.Fatalf("the merge job runs %q, want ktune merge -o DIR SHARDS...", mergeCalls)
	}
	mergeOut, mergeIn := flagValue(merge, "-o"), merge[3:]
	seen := map[string]bool{}
	for i := range n {
		calls := runContainer(t, sweepJob, "JOB_COMPLETION_INDEX="+strconv.Itoa(i))
		words := strings.Fields(calls[len(calls)-1])
		if words[0] != "sweep" {
			t.Fatalf("index %d: the last call is %q, want ktune sweep", i, calls)
		}
		sh, err := sweep.ParseShard(flagValue(words, "--shard"))
		if err != nil || sh != (sweep.Shard{Index: i, Count: n}) {
			t.Errorf("index %d: --shard %q (%v), want %d/%d: SHARDS must equal completions", i, flagValue(words, "--shard"), err, i, n)
		}
		out := flagValue(words, "-o")
		if seen[out] {
			t.Errorf("index %d writes %s, as another index does", i, out)
		}
		seen[out] = true
		claim, mount := mountOf(sweepJob, out)
		mclaim, mmount := mountOf(mergeJob, out)
		if claim == "" || claim != mclaim || mount != mmount {
			t.Errorf("index %d writes %s on claim %q at %q; the merge job mounts %q at %q there", i, out, claim, mount, mclaim, mmount)
		}
		matched := false
		for _, g := range mergeIn {
			ok, _ := filepath.Match(g, out)
			matched = matched || ok
		}
		if !matched {
			t.Errorf("index %d writes %s, which the merge's inputs %q do not cover", i, out, mergeIn)
		}
	}
	if claim, _ := mountOf(mergeJob, mergeOut); claim == "" || seen[mergeOut] {
		t.Errorf("the merge writes %s: want a new directory on the results volume", mergeOut)
	}
}

// runSbatch runs sweep.sbatch as Slurm would run array task index.
func runSbatch(t *testing.T, index int, args ...string) ([]string, error) {
	t.Helper()
	bin, calls := stub(t)
	cmd := exec.Command("bash", append([]string{"sweep.sbatch"}, args...)...)
	cmd.Env = append(os.Environ(), "KTUNE="+filepath.Join(bin, "ktune"), "SLURM_ARRAY_TASK_ID="+strconv.Itoa(index),
		// A resubmitted index is an array of one task.
		"SLURM_ARRAY_TASK_COUNT=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, &exec.ExitError{ProcessState: cmd.ProcessState, Stderr: out}
	}
	b, _ := os.ReadFile(calls)
	return strings.Split(strings.TrimSpace(string(b)), "\n"), nil
}

func TestSbatchRunsItsShard(t *testing.T) {
	calls, err := runSbatch(t, 3, "experiments/slice.yaml", "8")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"doctor", "sweep experiments/slice.yaml -o out/shard-3 --shard 3/8 --devices all"}
	if !slices.Equal(calls, want) {
		t.Errorf("calls %q, want %q", calls, want)
	}
	// Sweep flags replace --devices all; a replay needs no doctor.
	calls, err = runSbatch(t, 0, "s.yaml", "4", "/scratch/o", "--backend", "replay", "--replay-from", "r.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"sweep s.yaml -o /scratch/o/shard-0 --shard 0/4 --backend replay --replay-from r.jsonl"}
	if !slices.Equal(calls, want) {
		t.Errorf("calls %q, want %q", calls, want)
	}
	for _, bad := range [][]string{{"s.yaml", "3"}, {"s.yaml"}, {"s.yaml", "x"}} {
		if _, err := runSbatch(t, 3, bad...); err == nil {
			t.Errorf("%q as task 3: ran, want a refusal", bad)
		}
	}
}
