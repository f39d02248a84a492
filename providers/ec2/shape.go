package ec2

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/runfleet/runfleet/providers"
)

// A shaped create (providers.CreateRequest.Shape) launches the cheapest
// instance types that satisfy the shape. EC2's API has no prices, so
// "cheapest" is a rule, not a lookup: fewest vCPUs, then least memory,
// then the family the pool's policy lists first (operators list families
// cheapest first). Within one generation on-demand prices grow with vCPUs
// and memory, so the smallest type that fits is the cheapest in practice;
// the family order settles equal sizes (c7g.xlarge before m7g.xlarge when
// both fit, because c7g has the less memory; m7g before m7i when the
// operator lists it first).

// shapeTypeChoices is how many instance types a shaped create tries, best
// first, when EC2 has no capacity for the one before: enough to move past a
// sold-out size, few enough that a job never lands on a machine far above
// what it asked for.
const shapeTypeChoices = 3

// typeFactsTTL is how long instance type facts are trusted. They change
// when AWS launches new sizes, which is rare; an hour bounds the calls to
// one per family per hour per process.
const typeFactsTTL = time.Hour

// ErrNoShapeMatch is a shaped create no instance type of the allowed
// families satisfies within the pool's limits (or the image's
// architecture). Retrying does not help; the pool's policy or the job's
// labels must change.
var ErrNoShapeMatch = errors.New("ec2 provider: no instance type satisfies the shape")

// typeFacts is what choosing an instance type needs to know of it.
type typeFacts struct {
	name      string
	family    string
	vcpus     int
	memoryMiB int64
	arches    []string
	spot      bool // offered on the spot market
}

// typeCatalog caches instance type facts per family, and each image's
// architecture (AMIs are immutable). Safe for concurrent use; the first
// create that needs a family fetches it while the others wait, so a burst
// of jobs makes one call.
type typeCatalog struct {
	mu       sync.Mutex
	now      func() time.Time
	families map[string]familyFacts
	arches   sync.Map // image id → architecture
}

type familyFacts struct {
	types     []typeFacts
	fetchedAt time.Time
}

func newTypeCatalog() *typeCatalog {
	return &typeCatalog{now: time.Now, families: map[string]familyFacts{}}
}

// facts returns the types of families, fetching those not known or older
// than typeFactsTTL in one DescribeInstanceTypes listing. Bare-metal types
// are left out: a runner never needs a whole host.
func (c *typeCatalog) facts(ctx context.Context, client *awsec2.Client, families []string) ([]typeFacts, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	var stale []string
	for _, f := range families {
		if got, ok := c.families[f]; !ok || now.Sub(got.fetchedAt) > typeFactsTTL {
			stale = append(stale, f)
		}
	}
	if len(stale) > 0 {
		fetched, err := describeFamilies(ctx, client, stale)
		if err != nil {
			return nil, err
		}
		for _, f := range stale {
			c.families[f] = familyFacts{types: fetched[f], fetchedAt: now}
		}
	}
	var out []typeFacts
	for _, f := range families {
		out = append(out, c.families[f].types...)
	}
	return out, nil
}

func describeFamilies(ctx context.Context, client *awsec2.Client, families []string) (map[string][]typeFacts, error) {
	patterns := make([]string, len(families))
	for i, f := range families {
		patterns[i] = f + ".*"
	}
	in := &awsec2.DescribeInstanceTypesInput{Filters: []ec2types.Filter{
		{Name: aws.String("instance-type"), Values: patterns},
		{Name: aws.String("bare-metal"), Values: []string{"false"}},
	}}
	out := map[string][]typeFacts{}
	pages := awsec2.NewDescribeInstanceTypesPaginator(client, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fault("DescribeInstanceTypes", err), err)
		}
		for _, t := range page.InstanceTypes {
			f := toFacts(t)
			if slices.Contains(families, f.family) {
				out[f.family] = append(out[f.family], f)
			}
		}
	}
	return out, nil
}

func toFacts(t ec2types.InstanceTypeInfo) typeFacts {
	name := string(t.InstanceType)
	family, _, _ := strings.Cut(name, ".")
	f := typeFacts{name: name, family: family}
	if t.VCpuInfo != nil {
		f.vcpus = int(aws.ToInt32(t.VCpuInfo.DefaultVCpus))
	}
	if t.MemoryInfo != nil {
		f.memoryMiB = aws.ToInt64(t.MemoryInfo.SizeInMiB)
	}
	if t.ProcessorInfo != nil {
		for _, a := range t.ProcessorInfo.SupportedArchitectures {
			f.arches = append(f.arches, string(a))
		}
	}
	f.spot = slices.Contains(t.SupportedUsageClasses, ec2types.UsageClassTypeSpot)
	return f
}

