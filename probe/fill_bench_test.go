package probe

import (
	"testing"

	"github.com/ktune/ktune/internal/kvtype"
)

// BenchmarkFillSerial is the host fill of one core, per type (bytes/s).
func BenchmarkFillSerial(b *testing.B) {
	for _, t := range kvtype.All {
		b.Run(t.Name, func(b *testing.B) {
			dst := make([]byte, 1<<20)
			b.SetBytes(int64(len(dst)))
			for b.Loop() {
				fillSerial(dst, t, fillSeed, 12345)
			}
		})
	}
}
