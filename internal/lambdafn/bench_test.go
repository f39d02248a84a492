package lambdafn_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// Public us-east-1 prices used for the cost figures (docs/benchmarks-aws.md
// says where they come from).
const (
	usdPerMillionWRU         = 0.625 // DynamoDB on-demand write request units
	usdPerMillionRRU         = 0.125 // DynamoDB on-demand read request units
	usdPerMillionSQSRequests = 0.40  // SQS standard queue, per 64 KB chunk of a request
	usdPerMillionInvocations = 0.20  // Lambda requests
	usdPerGBSecondArm        = 0.0000133334
	usdPerGBLogsIngested     = 0.50         // CloudWatch Logs, standard class
	lambdaMemoryGB           = 256.0 / 1024 // template.yaml Globals MemorySize
)

// BenchmarkJobAWSCost runs whole job lifecycles — queued, create, running,
// in_progress, completed, delete, deleted — through the Lambda handlers
// against DynamoDB Local and moto. SDK middleware on the real clients counts
// every AWS request by caller and operation and asks DynamoDB for the
// capacity consumed; handler invocations and durations are measured around
// the handler calls. It reports per-job figures and dollars per 100,000 jobs.
//
// lone-job runs one job at a time, the low-volume case: every SQS batch
// holds one message. batch-of-10 runs ten jobs at once, their webhooks all
// delivered before the event source mapping polls, so each create and each
// delete batch holds ten messages — a burst of queued jobs.
func BenchmarkJobAWSCost(b *testing.B) {
	b.Run("lone-job", func(b *testing.B) { benchmarkJobs(b, 1) })
	b.Run("batch-of-10", func(b *testing.B) { benchmarkJobs(b, 10) })
}

// benchmarkJobs runs perBatch jobs side by side per iteration.
func benchmarkJobs(b *testing.B, perBatch int) {
	meter := newAWSMeter()
	s := newStack(b, stackOptions{meter: meter, infoLogs: true})
	intake, worker := s.webhook(), s.worker()

	jobID := int64(7100000000)
	lifecycles := func() {
		ids, names := make([]int64, perBatch), make([]string, perBatch)
		for i := range perBatch {
			jobID++
			ids[i], names[i] = jobID, runner.InstanceName(linuxPool, jobID, 1)
			s.deliver(b, intake, functionURLEvent(b, jobPayload(b, runner.ActionQueued, ids[i], "")))
		}
		s.drain(b, worker, 10*time.Second, "runners running", s.allHaveStatus(names, runner.StatusRunning))
		for i := range perBatch {
			s.deliver(b, intake, functionURLEvent(b, jobPayload(b, runner.ActionInProgress, ids[i], names[i])))
			s.deliver(b, intake, functionURLEvent(b, jobPayload(b, runner.ActionCompleted, ids[i], names[i])))
		}
		s.drain(b, worker, 10*time.Second, "runners deleted", s.allHaveStatus(names, runner.StatusDeleted))
	}
	// The first round pays the cold starts (config and secret reads); they
	// are reported apart from the per-job figures.
	lifecycles()
	cold := meter.snapshot()
	meter.reset()
	// EMF metric lines go to stdout too: CloudWatch Logs ingests them.
	logsBefore := len(s.logs.String()) + len(s.metrics.String())

	b.ResetTimer()
	for b.Loop() {
		lifecycles()
	}
	b.StopTimer()
	report(b, meter.snapshot(), cold, b.N*perBatch, len(s.logs.String())+len(s.metrics.String())-logsBefore)
}

func (s *stack) allHaveStatus(names []string, want runner.Status) func() bool {
	return func() bool {
		for _, name := range names {
			if !s.hasStatus(name, want)() {
				return false
			}
		}
		return true
	}
}

