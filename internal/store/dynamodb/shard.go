package dynamodb

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// shardCount is how many partitions of liveIndex each kind of item is
// spread over: 16 partitions take about 16,000 index writes/s, far beyond
// any burst GitHub's webhooks can bring one installation.
//
// It is part of the stored layout. Raising it is safe: items keep the shard
// they were written with, which is still below the new count and so still
// queried. Lowering it would hide every item in a shard no longer queried.
const shardCount = 16

// The two kinds of item in liveIndex have shards of their own, so listing
// instances never reads a job's index entry and the other way round.
const (
	instanceShardPrefix = "instance#"
	jobShardPrefix      = "job#"
)

// shardOf picks the shard of the item with partition key pk. The hash is
// fixed forever (unlike hash/maphash, whose seed is per process), so every
// process and every release puts an item in the same shard; SHA-256 rather
// than FNV because FNV-1a's low bits depend only on the low bits of each
// byte, so keys that differ in a few characters could crowd into few
// shards.
func shardOf(pk string) int {
	sum := sha256.Sum256([]byte(pk))
	return int(binary.BigEndian.Uint64(sum[:8]) % shardCount)
}

func shardKey(prefix string, shard int) string {
	return fmt.Sprintf("%s%02d", prefix, shard)
}

// shardKeys lists every shard of one kind, the partitions a list queries.
func shardKeys(prefix string) []string {
	keys := make([]string, shardCount)
	for i := range keys {
		keys[i] = shardKey(prefix, i)
	}
	return keys
}
