// Command samerecords checks that two results directories (or files) hold
// the same records point for point: the same hashes, each with the same
// content apart from the time it was written. experiments/slurm/test.sh
// runs it on a merged job array and a single-process sweep of one plan.
//
//	go run ./experiments/slurm/samerecords MERGED SINGLE
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/ktune/ktune/internal/results"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: samerecords A B")
		os.Exit(2)
	}
	msg, err := compare(os.Args[1], os.Args[2])
	if err != nil {
		fmt.Fprintf(os.Stderr, "samerecords: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(msg)
}

func compare(a, b string) (string, error) {
	ra, err := load(a)
	if err != nil {
		return "", err
	}
	rb, err := load(b)
	if err != nil {
		return "", err
	}
	var diff []string
	for h, x := range ra {
		y, ok := rb[h]
		switch {
		case !ok:
			diff = append(diff, fmt.Sprintf("%s: only in %s", h, a))
		case x != y:
			diff = append(diff, fmt.Sprintf("%s: differs", h))
		}
	}
	for h := range rb {
		if _, ok := ra[h]; !ok {
			diff = append(diff, fmt.Sprintf("%s: only in %s", h, b))
		}
	}
	if len(diff) > 0 {
		sort.Strings(diff)
		return "", fmt.Errorf("%s and %s differ at %d points:\n  %v", a, b, len(diff), diff)
	}
	return fmt.Sprintf("%s and %s hold the same %d records", a, b, len(ra)), nil
}

// load returns each hash's latest record as JSON, with the time it was
// written cleared: the one field two runs of one plan may not share.
func load(path string) (map[string]string, error) {
	set, err := results.Load(path)
	if err != nil {
		return nil, err
	}
	if len(set.Warnings) > 0 {
		return nil, fmt.Errorf("%s: %v", path, set.Warnings[0])
	}
	out := map[string]string{}
	for _, r := range set.Records {
		r.Time = time.Time{}
		b, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out[r.Hash] = string(b)
	}
	return out, nil
}