func report(b *testing.B, m, cold meterSnapshot, jobs, logBytes int) {
	perJob := func(v float64) float64 { return v / float64(jobs) }
	writes := perJob(float64(sumWhere(m.calls, "DynamoDB.PutItem") + sumWhere(m.calls, "DynamoDB.UpdateItem") +
		sumWhere(m.calls, "DynamoDB.DeleteItem") + sumWhere(m.calls, "DynamoDB.TransactWriteItems")))
	reads := perJob(float64(sumWhere(m.calls, "DynamoDB.GetItem") + sumWhere(m.calls, "DynamoDB.BatchGetItem") + sumWhere(m.calls, "DynamoDB.Query")))
	wru := perJob(sumWhere(m.capacity, "DynamoDB.PutItem") + sumWhere(m.capacity, "DynamoDB.UpdateItem") +
		sumWhere(m.capacity, "DynamoDB.DeleteItem") + sumWhere(m.capacity, "DynamoDB.TransactWriteItems"))
	rru := perJob(sumWhere(m.capacity, "DynamoDB.GetItem") + sumWhere(m.capacity, "DynamoDB.BatchGetItem") + sumWhere(m.capacity, "DynamoDB.Query"))
	sqsApp := perJob(float64(sumWhere(m.calls, "webhook SQS.") + sumWhere(m.calls, "worker SQS.")))
	sqsESM := perJob(float64(sumWhere(m.calls, "esm SQS.")))

	var invocations, gbSeconds float64
	for _, durations := range m.handlers {
		for _, d := range durations {
			invocations++
			// Lambda bills duration rounded up to the millisecond.
			gbSeconds += lambdaMemoryGB * math.Ceil(float64(d)/float64(time.Millisecond)) / 1000
		}
	}
	invocations, gbSeconds = perJob(invocations), perJob(gbSeconds)
	var workerInvocations int
	for kind, durations := range m.handlers {
		if strings.HasPrefix(kind, "worker ") {
			workerInvocations += len(durations)
		}
	}

	const jobsPriced = 100_000
	cost := map[string]float64{
		"dynamodb":       jobsPriced * (wru*usdPerMillionWRU + rru*usdPerMillionRRU) / 1e6,
		"sqs":            jobsPriced * (sqsApp + sqsESM) * usdPerMillionSQSRequests / 1e6,
		"lambda-request": jobsPriced * invocations * usdPerMillionInvocations / 1e6,
		"lambda-gbs":     jobsPriced * gbSeconds * usdPerGBSecondArm,
		"logs":           jobsPriced * perJob(float64(logBytes)) / (1 << 30) * usdPerGBLogsIngested,
	}
	var total float64
	for _, v := range cost {
		total += v
	}

	b.ReportMetric(writes, "ddb-writes/job")
	b.ReportMetric(reads, "ddb-reads/job")
	b.ReportMetric(wru, "WRU/job")
	b.ReportMetric(rru, "RRU/job")
	b.ReportMetric(sqsApp, "sqs-fn-calls/job")
	b.ReportMetric(sqsESM, "sqs-esm-calls/job")
	b.ReportMetric(invocations, "invocations/job")
	// Each job has two work messages (create, delete).
	b.ReportMetric(float64(2*jobs)/float64(workerInvocations), "msgs/worker-batch")
	b.ReportMetric(perJob(float64(logBytes)), "log-bytes/job")
	b.ReportMetric(total, "usd/100k-jobs")

	var lines []string
	lines = append(lines, fmt.Sprintf("per job, over %d jobs (capacity reported by DynamoDB Local: %t)", jobs, m.missing == 0))
	for _, k := range sortedKeys(m.calls) {
		line := fmt.Sprintf("  %-40s %6.2f requests", k, perJob(float64(m.calls[k])))
		if c, ok := m.capacity[k]; ok {
			line += fmt.Sprintf("  %6.2f capacity units", perJob(c))
		}
		lines = append(lines, line)
	}
	lines = append(lines, fmt.Sprintf("  live-index write units (included above): %.2f", perJob(m.indexWCU)))
	for _, k := range sortedKeys(m.handlers) {
		d := m.handlers[k]
		var sum time.Duration
		for _, x := range d {
			sum += x
		}
		lines = append(lines, fmt.Sprintf("  handler %-26s %5.2f invocations  mean %v", k, perJob(float64(len(d))), (sum/time.Duration(len(d))).Round(10*time.Microsecond)))
	}
	lines = append(lines, "cold start (first job, once per execution environment):")
	for _, k := range sortedKeys(cold.calls) {
		if strings.Contains(k, "SSM.") || strings.Contains(k, "Secrets Manager.") {
			lines = append(lines, fmt.Sprintf("  %-40s %d", k, cold.calls[k]))
		}
	}
	for _, k := range sortedKeys(cost) {
		lines = append(lines, fmt.Sprintf("USD per %d jobs, %-15s %.4f", jobsPriced, k, cost[k]))
	}
	lines = append(lines, fmt.Sprintf("USD per %d jobs, total           %.4f", jobsPriced, total))
	b.Log("\n" + strings.Join(lines, "\n"))
}
