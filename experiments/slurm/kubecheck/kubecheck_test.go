// Package kubecheck decodes the Kubernetes Jobs of experiments/slurm into
// the API's own Go types (k8s.io/api/batch/v1), refusing unknown fields
// and wrong types: a schema check that needs no cluster and no schema
// download. It is a module of its own so that ktune does not depend on
// the Kubernetes API. What an API server would check further (the
// combinations of fields it accepts, admission, quotas) is not checked.
//
//	make kube-check
package kubecheck

import (
	"os"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"
)

func decode(t *testing.T, path string) *batchv1.Job {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var j batchv1.Job
	if err := yaml.UnmarshalStrict(b, &j); err != nil {
		t.Fatalf("%s is not a valid batch/v1 Job: %v", path, err)
	}
	if j.APIVersion != "batch/v1" || j.Kind != "Job" {
		t.Fatalf("%s: %s %s, want batch/v1 Job", path, j.APIVersion, j.Kind)
	}
	return &j
}

func TestJobsDecodeStrictly(t *testing.T) {
	sweep := decode(t, "../sweep-job.yaml")
	decode(t, "../merge-job.yaml")
	// Rules the API server enforces on the fields the sweep uses.
	s := sweep.Spec
	if s.BackoffLimitPerIndex != nil && (s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion) {
		t.Error("backoffLimitPerIndex needs completionMode Indexed")
	}
	if s.PodFailurePolicy != nil && s.Template.Spec.RestartPolicy != "Never" {
		t.Error("podFailurePolicy needs restartPolicy Never")
	}
}

// The check itself must refuse what a server would: a misspelt field.
func TestStrictDecodeRefusesUnknownFields(t *testing.T) {
	b, err := os.ReadFile("../sweep-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(b), "completionMode:", "completionMod:", 1)
	var j batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(bad), &j); err == nil || !strings.Contains(err.Error(), "completionMod") {
		t.Errorf("a misspelt field decoded: %v", err)
	}
}
