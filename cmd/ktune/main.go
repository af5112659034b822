// Command ktune autotunes, benchmarks and gates split-KV decode attention
// kernels. See doc.go for the manual.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := run(os.Stdout, os.Stderr, os.Args[1:]); err != nil {
		if msg := err.Error(); msg != "" {
			fmt.Fprintf(os.Stderr, "ktune: %s\n", clipWords(msg, maxWordBytes))
		}
		os.Exit(exitCode(err))
	}
}
