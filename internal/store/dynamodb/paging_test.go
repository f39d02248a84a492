package dynamodb

import (
	"context"
	"slices"
	"testing"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testenv"
)

// Live instances read through many small Query pages in every shard:
// nothing is lost or repeated at a page boundary. (Shards of more than one
// BatchGetItem's 100 keys are read in TestBurstSpreadsIndexWritesOverShards.)
func TestListsReadEveryPage(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, testenv.DynamoDB(t))
	s.pageSize = 2

	var all, small []string
	for job := int64(1); job <= batchGetLimit+5; job++ {
		pool := "big"
		if job%20 == 0 {
			pool = "small"
		}
		inst := testInstance(pool, job)
		mustCreate(t, s, inst)
		all = append(all, inst.Name)
		if pool == "small" {
			small = append(small, inst.Name)
		}
	}
	slices.Sort(all)
	slices.Sort(small)

	live, err := s.ListLiveInstances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := instanceNames(live); !slices.Equal(got, all) {
		t.Fatalf("ListLiveInstances: %d names, want %d:\n got %v", len(got), len(all), got)
	}
	bySmall, err := s.ListInstancesByPool(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	if got := instanceNames(bySmall); !slices.Equal(got, small) {
		t.Fatalf("ListInstancesByPool(small) = %v, want %v", got, small)
	}
	for _, in := range bySmall {
		if in.Pool != "small" || in.Version != 1 || in.Status != runner.StatusPendingCreate {
			t.Fatalf("listed instance incomplete: %+v", in)
		}
	}
}

func instanceNames(list []*runner.Instance) []string {
	out := make([]string, len(list))
	for i, in := range list {
		out[i] = in.Name
	}
	return out
}
