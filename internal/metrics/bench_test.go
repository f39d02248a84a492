package metrics_test

import (
	"testing"

	"github.com/runfleet/runfleet/internal/metrics"
)

// BenchmarkClassifyWebhook is what counting one delivery adds to the
// intake: reading the status and action back from the reply.
func BenchmarkClassifyWebhook(b *testing.B) {
	reply := []byte(`{"status":"processed","message":"workflow_job queued: instance_created","delivery_id":"d0c0ffee-0000-4000-8000-000000000001","event":"workflow_job","job_id":7000000001,"action":"queued","result":"instance_created","instance":"runfleet-linux-x64-7000000001-1","pool":"linux-x64"}`)
	b.ReportAllocs()
	for b.Loop() {
		metrics.ClassifyWebhook("workflow_job", 200, reply)
	}
}
