package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// An outFile is one file a command writes whole: its name in the output
// directory and its content.
type outFile struct {
	name string
	data []byte
}

// A tempFile is what writeFiles needs of a file it writes before renaming
// it into place (an *os.File; a test substitutes one whose writes fail, as
// a full disk's do).
type tempFile interface {
	io.Writer
	Sync() error
	Close() error
	Name() string
}

// createTemp is os.CreateTemp as a tempFile.
func createTemp(dir, pattern string) (tempFile, error) { return os.CreateTemp(dir, pattern) }

// writeFiles writes every file into dir through a temporary file beside
// it, and renames them into place only once all are written and synced:
// a full disk or a crash leaves the files as they were (or absent), never
// a short or empty one an engine would build from.
func writeFiles(dir string, files []outFile, create func(dir, pattern string) (tempFile, error)) (err error) {
	var temps []string
	defer func() {
		if err != nil {
			for _, t := range temps {
				os.Remove(t)
			}
		}
	}()
	for _, f := range files {
		t, err := create(dir, "."+f.name+"-*")
		if err != nil {
			return fmt.Errorf("writing %s: %w", filepath.Join(dir, f.name), err)
		}
		temps = append(temps, t.Name())
		_, err = t.Write(f.data)
		if err == nil {
			err = t.Sync()
		}
		if cerr := t.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(t.Name(), 0o644) // CreateTemp's 0600 is no output file's
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", filepath.Join(dir, f.name), err)
		}
	}
	for i, f := range files {
		if err := os.Rename(temps[i], filepath.Join(dir, f.name)); err != nil {
			return fmt.Errorf("writing %s: %w", filepath.Join(dir, f.name), err)
		}
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: make the renames durable
		d.Close()
	}
	return nil
}
