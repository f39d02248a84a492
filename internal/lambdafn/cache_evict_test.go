package lambdafn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/runfleet/runfleet/internal/cache"
	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/internal/testenv"
)

const cacheTestKey = "lambda-test-instance-token-key-0123456789abcdef"

// cacheStack is a stack deployed with the cache (CacheBucketMaxAgeDays >
// 0): its index in DynamoDB Local, its bucket on moto, the functions'
// environment as template.yaml gives it, and a config whose cache holds at
// most maxBytes.
type cacheStack struct {
	*stack
	index, bucket string
	s3            *s3.Client
}

func newCacheStack(t testing.TB, maxBytes, maxEntryBytes int64) *cacheStack {
	t.Helper()
	ctx := context.Background()
	s3c := s3.NewFromConfig(testenv.AWSConfig(t), func(o *s3.Options) { o.UsePathStyle = true })
	bucket := strings.Trim(strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "evict"), "_", "-")), "-")
	if len(bucket) > 63 {
		bucket = strings.Trim(bucket[len(bucket)-63:], "-")
	}
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	config := testConfig + fmt.Sprintf(`server:
  public_url: %s
cache:
  s3: {bucket: %s, endpoint: %s, path_style: true}
  pools: [%s]
  max_bytes: %d
  max_entry_bytes: %d
  evict_every: 10m
`, metadataFunctionURL, bucket, testenv.MotoEndpoint(t), linuxPool, maxBytes, maxEntryBytes)
	s := newStack(t, stackOptions{config: config, infoLogs: true})
	index := testenv.UniqueName(t, "cacheindex")
	if err := cache.CreateDynamoTable(ctx, s.ddb, index); err != nil {
		t.Fatal(err)
	}
	key, err := secretsmanager.NewFromConfig(s.aws).CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name: aws.String(testenv.UniqueName(t, "token-key")), SecretString: aws.String(cacheTestKey),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(lambdafn.EnvInstanceTokenKeyARN, aws.ToString(key.ARN))
	t.Setenv(lambdafn.EnvCacheTable, index)
	t.Setenv(lambdafn.EnvCacheBucket, bucket)
	return &cacheStack{stack: s, index: index, bucket: bucket, s3: s3c}
}

