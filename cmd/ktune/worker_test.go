package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/probe"
	"github.com/ktune/ktune/replay"
)

func TestWorkerCommand(t *testing.T) {
	env := results.Env{Device: "NVIDIA H200", DeviceIndex: 1, Arch: "sm_90", ReadBWGBps: 4560}
	rec := results.Record{Hash: "aaaa000000000001", Env: env, Status: results.StatusOK,
		Config: results.Config{Spec: "slice", Variant: "d2"}}
	var opened probe.Options
	open := func(o probe.Options) (plan.Backend, error) {
		opened = o
		return replay.New([]results.Record{rec}), nil
	}
	pt, _ := json.Marshal(map[string]any{"op": "run", "point": &plan.Point{Hash: rec.Hash, Config: rec.Config}})
	in := strings.NewReader("{\"op\":\"env\"}\n" + string(pt) + "\n")
	var stdout, stderr bytes.Buffer
	err := runWorker(context.Background(), in, &stdout, &stderr, []string{"--device", "1", "--sass", "out/sass"}, open)
	if err != nil {
		t.Fatalf("worker: %v\n%s", err, stderr.String())
	}
	if opened.Device != 1 || opened.SASSDir != "out/sass" || opened.Energy {
		t.Errorf("opened the backend with %+v (energy is opt-in)", opened)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"read_bw_gbps":4560`) || !strings.Contains(lines[1], `"hash":"aaaa000000000001"`) ||
		!strings.Contains(lines[1], `"status":"ok"`) {
		t.Errorf("worker output:\n%s", stdout.String())
	}
	stdout.Reset()
	err = runWorker(context.Background(), strings.NewReader(`{"op":"env"}`+"\n"), &stdout, &stderr, []string{"--device", "0", "--energy"}, open)
	if err != nil || !opened.Energy {
		t.Errorf("--energy: %v; opened the backend with %+v", err, opened)
	}
	command, err := workerCommand("", false, true)
	if err != nil {
		t.Fatal(err)
	}
	if args := command(0).Args; !slices.Contains(args, "--energy") {
		t.Errorf("a sweep with --energy starts workers as %q: they would not record it", args)
	}
}

func TestWorkerOpenFailure(t *testing.T) {
	open := func(probe.Options) (plan.Backend, error) { return nil, fmt.Errorf("libcuda.so.1: not found") }
	var stdout, stderr bytes.Buffer
	err := runWorker(context.Background(), strings.NewReader("{\"op\":\"env\"}\n"), &stdout, &stderr, []string{"--device", "2"}, open)
	if err == nil || !strings.Contains(err.Error(), "opening CUDA device 2: libcuda.so.1: not found") {
		t.Fatalf("worker without a driver: %v", err)
	}
	if !strings.Contains(stdout.String(), `"fatal":"opening CUDA device 2: libcuda.so.1: not found"`) {
		t.Errorf("the parent was not told: %q", stdout.String())
	}
}

func TestWorkerIsHidden(t *testing.T) {
	var stdout bytes.Buffer
	usage(&stdout)
	if strings.Contains(stdout.String(), "worker") {
		t.Errorf("ktune help lists the worker:\n%s", stdout.String())
	}
	if !strings.Contains(stdout.String(), "merge") {
		t.Errorf("ktune help does not list merge:\n%s", stdout.String())
	}
}

func TestParseDevices(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		all  bool
		err  bool
	}{
		{"0", "[0]", false, false},
		{"0,1", "[0 1]", false, false},
		{" 3 , 1 ", "[3 1]", false, false},
		{"all", "[]", true, false},
		{"0,0", "", false, true},
		{"-1", "", false, true},
		{"gpu0", "", false, true},
	} {
		devs, all, err := parseDevices(tc.in)
		if (err != nil) != tc.err || (err == nil && (fmt.Sprint(devs) != tc.want || all != tc.all)) {
			t.Errorf("parseDevices(%q) = %v, %v, %v", tc.in, devs, all, err)
		}
	}
}
