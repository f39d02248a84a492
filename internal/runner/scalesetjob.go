package runner

// scaleSetJobBit marks a ledger job id as a scale-set job's. A scale-set
// message names its job by runnerRequestId (and a GUID), never by the REST
// workflow-job id a webhook job is keyed by; the two id spaces are
// separate, so a scale-set job's ledger id is its runnerRequestId with
// this bit set. REST job ids are far below 2^62 (tens of billions today),
// so the two never collide, and the id stays a positive int64 the store
// and the instance names accept.
const scaleSetJobBit int64 = 1 << 62

// ScaleSetJobID is the ledger id of the scale-set job with
// runnerRequestID.
func ScaleSetJobID(runnerRequestID int64) int64 { return scaleSetJobBit | runnerRequestID }

// RunnerRequestID is the runnerRequestId of a scale-set job's ledger id,
// and whether the id is a scale-set job's at all — if not, it is GitHub's
// REST workflow-job id, which the REST API knows the job by.
func RunnerRequestID(jobID int64) (int64, bool) {
	if jobID&scaleSetJobBit == 0 {
		return 0, false
	}
	return jobID &^ scaleSetJobBit, true
}
