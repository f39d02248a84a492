package config

import (
	"fmt"

	"github.com/runfleet/runfleet/internal/github/budget"
	"github.com/runfleet/runfleet/internal/metadata"
	"github.com/runfleet/runfleet/internal/runner"
)

// Where a key is used: embedded mode (`runfleet serve`), the AWS stack's
// Lambda functions, or both.
const (
	both  = "both"
	serve = "serve"
)

// keyDoc is what docs/config.md says about a key beyond what the types
// say (its path, type and any default applyDefaults fills in).
type keyDoc struct {
	modes string
	// unit of a number, when it has one.
	unit string
	// fallback is the default of a key whose zero value is defaulted
	// elsewhere than applyDefaults (the GitHub client, the breaker, the
	// metadata endpoint); the test refuses one for a key applyDefaults
	// already fills.
	fallback string
	doc      string
}

// keyDocs documents every key of Config. TestConfigReferenceIsComplete
// fails when a key of the types has no entry here or an entry names no
// key, so a new setting cannot ship undocumented.
var keyDocs = map[string]keyDoc{
	"controller_id": {modes: both, doc: "Names this installation: it goes into the name and tags of every runner and machine runfleet makes, so two installations never touch each other's. 1–64 lower-case letters, digits or `-`. **Required.** On AWS the stack's `ControllerId` parameter must repeat it."},

	"github.simulated":                     {modes: both, doc: "`true` replaces GitHub with an in-process simulation (demos and tests; logged loudly at start). Exactly one of `simulated`, `app` and `token_file`/`token_env` is set."},
	"github.base_url":                      {modes: both, doc: "GitHub Enterprise Server's API root, e.g. `https://ghes.example.com/api/v3`. Empty: api.github.com."},
	"github.app":                           {modes: both, doc: "Authenticate as a GitHub App ([github-app.md](github-app.md)): the recommended way."},
	"github.app.id":                        {modes: both, doc: "The App's numeric id (its settings page). **Required** with `app`."},
	"github.app.installation_id":           {modes: both, doc: "A fixed installation id. `0`: the installation that sent each webhook, and for other calls the one GitHub says covers the pool's owner."},
	"github.app.private_key_file":          {modes: serve, doc: "File holding the App's private key (PEM). One of `private_key_file` and `private_key_env` is required with `app`."},
	"github.app.private_key_env":           {modes: both, doc: "Environment variable holding the App's private key (PEM). On AWS: `RUNFLEET_GITHUB_PRIVATE_KEY`, answered from `GitHubSecretArn`."},
	"github.extra_apps":                    {modes: both, doc: "More GitHub Apps, installed on the same owners, that lend their API budget: each installation adds about 180 JIT runners a minute ([several Apps](github-app.md#several-apps)). Requires `app`; they need no webhook."},
	"github.extra_apps[].id":               {modes: both, doc: "The extra App's numeric id; each App once."},
	"github.extra_apps[].installation_id":  {modes: both, doc: "A fixed installation id. `0`: the installation GitHub says covers each owner (looked up once per owner)."},
	"github.extra_apps[].private_key_file": {modes: serve, doc: "File holding the extra App's private key (PEM). One of `private_key_file` and `private_key_env` is required."},
	"github.extra_apps[].private_key_env":  {modes: both, doc: "Environment variable holding the extra App's private key (PEM). On AWS: `RUNFLEET_GITHUB_EXTRA_APP_KEY_<n>` for the n-th, answered from the n-th of `GitHubExtraAppSecretArns`."},
	"github.token_file":                    {modes: serve, doc: "File holding a personal access token, instead of an App."},
	"github.token_env":                     {modes: both, doc: "Environment variable holding a personal access token, instead of an App. On AWS: `RUNFLEET_GITHUB_TOKEN`, answered from `GitHubSecretArn`."},
	"github.hooks":                         {modes: both, doc: "Organization or repository webhooks that send runfleet its `workflow_job` events, instead of or beside the App's. GitHub never resends a failed delivery; each reconcile pass reads these webhooks' delivery logs and recovers what failed ([lost deliveries with a token](github-app.md#lost-deliveries-with-a-token)). With a token, the only way to recover a lost delivery."},
	"github.hooks[].owner":                 {modes: both, doc: "The webhook's owner: `org` or `org/repo` (enterprise webhooks have no delivery log API). Its log is read with the token (which needs `admin:org_hook`, or `admin:repo_hook` for a repository's) or the App's installation on that owner (\"Webhooks: Read-only\")."},
	"github.hooks[].id":                    {modes: both, doc: "The webhook's id: the number at the end of its settings URL (`…/settings/hooks/<id>`)."},
	"github.budget.points_per_minute":      {modes: both, unit: "points a minute", fallback: fmt.Sprint(budget.DefaultPointsPerMinute), doc: "GitHub's secondary limit paced per credential: a GET costs 1 point, a write 5. At most 900, GitHub's limit ([github-budget.md](github-budget.md))."},
	"github.budget.max_in_flight":          {modes: both, unit: "requests", fallback: fmt.Sprint(budget.DefaultMaxInFlight), doc: "GitHub requests in flight at once per credential and process. At most 100, GitHub's limit."},
	"webhook.secret_file":                  {modes: serve, doc: "File holding the webhook secret GitHub signs deliveries with. One of `secret_file` and `secret_env` is **required**."},
	"webhook.secret_env":                   {modes: both, doc: "Environment variable holding the webhook secret. On AWS: `RUNFLEET_WEBHOOK_SECRET`, answered from `WebhookSecretArn`."},
	"webhook.max_body_bytes":               {modes: both, unit: "bytes", doc: "Larger deliveries are refused with 413. `workflow_job` payloads are a few KB; at most 26214400 (25 MiB, the most GitHub sends)."},
	"server.listen":                        {modes: serve, doc: "HOST:PORT the webhook, operator API, status page, `/healthz` and (unless `metrics_address`) `/metrics` are served on. `serve --listen` and `RUNFLEET_LISTEN` override it."},
	"server.public_url":                    {modes: both, doc: "How runner machines reach this server (`<public_url>/metadata/…`). Setting it turns runner bootstrap on ([runner-bootstrap.md](runner-bootstrap.md)). On AWS the stack's `MetadataUrl` plays this part, and this key is read only with the cache on: set it to the `MetadataUrl` output, under which the metadata function serves the cache ([actions-cache.md](actions-cache.md#on-aws-the-metadata-function-serves-the-cache))."},
	"server.api_token_file":                {modes: serve, doc: "File holding the operator API's bearer token. With neither `api_token_file` nor `api_token_env`, the operator API is off (404) and the status page answers loopback clients only."},
	"server.api_token_env":                 {modes: serve, doc: "Environment variable holding the operator API's bearer token."},
	"server.instance_token_key_file":       {modes: serve, doc: "File holding the key (at least 32 bytes) that signs runner machines' instance tokens. Empty: `serve` generates one in `store.dir` and keeps it."},
	"server.instance_token_key_env":        {modes: serve, doc: "Environment variable holding the instance token key."},
	"server.metrics_address":               {modes: serve, doc: "HOST:PORT of a listener of its own for `GET /metrics`. Empty: `/metrics` is on `listen`."},
	"server.metrics_token_file":            {modes: serve, doc: "File holding a bearer token `GET /metrics` requires. Empty: `/metrics` is open to whoever reaches it."},
	"server.metrics_token_env":             {modes: serve, doc: "Environment variable holding the `/metrics` bearer token."},
	"store.kind":                           {modes: serve, doc: "Where `serve` keeps state (records and work queue): `bolt`, one file `<dir>/state.db` one process owns; or `postgres`, a PostgreSQL database (`dsn_file`/`dsn_env`). On AWS state is the stack's DynamoDB table and SQS queue."},
	"store.dir":                            {modes: serve, doc: "Directory of the bolt store (`state.db`) and the generated instance token key. Back it up with `runfleet backup` ([embedded-mode.md](embedded-mode.md#backup-and-restore))."},
	"store.dsn_file":                       {modes: serve, doc: "With `kind: postgres`: file holding the PostgreSQL connection string (a `postgres://` URL or `key=value` DSN). One of `dsn_file` and `dsn_env` is required; never written in the YAML or logged."},
	"store.dsn_env":                        {modes: serve, doc: "With `kind: postgres`: environment variable holding the PostgreSQL connection string."},
	"engine.workers":                       {modes: serve, doc: "Work queue consumers (creates and deletes in parallel). On AWS: the stack's `WorkerMaxConcurrency`."},
	"engine.reconcile_interval":            {modes: serve, doc: "Time between reconcile passes (a pass also runs at start). On AWS: the stack's `ReconcileSchedule`."},
	"engine.delete_backoff_min":            {modes: both, doc: "First delay before a failed delete is tried again; it doubles each time."},
	"engine.delete_backoff_max":            {modes: both, doc: "Longest delay between tries of a failed delete, and the wait after GitHub calls a runner busy (422) before its job's `completed` has arrived; once it has, a 422 is retried within 15 s. At least `delete_backoff_min`."},
	"engine.max_receives":                  {modes: serve, doc: "Tries of one work message before it is dead-lettered (`runfleet_dead_letters`). On AWS: the stack's `MaxReceiveCount`."},
	"engine.visibility_timeout":            {modes: serve, doc: "How long a taken work message stays hidden before another worker may take it (a worker that died). It also bounds a worker's create or delete: the message's redelivery takes over the create or delete its earlier receive claimed (2 s past this bound), and an instance creating longer than this plus `takeover_grace` has lost its worker and is recovered by the reconciler. On AWS: fixed by the template (1800 s)."},
	"engine.takeover_grace":                {modes: serve, doc: "How long past its bound unfinished work waits before the reconciler takes it over: a pending create or delete whose message looks lost is re-sent; creating past `visibility_timeout` and deleting past `provider_timeout` are recovered. Also the margin for clocks that disagree between serve replicas. On AWS: 1 m."},
	"metadata.runner_version":              {modes: both, fallback: metadata.DefaultRunnerVersion, doc: "The actions/runner release the install script downloads when a machine's image has none, e.g. `2.328.0`."},
	"metadata.ca_cert_bundle":              {modes: both, doc: "PEM certificates runner machines should trust besides their own (served at `system/cert-bundle`); not a secret."},
	"cache.dir":                            {modes: serve, doc: "Turns on runfleet's own actions/cache service and keeps its entries on local disk in this directory ([actions-cache.md](actions-cache.md)): `serve` answers the cache protocol of npm `@actions/cache` 6.x beside the metadata endpoints, so `server.public_url` is required. Empty: off. The machines of `cache.pools` are pointed at it. On AWS the metadata function refuses it: use `s3` with the stack's bucket."},
	"cache.s3":                             {modes: both, doc: "Keeps the cache's entries in an S3 bucket (or any S3-compatible store) instead of `dir`: uploads go from the machines' cache agent to the bucket (or stream through `serve` without it), downloads go from the bucket to the runner on presigned URLs. Credentials come from the AWS SDK's usual chain. Set `dir` or `s3`, not both. On AWS it turns the metadata function's cache on (the stack needs `CacheBucketMaxAgeDays` above 0)."},
	"cache.s3.bucket":                      {modes: both, doc: "The bucket. **Required** with `s3`. Give it a lifecycle rule that removes objects under `<prefix>staging/` after a day (uploads that never finished). On AWS it must be the stack's `CacheBucketName` output, the only bucket the metadata function may use."},
	"cache.s3.prefix":                      {modes: both, doc: "Prepended to every object key, e.g. `cache/`."},
	"cache.s3.region":                      {modes: serve, doc: "The bucket's region. Empty: the SDK's (`AWS_REGION`, the profile). On AWS the stack's bucket is in the function's region."},
	"cache.s3.endpoint":                    {modes: serve, doc: "URL of an S3-compatible store (MinIO, Ceph). Empty: AWS."},
	"cache.s3.path_style":                  {modes: serve, doc: "`true` addresses the bucket in the URL's path, as most S3-compatible stores need."},
	"cache.max_age":                        {modes: both, fallback: "168h (with dir or s3)", doc: "Evicts an entry not read for this long (GitHub's rule is 7 days). Only with `dir` or `s3`. On AWS the cache index table's TTL does it."},
	"cache.max_bytes":                      {modes: both, unit: "bytes", fallback: "107374182400 (with dir or s3)", doc: "Evicts the least recently read entries until the cache holds at most this much. Only with `dir` or `s3`. `serve` applies it every 5 minutes; on AWS the reconciler function every `evict_every`, by a scan of the cache's index ([actions-cache.md](actions-cache.md#on-aws-the-metadata-function-serves-the-cache))."},
	"cache.evict_every":                    {modes: both, fallback: "10m (with dir or s3)", doc: "How often the AWS stack's reconciler function runs the cache's eviction (`max_bytes`, and `max_age` ahead of the table's TTL): a scan of the whole index, so at most this often whatever the `ReconcileSchedule`. At least `1m`. `serve` ignores it (it evicts from memory every 5 minutes)."},
	"cache.pools":                          {modes: both, doc: "The pools whose machines run the cache agent (`runfleet cache-agent`, [actions-cache.md](actions-cache.md)), which points their jobs' `actions/cache` at this cache without a workflow change. Each must be a pool here. Empty: the cache is served, no machine is pointed at it."},
	"cache.results_hosts":                  {modes: both, fallback: "[results-receiver.actions.githubusercontent.com] (with dir or s3)", doc: "The hosts of GitHub's results service (`ACTIONS_RESULTS_URL`) that the machines' cache agent answers for. The default is github.com's; a GHE.com tenant's is its own."},
	"cache.max_entry_bytes":                {modes: both, unit: "bytes", fallback: "10737418240 (with dir or s3)", doc: "Refuses an archive bigger than this (GitHub's per-repository cap is 10 GiB); at most `max_bytes`. Only with `dir` or `s3`."},
	"pools":                                {modes: both, doc: "The runner pools. At least one is **required**; a job goes to the first pool whose labels cover its labels."},
	"pools[].name":                         {modes: both, doc: "The pool's name, unique, in runner and machine names: 1–64 lower-case letters, digits or `-`. **Required.**"},
	"pools[].owner":                        {modes: both, doc: "Whose runners: `org`, `org/repo` or `enterprise:slug`. **Required.**"},
	"pools[].labels":                       {modes: both, doc: "The runners' labels; a job matches when each of its labels is among them (case-insensitive, `self-hosted` implied). **Required**, at most 100, no `runfleet/` shape labels."},
	"pools[].min_idle":                     {modes: both, unit: "runners", doc: "Warm runners the reconciler keeps ready. At most `max_runners`."},
	"pools[].max_runners":                  {modes: both, unit: "runners", doc: "Most live instances at once; jobs beyond it wait for capacity. **Required**, at least 1."},
	"pools[].runner_group":                 {modes: both, doc: "Runner group, by name, the runners join (organization and enterprise pools). Empty: the default group."},
	"pools[].bootstrap_timeout":            {modes: both, doc: "Bounds a create call and how long a runner may take to come online before it is replaced (GARM's default)."},
	"pools[].provider_timeout":             {modes: both, doc: "Bounds every provider call but create (delete, list)."},
	"pools[].provider.type":                {modes: both, doc: "The provider: `simulated` (in-memory machines for demos and tests, [providers-simulated.md](providers-simulated.md)), `external` (a GARM provider binary, [providers-external.md](providers-external.md)), `ec2` ([providers-ec2.md](providers-ec2.md)) or `kubernetes` (a runner pod per instance, [providers-kubernetes.md](providers-kubernetes.md); not in the Lambda build). **Required.**"},
	"pools[].provider.settings":            {modes: both, doc: "The provider type's own settings, documented with each provider ([ec2](providers-ec2.md#settings), [kubernetes](providers-kubernetes.md#settings): `namespace`, `kubeconfig`, `context`, `pod_template`, `template`, `image`, `container`)."},
	"pools[].shapes":                       {modes: both, doc: "Lets the pool's jobs ask for a machine shape with `runfleet/…` labels ([providers-ec2.md](providers-ec2.md#shapes-and-policy)); `ec2`, `simulated` and `kubernetes` only (on `kubernetes` a shape is the runner container's resource requests and `families` is not needed: [providers-kubernetes.md](providers-kubernetes.md#shapes-are-resource-requests)). Absent: no shapes."},
	"pools[].shapes.families":              {modes: both, doc: "Instance families the pool may launch, cheapest first. **Required** with `shapes`."},
	"pools[].shapes.max_cpu":               {modes: both, unit: "vCPUs", doc: "Largest CPU count a job may ask for. **Required** with `shapes`."},
	"pools[].shapes.max_memory":            {modes: both, unit: "GiB", doc: "Largest memory a job may ask for. **Required** with `shapes`."},
	"pools[].shapes.max_disk":              {modes: both, unit: "GiB", doc: "Largest root volume a job may ask for. `0`: no disk requests."},
	"pools[].shapes.spot":                  {modes: both, doc: "Whether a job may ask for spot (`runfleet/spot=true`)."},
	"pools[].shapes.images":                {modes: both, doc: "Images a job may name (`runfleet/image=<alias>`): alias → AMI id or `resolve:ssm:<parameter>`."},
	"pools[].scale_set":                    {modes: both, doc: "Feeds the pool from a GitHub runner scale set instead of webhooks ([scale-sets.md](scale-sets.md)): `serve` runs a listener that long-polls the scale set (no public endpoint, nothing lost when a delivery drops), and the pool's runners register through the scale set. Needs `github.app` or a token, not `simulated`; with `extra_apps` the registration tokens come through whichever App can go soonest. On AWS the `ListenerFunction` listens, invoked every minute, each invocation resuming the session the last one left. Absent: webhooks."},
	"pools[].scale_set.name":               {modes: both, doc: "The scale set's name, what workflows put in `runs-on`; made in the pool's `runner_group` with the pool's labels if it does not exist. **Required** with `scale_set`; one pool per scale set."},
	"pools[].spot_breaker.interruptions":   {modes: both, unit: "interruptions", fallback: fmt.Sprint(runner.DefaultSpotBreakerInterruptions), doc: "Spot interruptions within `window` that turn the pool's spot off ([providers-ec2.md](providers-ec2.md#spot-interruption))."},
	"pools[].spot_breaker.window":          {modes: both, fallback: durationWords(runner.DefaultSpotBreakerWindow), doc: "The window the interruptions are counted in."},
	"pools[].spot_breaker.cooldown":        {modes: both, fallback: durationWords(runner.DefaultSpotBreakerCooldown), doc: "How long the pool stays on on-demand once the breaker opens."},
	"pools[].cost.usd_per_hour":            {modes: both, unit: "USD an hour", doc: "The price of one of the pool's machines, whatever the provider reports it to be: for an external provider's pool (its one flavor), or a rate agreed with the cloud. `0`: the `prices` table, then the provider's own price (EC2: the Price List API, spot price history)."},
	"pools[].cost.monthly_budget_usd":      {modes: both, unit: "USD", doc: "When > 0, the pool's cost this calendar month (UTC) above it is reported: `serve` logs a WARN line and sets `runfleet_cost_budget_exceeded{pool}`; on AWS the stack's `CostBudgetPool`/`CostMonthlyBudgetUsd` alarm ([runbook](runbook.md#costoverbudgetalarm)). `0`: no budget."},
	"pools[].warm":                         {modes: both, doc: "Sizes the pool's warm machines from its job ledger instead of a guessed `min_idle`: the reconciler forecasts the pool's arrivals per hour of the week and keeps the hot runners (and stopped machines, on `ec2` with `warm_pool`) that let `percentile` of jobs start within `target_queue_time` at the fewest idle machine-minutes; nothing when nothing is forecast. `min_idle` and `warm_pool.size` stay as floors; never above `max_runners` ([warm-pools.md](warm-pools.md)). Absent: `min_idle` and `warm_pool.size` alone."},
	"pools[].warm.target_queue_time":       {modes: both, doc: "How long a job may wait from queued to its runner taking it, e.g. `10s` (a hot runner takes under 6 s, a stopped machine 10–15 s, a cold launch 25–60 s). **Required** with `warm`, > 0."},
	"pools[].warm.percentile":              {modes: both, unit: "percent of jobs", fallback: fmt.Sprint(DefaultWarmPercentile), doc: "The share of the week's jobs that must start within the target; above 0, below 100."},
	"pools[].warm.max_idle":                {modes: both, unit: "machines", doc: "The most warm machines the forecast may keep, hot and stopped together: a cap on idle cost. **Required** with `warm`, at least `min_idle`."},
	"prices":                               {modes: both, doc: "Machine prices, by instance type and market, that win over a provider's own (EC2's Price List API and spot price history): negotiated rates, savings plans, Windows or licensed machines ([cost.md](cost.md))."},
	"prices[].instance_type":               {modes: both, doc: "An instance type as the provider reports it, e.g. `m7g.large` (case-insensitive). **Required.**"},
	"prices[].market":                      {modes: both, doc: "`on-demand` or `spot`; each type once per market."},
	"prices[].usd_per_hour":                {modes: both, unit: "USD an hour", doc: "The price of one machine an hour. **Required**, > 0."},
}
