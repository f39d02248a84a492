package lambdafn_test

import (
	"fmt"
	"testing"

	"github.com/runfleet/runfleet/internal/cache/cachetest"
)

// BenchmarkMetadataFunctionPath is the AWS path end to end with GitHub's
// own client: save and restore through the machine's agent, whose calls go
// to the metadata function (its deployed bootstrap under the Lambda
// Runtime API, the index in DynamoDB Local) and whose bytes go straight to
// the bucket (moto). Its time beside internal/cacheagent's
// BenchmarkRealClientS3 (the same client and agent, with serve's handler
// answering the calls) is what the function costs; `make bench-cache`
// runs both (docs/benchmarks.md). Making and hashing the data are not
// timed.
func BenchmarkMetadataFunctionPath(b *testing.B) {
	mc := newMetadataCache(b)
	m := mc.machine(b, 7000034101, "octo-org/app", "refs/heads/main")
	saves := 0
	for _, sz := range []struct {
		name string
		n    int
	}{{"100MB", 100 << 20}, {"1GB", 1 << 30}} {
		b.Run(sz.name, func(b *testing.B) {
			m.t = b
			b.SetBytes(int64(sz.n))
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				ws := b.TempDir()
				want := cachetest.WriteData(b, ws, sz.n)
				b.StartTimer()
				saves++
				key := fmt.Sprintf("big-%s-%d", sz.name, saves)
				if res, out := m.run(mc.client, ws, "save", "data", key); res["id"] == nil || res["id"] == float64(-1) {
					b.Fatalf("save: %s", out)
				}
				cachetest.ClearData(b, ws)
				if res, out := m.run(mc.client, ws, "restore", "data", key); res["matched"] != key {
					b.Fatalf("restore matched %v:\n%s", res["matched"], out)
				}
				b.StopTimer()
				if got, ok := cachetest.ReadData(b, ws); !ok || got != want {
					b.Fatal("restored bytes differ")
				}
				b.StartTimer()
			}
		})
	}
}
