package sass

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrNotFound is returned (wrapped) by Find when neither disassembler is
// installed in any of the places it looks.
var ErrNotFound = errors.New("no CUDA disassembler (cuobjdump or nvdisasm) found")

// tools are the disassemblers Find looks for, in order of preference.
// cuobjdump comes first: its listing resolves branch targets to offsets,
// while nvdisasm prints labels (Parse reads both).
var tools = [...]string{"cuobjdump", "nvdisasm"}

// Find locates cuobjdump or nvdisasm and returns its path. It searches
// PATH, then $CUDA_HOME/bin, then /usr/local/cuda/bin, and prefers
// cuobjdump in each place before moving to the next.
func Find() (tool string, err error) {
	return find(os.Getenv, isExecutable)
}

// find is Find with its environment passed in, so tests can point it at a
// directory of their own without touching the process environment.
func find(getenv func(string) string, executable func(string) bool) (string, error) {
	var dirs []string
	dirs = append(dirs, filepath.SplitList(getenv("PATH"))...)
	if home := getenv("CUDA_HOME"); home != "" {
		dirs = append(dirs, filepath.Join(home, "bin"))
	}
	dirs = append(dirs, "/usr/local/cuda/bin")
	for _, dir := range dirs {
		if dir == "" {
			// An empty PATH element means the current directory to a
			// shell; a tool that depends on the working directory would
			// be a surprise, so it is skipped.
			continue
		}
		for _, name := range tools {
			p := filepath.Join(dir, name)
			if executable(p) {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%w (looked in PATH, $CUDA_HOME/bin and /usr/local/cuda/bin)", ErrNotFound)
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// Disassemble runs tool (a path returned by Find) on a CUBIN and returns
// the listing: `cuobjdump -sass` for cuobjdump, `nvdisasm -c` for nvdisasm,
// told apart by the tool's file name. The disassemblers only read files, so
// the CUBIN is written to a temporary file that is removed afterwards.
func Disassemble(tool string, cubin []byte) (string, error) {
	var flag string
	switch base := strings.TrimSuffix(filepath.Base(tool), ".exe"); base {
	case "cuobjdump":
		flag = "-sass"
	case "nvdisasm":
		flag = "-c"
	default:
		return "", fmt.Errorf("disassembling: %q is neither cuobjdump nor nvdisasm", tool)
	}
	if len(cubin) == 0 {
		return "", errors.New("disassembling: empty CUBIN")
	}
	dir, err := os.MkdirTemp("", "ktune-sass-")
	if err != nil {
		return "", fmt.Errorf("disassembling: %w", err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "kernel.cubin")
	if err := os.WriteFile(path, cubin, 0o600); err != nil {
		return "", fmt.Errorf("disassembling: writing the CUBIN: %w", err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(tool, flag, path)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		// The tool's own message (a bad ELF, a too-new architecture) is
		// what a user can act on, so it goes into the error.
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		if msg != "" {
			return "", fmt.Errorf("disassembling with %s %s: %w: %s", tool, flag, err, msg)
		}
		return "", fmt.Errorf("disassembling with %s %s: %w", tool, flag, err)
	}
	return stdout.String(), nil
}
