package evidence

import (
	"fmt"
	"os"

	"github.com/ktune/ktune/internal/results"
)

// Load reads results files (a directory means its results.jsonl) into a
// Set. Within a file the last record of a hash is the one checked
// (`ktune sweep --force` appends a new measurement), but every line read
// counts for Failures. A file that cannot be read at all, or a line too
// long to be a record, is an error; a line that is not a record is Damaged.
func Load(paths []string, opt Options) (*Set, error) {
	s := &Set{}
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			p = results.FilePath(p)
		}
		recs, warns, err := results.ReadFile(p)
		s.Damaged = append(s.Damaged, warns...)
		if err != nil {
			return s, err
		}
		s.addFile(recs, p, opt)
	}
	return s, nil
}

func (s *Set) addFile(recs []results.Record, file string, opt Options) {
	for i := range recs {
		s.noteFailure(&recs[i])
	}
	latest, n := results.Latest(recs)
	s.Replaced += n
	for _, r := range latest {
		s.add(r, file, opt)
	}
}

// Summary says in one line what of the input is not evidence, "" when
// everything is.
func (s *Set) Summary() string {
	if !s.Incomplete() {
		return ""
	}
	return fmt.Sprintf("%d line(s) unreadable, %d record(s) not evidence", len(s.Damaged), len(s.Excluded))
}
