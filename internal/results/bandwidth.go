package results

// Bandwidth derives a measurement's figures from its bytes and median:
// GB/s (bytes per ns; 1 GB = 1e9 B) and that as a percent of readBW, the
// run's measured read bandwidth (0 when unknown). Both are 0 without
// bytes or a positive median. The probe records them, and the readers
// derive them again rather than trusting the stored ones.
func (m *Measurement) Bandwidth(readBW float64) (gbps, pctBW float64) {
	if m.Bytes <= 0 || m.Summary.Median <= 0 {
		return 0, 0
	}
	gbps = float64(m.Bytes) / m.Summary.Median
	if readBW > 0 {
		pctBW = gbps / readBW * 100
	}
	return gbps, pctBW
}
