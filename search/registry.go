package search

// registry is every strategy 'ktune tune --search' offers, in the order
// help lists them. A strategy is one file that defines its Registration
// and one line here.
var registry = []Registration{
	gridRegistration,
	randomRegistration,
	halvingRegistration,
	modelRegistration,
}