// chooseTypes returns up to shapeTypeChoices instance types for shape,
// cheapest first (see the rule above). arch is the image's architecture,
// "" when unknown: then every choice has the architecture of the best one,
// as one image boots on one architecture only. With spot, only types sold
// on the spot market are chosen (on-demand is the fallback for them all).
func chooseTypes(facts []typeFacts, shape *providers.Shape, arch string, spot bool) []string {
	var fit []typeFacts
	for _, t := range facts {
		switch {
		case t.vcpus < shape.MinCPU || t.memoryMiB < int64(shape.MinMemoryGiB)*1024:
		case shape.MaxCPU > 0 && t.vcpus > shape.MaxCPU:
		case shape.MaxMemoryGiB > 0 && t.memoryMiB > int64(shape.MaxMemoryGiB)*1024:
		case arch != "" && !slices.Contains(t.arches, arch):
		case spot && !t.spot:
		default:
			fit = append(fit, t)
		}
	}
	slices.SortFunc(fit, func(a, b typeFacts) int {
		return cmp.Or(
			cmp.Compare(a.vcpus, b.vcpus),
			cmp.Compare(a.memoryMiB, b.memoryMiB),
			cmp.Compare(slices.Index(shape.Families, a.family), slices.Index(shape.Families, b.family)),
			strings.Compare(a.name, b.name),
		)
	})
	if len(fit) > 0 && arch == "" && len(fit[0].arches) > 0 {
		first := fit[0].arches
		fit = slices.DeleteFunc(fit, func(t typeFacts) bool {
			return !slices.ContainsFunc(t.arches, func(a string) bool { return slices.Contains(first, a) })
		})
	}
	var out []string
	for _, t := range fit[:min(len(fit), shapeTypeChoices)] {
		out = append(out, t.name)
	}
	return out
}

// shapedSettings are the settings one create launches with: the pool's,
// or, for a shaped request, the pool's with the chosen instance types, the
// shape's image, root volume size and market.
func (p *Provider) shapedSettings(ctx context.Context, shape *providers.Shape) (Settings, error) {
	s := p.settings
	if shape == nil {
		return s, nil
	}
	s.InstanceTypes = slices.Clone(s.InstanceTypes)
	if shape.Image != "" {
		s.ImageID = shape.Image
	}
	if shape.DiskGiB > 0 {
		if strings.HasPrefix(s.ImageID, "resolve:ssm:") {
			return Settings{}, fmt.Errorf("the job asks for a %d GiB disk, but image %s is a resolve:ssm parameter whose root device cannot be looked up; give the pool's image (or the alias) as an AMI id", shape.DiskGiB, s.ImageID)
		}
		s.RootVolumeSize = int32(shape.DiskGiB)
	}
	switch shape.Market {
	case providers.MarketSpot:
		s.Spot = true
	case providers.MarketOnDemand:
		s.Spot = false
	}
	facts, err := p.types.facts(ctx, p.client, shape.Families)
	if err != nil {
		return Settings{}, err
	}
	arch, err := p.imageArch(ctx, s)
	if err != nil {
		return Settings{}, err
	}
	s.InstanceTypes = chooseTypes(facts, shape, arch, s.Spot)
	if len(s.InstanceTypes) == 0 {
		return Settings{}, fmt.Errorf("%w: at least %d vCPUs and %d GiB, at most %d vCPUs and %d GiB, families %s%s",
			ErrNoShapeMatch, shape.MinCPU, shape.MinMemoryGiB, shape.MaxCPU, shape.MaxMemoryGiB, strings.Join(shape.Families, ", "), archNote(arch))
	}
	return s, nil
}

func archNote(arch string) string {
	if arch == "" {
		return ""
	}
	return ", architecture " + arch + " (the image's)"
}

// imageArch is the architecture of the image s launches, "" when it
// cannot be known before launch (a resolve:ssm parameter).
func (p *Provider) imageArch(ctx context.Context, s Settings) (string, error) {
	image := s.ImageID
	if image == "" && s.LaunchTemplate != "" {
		var err error
		if image, err = p.templateImage(ctx); err != nil {
			return "", err
		}
	}
	if image == "" || strings.HasPrefix(image, "resolve:ssm:") {
		return "", nil
	}
	if arch, ok := p.types.arches.Load(image); ok {
		return arch.(string), nil
	}
	out, err := p.client.DescribeImages(ctx, &awsec2.DescribeImagesInput{ImageIds: []string{image}})
	if err != nil {
		return "", fmt.Errorf("%s: %w", fault("DescribeImages", err), err)
	}
	if len(out.Images) == 0 {
		return "", fmt.Errorf("image %s does not exist (or is not visible to this account)", image)
	}
	arch := string(out.Images[0].Architecture)
	p.types.arches.Store(image, arch)
	return arch, nil
}
