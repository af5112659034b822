package results

// Measured splits recs into the records of measurements and those the
// replay backend served (Record.Replayed set), each in input order. It is
// the one place that tells the two apart: commands that turn results
// into conclusions (report, gate, compare, tune) refuse replayed records
// unless asked, since a replay is another run's numbers, or none.
func Measured(recs []Record) (measured, replayed []Record) {
	for _, r := range recs {
		if IsReplayed(&r) {
			replayed = append(replayed, r)
		} else {
			measured = append(measured, r)
		}
	}
	return measured, replayed
}
