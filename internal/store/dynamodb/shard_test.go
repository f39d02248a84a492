package dynamodb

import (
	"fmt"
	"testing"
)

// The shard of a key is stored layout: a change in shardOf would strand
// every item in a shard no list reads for it, so a few are pinned here.
func TestShardOfIsPinned(t *testing.T) {
	for _, c := range []struct{ prefix, pk, want string }{
		{jobShardPrefix, "JOB#1#1", "job#01"},
		{instanceShardPrefix, "INSTANCE#runfleet-linux-1-1", "instance#11"},
	} {
		if got := shardKey(c.prefix, shardOf(c.pk)); got != c.want {
			t.Errorf("shard of %q = %s, want %s", c.pk, got, c.want)
		}
	}
	keys := shardKeys(jobShardPrefix)
	if len(keys) != shardCount || keys[0] != "job#00" || keys[shardCount-1] != fmt.Sprintf("job#%02d", shardCount-1) {
		t.Fatalf("shardKeys = %v", keys)
	}
}
