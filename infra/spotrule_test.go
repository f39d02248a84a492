package infra

import (
	"slices"
	"testing"
)

// EC2's two spot events reach the work queue, the worker's decoder knows
// both detail-types (internal/lambdafn/work/ec2events.go), an undelivered
// event is kept, and only that rule may send to the queues.
func TestSpotInterruptionRuleFeedsTheWorkQueueOnly(t *testing.T) {
	tpl := loadTemplate(t)
	rule := tpl.onlyResourceOfType(t, "AWS::Events::Rule")
	props := tpl.resource(rule).get("Properties")
	pattern := props.get("EventPattern")
	if got := pattern.get("source").strs(); !slices.Equal(got, []string{"aws.ec2"}) {
		t.Errorf("%s source = %v, want [aws.ec2]", rule, got)
	}
	wantTypes := []string{"EC2 Spot Instance Interruption Warning", "EC2 Instance Rebalance Recommendation"}
	if got := pattern.get("detail-type").strs(); !slices.Equal(got, wantTypes) {
		t.Errorf("%s detail-type = %v, want %v", rule, got, wantTypes)
	}
	targets := props.get("Targets").list()
	if len(targets) != 1 {
		t.Fatalf("%s has %d targets, want the work queue alone", rule, len(targets))
	}
	target := value{targets[0]}
	if got := target.get("Arn").getAtt(); got != "WorkQueue" {
		t.Errorf("%s target = %s, want !GetAtt WorkQueue.Arn", rule, asJSON(target.get("Arn").v))
	}
	if got := target.get("DeadLetterConfig").get("Arn").getAtt(); got != "DeadLetterQueue" {
		t.Errorf("%s target dead-letter queue = %q, want DeadLetterQueue", rule, got)
	}

	policy := tpl.onlyResourceOfType(t, "AWS::SQS::QueuePolicy")
	pp := tpl.resource(policy).get("Properties")
	var queues []string
	for _, q := range pp.get("Queues").list() {
		queues = append(queues, value{q}.ref())
	}
	if !slices.Equal(queues, []string{"WorkQueue", "DeadLetterQueue"}) {
		t.Errorf("%s applies to %v, want [WorkQueue DeadLetterQueue]", policy, queues)
	}
	statements := pp.get("PolicyDocument").get("Statement").list()
	if len(statements) != 1 {
		t.Fatalf("%s has %d statements, want one", policy, len(statements))
	}
	st := value{statements[0]}
	switch {
	case st.get("Principal").get("Service").str() != "events.amazonaws.com":
		t.Errorf("%s principal = %s, want events.amazonaws.com", policy, asJSON(st.get("Principal").v))
	case st.get("Action").str() != "sqs:SendMessage":
		t.Errorf("%s action = %s, want sqs:SendMessage only", policy, asJSON(st.get("Action").v))
	case st.get("Condition").get("ArnEquals").get("aws:SourceArn").getAtt() != rule:
		t.Errorf("%s condition = %s, want aws:SourceArn of %s only", policy, asJSON(st.get("Condition").v), rule)
	}
}
