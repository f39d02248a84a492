// Command worker is the WorkerFunction: the work queue's SQS event source
// mapping (ReportBatchItemFailures). It builds the engine with the GitHub
// client and a provider per pool. The logic is in internal/lambdafn/work.
package main

import (
	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/lambdafn/work"
)

func main() { lambdafn.Start(lambdafn.RoleWorker, work.Worker()) }