// indexStore opens the stack's index as one more instance of the metadata
// function would, on clock.
func (c *cacheStack) indexStore(t testing.TB, clock *testclock.Clock) *cache.Dynamo {
	t.Helper()
	st, err := cache.NewDynamo(cache.DynamoOptions{DB: c.ddb, Table: c.index, S3: c.s3, Bucket: c.bucket,
		Policy: cache.EvictionPolicy{MaxAge: 7 * 24 * time.Hour}, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// save stores an entry of size bytes as the machine's agent does: one
// part on a presigned URL, completed, finalized.
func save(t testing.TB, st *cache.Dynamo, ref cache.Ref, size int) cache.Entry {
	t.Helper()
	ctx := context.Background()
	e, err := st.Reserve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	u, hdr, err := st.PresignPart(ctx, e.ID, 1, int64(size), int64(size), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPut, u, bytes.NewReader(make([]byte, size)))
	for k, v := range hdr {
		if k != "Host" {
			req.Header[k] = v
		}
	}
	req.ContentLength = int64(size)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("part upload: %s", resp.Status)
	}
	if err := st.CompleteParts(ctx, e.ID, []int32{1}, int64(size)); err != nil {
		t.Fatal(err)
	}
	if e, err = st.Finalize(ctx, ref, int64(size)); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestReconcilerEvictsTheCacheBySize: on AWS the reconciler function
// applies cache.max_bytes. Three entries of 1 MiB in a cache of at most
// 2.1 MB: the one read least recently goes (not the oldest saved: it was
// read since), at the first tick; the next tick within evict_every scans
// nothing. The index's size is published as the same gauges serve has.
func TestReconcilerEvictsTheCacheBySize(t *testing.T) {
	const mib = 1 << 20
	c := newCacheStack(t, 2_200_000, mib)
	ctx := context.Background()
	// Saved and read in the last hours, well within max_age, of the real
	// clock: the reconciler function takes no clock, so the entries' times
	// are the real clock's, which the test-clock shift does not move.
	clock := testclock.AtRealNow()
	clock.AdvanceTo(clock.Now().Add(-3 * time.Hour).Truncate(time.Millisecond))
	st := c.indexStore(t, clock)
	repo := cache.RepoIDFor("octo-org/app")
	ref := func(key string) cache.Ref {
		return cache.Ref{RepoID: repo, Scope: "refs/heads/main", Key: key, Version: "v1"}
	}
	save(t, st, ref("first"), mib)
	clock.Advance(time.Minute)
	save(t, st, ref("second"), mib)
	clock.Advance(time.Minute)
	save(t, st, ref("third"), mib)
	clock.Advance(time.Minute)
	if _, ok, err := st.Lookup(ctx, repo, []string{"refs/heads/main"}, []string{"first"}, "v1"); !ok || err != nil {
		t.Fatalf("reading first: %v %v", ok, err)
	}

	reconciler := c.reconciler()
	var tick events.EventBridgeEvent
	mustUnmarshal(t, readTestdata(t, "scheduled-event.json"), &tick)
	invocation, id := c.invocation()
	if _, err := reconciler(invocation, tick); err != nil {
		t.Fatal(err)
	}
	lines := c.logs.Lines(t, map[string]any{"msg": "cache eviction finished", "aws_request_id": id})
	if len(lines) != 1 || lines[0]["evicted_entries"] != float64(1) || lines[0]["evicted_bytes"] != float64(mib) ||
		lines[0]["stored_entries"] != float64(2) || lines[0]["stored_bytes"] != float64(2*mib) {
		t.Fatalf("eviction log lines %v, want one: 1 entry of 1 MiB evicted, 2 kept", lines)
	}
	for key, kept := range map[string]bool{"first": true, "second": false, "third": true} {
		_, ok, err := st.Lookup(ctx, repo, []string{"refs/heads/main"}, []string{key}, "v1")
		if err != nil || ok != kept {
			t.Errorf("%s: found %v (%v), want %v: the least recently read goes first", key, ok, err, kept)
		}
	}
	if got := c.emfValues(t, metrics.CacheStoredBytes, nil); len(got) != 1 || got[0] != 2*mib {
		t.Errorf("%s = %v, want one point of %d", metrics.CacheStoredBytes, got, 2*mib)
	}
	if got := c.emfValues(t, metrics.CacheEntries, nil); len(got) != 1 || got[0] != 2 {
		t.Errorf("%s = %v, want one point of 2", metrics.CacheEntries, got)
	}
	if units := emfUnits(t, c.stack, metrics.CacheStoredBytes); len(units) != 1 || units[0] != "Bytes" {
		t.Errorf("%s units %v, want Bytes", metrics.CacheStoredBytes, units)
	}
	c.checkVocabulary(t)

	// Within evict_every another tick (another execution environment
	// alike: the lease is in the store) scans nothing.
	save(t, st, ref("fourth"), mib)
	invocation, id = c.invocation()
	if _, err := c.reconciler()(invocation, tick); err != nil {
		t.Fatal(err)
	}
	if got := c.logs.Lines(t, map[string]any{"msg": "cache eviction finished", "aws_request_id": id}); len(got) != 0 {
		t.Fatalf("a second eviction within evict_every: %v", got)
	}
	if l, err := c.stack.store.GetLease(ctx, "cache-evict"); err != nil || l.Holder != "reconciler/req-0001" {
		t.Fatalf("eviction lease %+v, %v: want the first tick's", l, err)
	}
}

// emfUnits are the units the EMF lines declare metric with.
func emfUnits(t testing.TB, s *stack, metric string) []string {
	t.Helper()
	var out []string
	for _, line := range s.metrics.Lines(t, nil) {
		d, ok := declaringDirective(line, metric)
		if !ok {
			continue
		}
		for _, m := range d["Metrics"].([]any) {
			if m := m.(map[string]any); m["Name"] == metric {
				u, _ := m["Unit"].(string)
				out = append(out, u)
			}
		}
	}
	return out
}

// call is one request to the metadata function's Function URL; rawURL is
// a path or a URL under it, token the job's cache token.
func (c *cacheStack) call(t testing.TB, fn lambdafn.FunctionURLHandler, method, rawURL, token, body string) (int, string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, _ := c.invocation()
	resp, err := fn(ctx, events.LambdaFunctionURLRequest{
		RawPath: u.Path, RawQueryString: u.RawQuery, Body: body,
		Headers: map[string]string{"authorization": "Bearer " + token, "content-type": "application/json"},
		RequestContext: events.LambdaFunctionURLRequestContext{
			DomainName: strings.TrimSuffix(strings.TrimPrefix(metadataFunctionURL, "https://"), "/"),
			HTTP:       events.LambdaFunctionURLRequestContextHTTPDescription{Method: method, Path: u.Path, SourceIP: "10.0.0.7"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Body
}

// TestMetadataFunctionPublishesCacheMetrics: each invocation of the
// metadata function writes its own cache lookups by result and the bytes
// of the parts it presigned, under serve's names.
func TestMetadataFunctionPublishesCacheMetrics(t *testing.T) {
	c := newCacheStack(t, 100<<20, 10<<20)
	// The real clock's hour ago: the metadata function takes no clock.
	clock := testclock.AtRealNow()
	clock.AdvanceTo(clock.Now().Add(-time.Hour).Truncate(time.Millisecond))
	repo := cache.RepoIDFor("octo-org/app")
	save(t, c.indexStore(t, clock), cache.Ref{RepoID: repo, Scope: "refs/heads/main", Key: "deps", Version: "v1"}, 4096)
	tokens, err := cache.NewTokens([]byte(cacheTestKey), controllerID, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokens.Mint("m-1", cache.Grant{RepoID: repo, Repo: "octo-org/app", Write: "refs/heads/main", Read: []string{"refs/heads/main"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	fn := c.metadata()
	const twirp = cache.TwirpPrefix
	for _, key := range []string{"deps", "deps", "missing"} {
		if st, body := c.call(t, fn, http.MethodPost, twirp+"GetCacheEntryDownloadURL", tok, `{"key":"`+key+`","version":"v1"}`); st != http.StatusOK {
			t.Fatalf("lookup %s: %d %s", key, st, body)
		}
	}
	st, body := c.call(t, fn, http.MethodPost, twirp+"CreateCacheEntry", tok, `{"key":"build","version":"v1"}`)
	var created struct {
		OK  bool   `json:"ok"`
		URL string `json:"signed_upload_url"`
	}
	if st != http.StatusOK || json.Unmarshal([]byte(body), &created) != nil || !created.OK {
		t.Fatalf("create: %d %s", st, body)
	}
	if st, body := c.call(t, fn, http.MethodPost, created.URL+"&runfleet=presign&part=1&size=5000", "", ""); st != http.StatusOK {
		t.Fatalf("presign: %d %s", st, body)
	}
	// One point per invocation: two hits, one miss, 5000 bytes presigned.
	for _, want := range []struct {
		metric, label, value string
		points               []float64
	}{
		{metrics.CacheLookups, metrics.LabelResult, "hit", []float64{1, 1}},
		{metrics.CacheLookups, metrics.LabelResult, "miss", []float64{1}},
		{metrics.CacheTransferBytes, metrics.LabelOp, "upload", []float64{5000}},
		{metrics.CacheTransferBytes, metrics.LabelOp, "download", nil},
	} {
		if got := c.emfValues(t, want.metric, map[string]string{want.label: want.value}); !slices.Equal(got, want.points) {
			t.Errorf("%s{%s=%s} = %v, want %v", want.metric, want.label, want.value, got, want.points)
		}
	}
	if units := emfUnits(t, c.stack, metrics.CacheTransferBytes); len(units) == 0 || slices.ContainsFunc(units, func(u string) bool { return u != "Bytes" }) {
		t.Errorf("%s units %v, want Bytes", metrics.CacheTransferBytes, units)
	}
	c.checkVocabulary(t)
}
