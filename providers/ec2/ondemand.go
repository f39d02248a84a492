package ec2

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
)

// pricingRegion is where the Price List API is asked: it answers from
// us-east-1 (and a few other regions) for every region's prices.
const pricingRegion = "us-east-1"

// productLister is the Price List API call the provider makes.
type productLister interface {
	GetProducts(ctx context.Context, in *pricing.GetProductsInput, opts ...func(*pricing.Options)) (*pricing.GetProductsOutput, error)
}

// onDemandPrice reads the on-demand price of a Linux machine of
// machineType in the provider's region from the Price List API: the
// offer of shared tenancy, no pre-installed software and no licence, as
// the provider launches. Several matching offers give the highest, as a
// cost should not be understated.
func (p *Provider) onDemandPrice(ctx context.Context, machineType string) (float64, error) {
	term := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Field: aws.String(field), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String(value)}
	}
	out, err := p.pricing.GetProducts(ctx, &pricing.GetProductsInput{
		ServiceCode: aws.String("AmazonEC2"),
		Filters: []pricingtypes.Filter{
			term("instanceType", machineType),
			term("regionCode", p.region),
			term("operatingSystem", "Linux"),
			term("tenancy", "Shared"),
			term("preInstalledSw", "NA"),
			term("capacitystatus", "Used"),
			term("licenseModel", "No License required"),
		},
		MaxResults: aws.Int32(10),
	})
	if err != nil {
		return 0, fmt.Errorf("on-demand price of %s: %s", machineType, fault("GetProducts", err))
	}
	return hourlyOnDemandUSD(machineType, p.region, out.PriceList)
}

// priceDocument is the part of a Price List API product document that
// holds its on-demand price: terms.OnDemand.<offer>.priceDimensions.<rate>.
type priceDocument struct {
	Terms struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				Unit         string            `json:"unit"`
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// hourlyOnDemandUSD is the highest hourly USD price of the documents.
func hourlyOnDemandUSD(machineType, region string, documents []string) (float64, error) {
	var highest float64
	found := false
	for _, raw := range documents {
		var doc priceDocument
		if err := json.Unmarshal([]byte(raw), &doc); err != nil {
			return 0, fmt.Errorf("on-demand price of %s: a product document is not JSON: %v", machineType, err)
		}
		for _, offer := range doc.Terms.OnDemand {
			for _, dim := range offer.PriceDimensions {
				usd, err := strconv.ParseFloat(dim.PricePerUnit["USD"], 64)
				if dim.Unit != "Hrs" || err != nil {
					continue
				}
				highest, found = max(highest, usd), true
			}
		}
	}
	if !found {
		return 0, fmt.Errorf("the Price List API has no on-demand Linux price for %s in %s", machineType, region)
	}
	return highest, nil
}
