// Package buildinfo says which ktune this is: the module version, the VCS
// revision it was built from and whether the tree had changes, and the Go
// toolchain. `ktune version` prints it and every results record carries
// its Stamp, so that a measurement can be traced to the code that made it.
//
// The go command stamps the revision itself (debug.ReadBuildInfo, vcs.*
// settings) when it builds inside a git checkout with -buildvcs=auto or
// true. It cannot in a git worktree (.git is a file there), in a copy of
// the tree without .git, or under GOFLAGS=-buildvcs=false; `make build`
// then passes the revision with -ldflags -X (see the Makefile), and that
// is used when the go command recorded none.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set with -ldflags "-X github.com/ktune/ktune/internal/buildinfo.revision=…"
// by the Makefile; empty in a plain go build, go run or go test.
var (
	revision string // full commit hash
	modified string // "true" when the tree had uncommitted changes
)

// Info describes one build.
type Info struct {
	// Module is the main module's path, Version its version: "(devel)"
	// for a build from a checkout, a tag or pseudo-version for go install.
	Module, Version string
	// Revision is the full VCS revision, "" when unknown; Time is the
	// commit time (RFC 3339) when the go command recorded it.
	Revision, Time string
	// Modified is set when the tree had uncommitted changes.
	Modified bool
	// GoVersion is the toolchain that built the binary, e.g. go1.26.8.
	GoVersion string
}

// Read returns this binary's Info.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return from(bi, revision, modified)
}

// from builds the Info of bi, falling back to the linker-set revision
// and modified flag when bi carries no VCS settings.
func from(bi *debug.BuildInfo, rev, mod string) Info {
	in := Info{GoVersion: runtime.Version()}
	if bi == nil {
		in.Revision, in.Modified = rev, mod == "true"
		return in
	}
	in.Module, in.Version = bi.Main.Path, bi.Main.Version
	if bi.GoVersion != "" {
		in.GoVersion = bi.GoVersion
	}
	vcs := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision, vcs = s.Value, true
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	if !vcs {
		in.Revision, in.Modified = rev, mod == "true"
	}
	return in
}

// Stamp is the short form records carry in env.ktune:
// "(devel)+2244491a3b1c-dirty" — the version, the first 12 digits of the
// revision when known, and "-dirty" for a modified tree.
func (in Info) Stamp() string {
	s := in.Version
	if s == "" {
		s = "(unknown)"
	}
	if in.Revision != "" {
		s += "+" + in.Revision[:min(12, len(in.Revision))]
	}
	if in.Modified {
		s += "-dirty"
	}
	return s
}

// String is the text of `ktune version`.
func (in Info) String() string {
	rev := in.Revision
	if rev == "" {
		rev = "unknown (built without VCS information: use make build)"
	} else if in.Modified {
		rev += " (modified)"
	}
	s := fmt.Sprintf("ktune %s\nmodule %s\nrevision %s\n", in.Version, in.Module, rev)
	if in.Time != "" {
		s += "commit time " + in.Time + "\n"
	}
	return s + fmt.Sprintf("go %s %s/%s\n", in.GoVersion, runtime.GOOS, runtime.GOARCH)
}
