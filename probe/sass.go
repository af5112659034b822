package probe

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ktune/ktune/internal/sass"
)

// A disassembler turns a CUBIN into a SASS listing (sass.Disassemble with
// the tool sass.Find located); nil when no CUDA disassembler is installed.
type disassembler func(cubin []byte) (string, error)

// findDisassembler returns the disassembler of this machine, or nil. Not
// having one is normal on a machine with a driver and no toolkit: the
// resource report then says -1 for the SASS-derived counts.
func findDisassembler() disassembler {
	tool, err := sass.Find()
	if err != nil {
		return nil
	}
	return func(cubin []byte) (string, error) { return sass.Disassemble(tool, cubin) }
}

// cachedDisassembler keeps each listing d makes in the CUBIN cache c, next
// to the CUBINs, under a key of the tool (its path, size and modification
// time: another toolkit is another key) and the CUBIN's bytes: a check of
// unchanged kernels then reads listings instead of running the
// disassembler (most of its time once NVRTC's work is cached). A listing
// that cannot be kept is still returned; nil d, or no cache, is d.
func cachedDisassembler(d disassembler, tool string, c diskCache) disassembler {
	st, err := os.Stat(tool)
	if d == nil || c.dir == "" || err != nil {
		return d
	}
	id := fmt.Sprintf("%s\x00%d\x00%d\x00", tool, st.Size(), st.ModTime().UnixNano())
	return func(cubin []byte) (string, error) {
		h := sha256.New()
		h.Write([]byte(id))
		h.Write(cubin)
		key := hex.EncodeToString(h.Sum(nil))
		path := c.path(key, ".sass")
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return string(b), nil
		}
		listing, err := d(cubin)
		if err == nil && listing != "" {
			_ = writeAtomic(path, []byte(listing)) // a cache that cannot be written only costs time
		}
		return listing, err
	}
}

// writeAtomic writes b to path through a temporary file and a rename, so a
// concurrent reader never sees part of it.
func writeAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}

// A sassReport is what the machine code of one compiled kernel says.
type sassReport struct {
	listing string
	// loadsBeforeChain is sass.LoadsBeforeChain of the partial entry
	// point, -1 when unknown.
	loadsBeforeChain int
}

// analyzeSASS reads the partial entry point's main loop from a listing.
// The seeds' D2 lesson is the reason: whether the window's K and V loads
// issue before the serial shuffle/exp chain is visible only in the SASS,
// and a count of 0 or NR (K only) instead of 2·NR flags a kernel whose
// source says otherwise.
func analyzeSASS(listing, partial string) (sassReport, error) {
	r := sassReport{listing: listing, loadsBeforeChain: -1}
	fns, err := sass.Parse(listing)
	if err != nil {
		return r, fmt.Errorf("parsing the SASS listing: %w", err)
	}
	f, ok := fns[partial]
	if !ok {
		return r, fmt.Errorf("the SASS listing has no function %s", partial)
	}
	r.loadsBeforeChain = sass.LoadsBeforeChain(f)
	return r, nil
}

// inspect disassembles a freshly loaded kernel once (the result lives in
// its kernelPair, as long as the module) and keeps the listing in SASSDir
// when asked to. Every failure here is only logged: the SASS informs the
// report, it never decides a point.
func (b *Backend) inspect(k *kernelPair, variant, key, partial string) {
	k.loadsBeforeChain = -1
	if b.disasm == nil {
		return
	}
	listing, err := b.disasm(k.build.cubin)
	if err != nil {
		b.logf("warning: %s: %v", variant, err)
		return
	}
	rep, err := analyzeSASS(listing, partial)
	if err != nil {
		b.logf("warning: %s: %v", variant, err)
	}
	k.loadsBeforeChain = rep.loadsBeforeChain
	if b.opts.SASSDir != "" {
		b.keep(variant, key, ".sass", []byte(listing))
	}
}

// keep writes a copy of a kernel artefact (CUBIN, SASS) into SASSDir as
// <variant>-<key prefix><ext>; failing to is only logged.
func (b *Backend) keep(variant, key, ext string, data []byte) {
	path := filepath.Join(b.opts.SASSDir, artefactName(variant, key, ext))
	err := os.MkdirAll(b.opts.SASSDir, 0o755)
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		b.logf("warning: keeping %s: %v", path, err)
	}
}
