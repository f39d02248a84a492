package ec2

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// The price is the highest of each zone's latest reading: an older, higher
// reading of a zone no longer counts, and a reading that is not a number
// is skipped.
func TestLatestHighestSpotPrice(t *testing.T) {
	at := time.Date(2026, time.November, 28, 9, 0, 0, 0, time.UTC)
	reading := func(zone, price string, ago time.Duration) ec2types.SpotPrice {
		return ec2types.SpotPrice{AvailabilityZone: aws.String(zone), SpotPrice: aws.String(price), Timestamp: aws.Time(at.Add(-ago))}
	}
	got, err := latestHighest("m7g.large", []ec2types.SpotPrice{
		reading("us-east-1a", "0.0310", 0),
		reading("us-east-1a", "0.0900", time.Hour), // older
		reading("us-east-1b", "0.0350", 10*time.Minute),
		reading("us-east-1c", "n/a", 0),
	})
	if err != nil || got != 0.035 {
		t.Fatalf("latestHighest = %v, %v; want 0.035", got, err)
	}
	if _, err := latestHighest("m7g.large", nil); err == nil {
		t.Fatal("no history gave a price")
	}
}
