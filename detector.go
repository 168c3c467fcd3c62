package txnlock

import "github.com/txnlock/txnlock/internal/seam"

// Detector is a deadlock detector that lock managers share (package
// deadlock provides it). A user creates one and gives it to each manager
// (WaitOptions.Detector); managers given the same Detector share one
// waits-for graph, so a cycle that crosses column families or runs through
// a point lock and a range lock is found.
//
// Its method is how a manager of this module connects to the detector; a
// user never calls it. It names a type internal to this module, so
// detectors come from this module only (package deadlock, and the
// detectors built on it): a detector must answer and confirm in step with
// the managers' lock tables, which only code that changes with them can.
type Detector interface {
	Seam() seam.Detector[TxnID, LockRef]
}
