package ec2

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
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

// priceListServer is a fake of the Price List API's GetProducts (AWS JSON
// 1.1, as AWS documents it; moto 5.2.1 does not implement the service):
// it answers the offer of the documented shape for a Linux, shared,
// licence-free machine of the region, and fails the test on any other
// question.
func priceListServer(t *testing.T, region string, documents ...string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("X-Amz-Target"); got != "AWSPriceListService.GetProducts" {
			t.Errorf("X-Amz-Target = %q", got)
		}
		var in struct {
			ServiceCode string
			Filters     []struct{ Type, Field, Value string }
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			t.Errorf("request body: %v", err)
		}
		filters := map[string]string{}
		for _, f := range in.Filters {
			if f.Type != "TERM_MATCH" {
				t.Errorf("filter %+v is not TERM_MATCH", f)
			}
			filters[f.Field] = f.Value
		}
		want := map[string]string{"instanceType": "m7g.large", "regionCode": region, "operatingSystem": "Linux", "tenancy": "Shared",
			"preInstalledSw": "NA", "capacitystatus": "Used", "licenseModel": "No License required"}
		if in.ServiceCode != "AmazonEC2" || !maps.Equal(filters, want) {
			t.Errorf("GetProducts(%s, %v), want AmazonEC2 %v", in.ServiceCode, filters, want)
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		_ = json.NewEncoder(w).Encode(map[string]any{"FormatVersion": "aws_v1", "PriceList": documents})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// offer is a product document as the Price List API returns it, with one
// hourly on-demand price.
func offer(usd string) string {
	return `{"product":{"productFamily":"Compute Instance","attributes":{"instanceType":"m7g.large","operatingSystem":"Linux","tenancy":"Shared"},"sku":"ABC"},` +
		`"serviceCode":"AmazonEC2","terms":{"OnDemand":{"ABC.JRTCKXETXF":{"priceDimensions":{"ABC.JRTCKXETXF.6YS6EN2CT7":{"unit":"Hrs","endRange":"Inf",` +
		`"description":"$` + usd + ` per On Demand Linux m7g.large Instance Hour","appliesTo":[],"rateCode":"ABC.JRTCKXETXF.6YS6EN2CT7","beginRange":"0",` +
		`"pricePerUnit":{"USD":"` + usd + `"}}},"sku":"ABC","effectiveDate":"2026-11-01T00:00:00Z","offerTermCode":"JRTCKXETXF","termAttributes":{}}}},` +
		`"version":"20261101000000","publicationDate":"2026-11-01T00:00:00Z"}`
}

func pricingClient(url string) *pricing.Client {
	return pricing.New(pricing.Options{
		Region: pricingRegion, BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
	})
}

// An on-demand machine is priced from the Price List API's offer for the
// provider's region.
func TestOnDemandPriceComesFromThePriceList(t *testing.T) {
	srv := priceListServer(t, "eu-west-1", offer("0.0892000000"))
	p := &Provider{pricing: pricingClient(srv.URL), region: "eu-west-1"}
	for _, market := range []string{"on-demand", ""} {
		if usd, err := p.HourlyPriceUSD(context.Background(), "m7g.large", market); err != nil || usd != 0.0892 {
			t.Fatalf("HourlyPriceUSD(%q) = %v, %v; want 0.0892", market, usd, err)
		}
	}
	none := priceListServer(t, "eu-west-1")
	p = &Provider{pricing: pricingClient(none.URL), region: "eu-west-1"}
	if _, err := p.HourlyPriceUSD(context.Background(), "m7g.large", "on-demand"); err == nil || !strings.Contains(err.Error(), "no on-demand Linux price for m7g.large in eu-west-1") {
		t.Fatalf("no offer: %v", err)
	}
}

func TestHourlyOnDemandUSDReadsTheHourlyDimensions(t *testing.T) {
	upfront := strings.Replace(offer("120"), `"unit":"Hrs"`, `"unit":"Quantity"`, 1)
	if usd, err := hourlyOnDemandUSD("m7g.large", "eu-west-1", []string{offer("0.0816"), upfront, offer("0.0900")}); err != nil || usd != 0.09 {
		t.Fatalf("= %v, %v; want the highest hourly price 0.09", usd, err)
	}
	if _, err := hourlyOnDemandUSD("m7g.large", "eu-west-1", []string{"not json"}); err == nil {
		t.Fatal("a document that is not JSON was read")
	}
}
