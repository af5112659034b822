package results

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// MaxLineBytes bounds one line of a results file (and of the sanitizer's
// kept verdicts). The longest record written so far (thousands of samples
// and an NVRTC log) is well under a megabyte; a longer line is not a
// record, and it is skipped without being held: holding it is what
// exhausted memory.
const MaxLineBytes = 16 << 20

// MaxSkipBytes bounds what is skipped of one line before the input is
// given up on: a stream with no newline at all (/dev/zero) would
// otherwise be read for ever.
const MaxSkipBytes = 1 << 30

// ErrNoNewline is the read error of an input with a line longer than
// MaxSkipBytes.
var ErrNoNewline = fmt.Errorf("more than %d MiB without a newline: not a file of JSON lines", MaxSkipBytes>>20)

// A LineReader reads the lines of a file of JSON lines, each bounded by
// MaxLineBytes: a longer line is counted, and read past without being
// held.
type LineReader struct {
	br   *bufio.Reader
	n    int // lines read
	long int // lines skipped for their length
}

// NewLineReader returns a LineReader of r.
func NewLineReader(r io.Reader) *LineReader {
	return &LineReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// Line returns the number of the line Next returned last, 1-based.
func (l *LineReader) Line() int { return l.n }

// Long returns how many lines were skipped for their length so far.
func (l *LineReader) Long() int { return l.long }

// Next returns the next line with its newline, or what is left before
// EOF with io.EOF (an empty line and io.EOF at the end). A line longer
// than MaxLineBytes comes back as nil with its length in skipped, its
// bytes read and dropped as they came; one longer than MaxSkipBytes
// ends the input with ErrNoNewline.
func (l *LineReader) Next() (line []byte, skipped int64, err error) {
	for {
		chunk, err := l.br.ReadSlice('\n')
		if skipped == 0 && len(line)+len(chunk) <= MaxLineBytes {
			line = grow(line, len(chunk))
			line = append(line, chunk...)
		} else {
			if skipped == 0 {
				skipped, line = int64(len(line)), nil
			}
			skipped += int64(len(chunk))
			if skipped > MaxSkipBytes {
				l.n++
				return nil, skipped, fmt.Errorf("line %d: %w", l.n, ErrNoNewline)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == nil || len(line) > 0 || skipped > 0 {
			l.n++
		}
		if skipped > 0 {
			l.long++
		}
		return line, skipped, err
	}
}

// grow makes room for n more bytes in b, doubling up to MaxLineBytes:
// append's gentler growth past a few hundred KiB would copy a line near
// the bound several times over.
func grow(b []byte, n int) []byte {
	if len(b)+n <= cap(b) {
		return b
	}
	c := min(max(2*cap(b), len(b)+n, 4096), MaxLineBytes)
	out := make([]byte, len(b), c)
	copy(out, b)
	return out
}

// TooLong is the message for a line of n bytes over MaxLineBytes.
func TooLong(n int64) string {
	return fmt.Sprintf("a line of %d bytes, longer than the %d MiB a line may hold", n, MaxLineBytes>>20)
}
