package ec2

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/runfleet/runfleet/providers"
)

var _ providers.PriceReader = (*Provider)(nil)

// HourlyPriceUSD reads the price of a Linux machine of machineType in the
// provider's region: on-demand from the Price List API (ondemand.go),
// spot from EC2's spot price history. Callers cache it (internal/cost):
// prices change by the hour at most.
func (p *Provider) HourlyPriceUSD(ctx context.Context, machineType, market string) (float64, error) {
	if market == providers.MarketSpot {
		return p.spotPrice(ctx, machineType)
	}
	return p.onDemandPrice(ctx, machineType)
}

// spotPrice is the highest of the latest spot prices of the region's
// availability zones: the zone a machine ran in is not kept, and a cost
// should not be understated.
func (p *Provider) spotPrice(ctx context.Context, machineType string) (float64, error) {
	out, err := p.client.DescribeSpotPriceHistory(ctx, &awsec2.DescribeSpotPriceHistoryInput{
		InstanceTypes:       []ec2types.InstanceType{ec2types.InstanceType(machineType)},
		ProductDescriptions: []string{spotProduct},
		StartTime:           aws.Time(time.Now()),
	})
	if err != nil {
		return 0, fmt.Errorf("spot price of %s: %s", machineType, fault("DescribeSpotPriceHistory", err))
	}
	return latestHighest(machineType, out.SpotPriceHistory)
}

// spotProduct is the product description Linux spot prices are kept
// under. A Windows machine's spot price includes its licence and is
// higher: price Windows pools in the config table.
const spotProduct = "Linux/UNIX"

// latestHighest is the highest of each zone's latest price in history.
func latestHighest(machineType string, history []ec2types.SpotPrice) (float64, error) {
	type reading struct {
		at    time.Time
		price float64
	}
	latest := map[string]reading{}
	for _, h := range history {
		price, err := strconv.ParseFloat(aws.ToString(h.SpotPrice), 64)
		if err != nil {
			continue
		}
		zone, at := aws.ToString(h.AvailabilityZone), aws.ToTime(h.Timestamp)
		if cur, ok := latest[zone]; !ok || at.After(cur.at) {
			latest[zone] = reading{at: at, price: price}
		}
	}
	if len(latest) == 0 {
		return 0, fmt.Errorf("no spot price history for %s in this region", machineType)
	}
	var highest float64
	for _, r := range latest {
		highest = max(highest, r.price)
	}
	return highest, nil
}
