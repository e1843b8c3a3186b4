package jobs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
)

// referenceResults is the SHA-256 of the 12 reference runs' results printed with %v, in
// loadReferences' order. Speed work on the round loop and the LP is meant to keep them bit for
// bit; a change that moves one (its last bit included) must update this and the tables in
// docs/jobs.md, which the fidelity tests then judge.
const referenceResults = "0a4593ece609f6a782cb1945d999b51382bc0eaa1315afa9ad16a2b8aa81fbda"

// Bit for bit on amd64 only: other architectures may fuse multiply-adds and round differently.
func TestGavelCompatReferenceResultsUnchanged(t *testing.T) {
	table := loadTable(t)
	h := sha256.New()
	for _, r := range loadReferences(t) {
		fmt.Fprintf(h, "%s %s %v\n", r.Trace, r.Policy, runReference(t, table, r))
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != referenceResults {
		t.Errorf("the reference runs' results hash to %s, want %s: if the change is meant to move them, update referenceResults and docs/jobs.md's fidelity tables", got, referenceResults)
	}
}
