package github

import "strings"

// LatestAttempt is the highest run attempt among a run's jobs (RunJobs);
// 0 for none.
func LatestAttempt(jobs []Job) int64 {
	var latest int64
	for _, j := range jobs {
		latest = max(latest, j.RunAttempt)
	}
	return latest
}

// JobRanBy is the job of a run (RunJobs) that runner ran. GitHub compares
// runner names case-insensitively; an ephemeral runner runs one job, so
// there is at most one.
func JobRanBy(jobs []Job, runner string) (Job, bool) {
	if runner == "" {
		return Job{}, false
	}
	for _, j := range jobs {
		if strings.EqualFold(j.RunnerName, runner) {
			return j, true
		}
	}
	return Job{}, false
}
