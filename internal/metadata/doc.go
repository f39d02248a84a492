// Package metadata serves runner bootstrap: what a booting machine asks the
// control plane for, as GARM's providers' user data does. It mints and
// verifies instance tokens (HS256 JWTs naming one instance and one create
// attempt) and serves, per instance,
//
//	GET  {metadata-url}/credentials/runner            the JIT configuration's files
//	GET  {metadata-url}/credentials/credentials
//	GET  {metadata-url}/credentials/credentials_rsaparams
//	GET  {metadata-url}/system/service-name           systemd service name
//	GET  {metadata-url}/systemd/unit-file?runAsUser=  systemd unit
//	GET  {metadata-url}/system/cert-bundle            extra CA certificates
//	GET  {metadata-url}/install-script                runfleet's own Linux install script
//	GET  {metadata-url}/runner-metadata               what the runner is (JSON, no secrets)
//	GET  {metadata-url}/runner-registration-token/    refused: every runner is JIT
//	POST {callback-url}/status                        {"status","message","agent_id"}
//	POST {callback-url}/system-info                   {"os_name","os_version","agent_id"}
//
// where {metadata-url} is <base>/metadata/<instance> and {callback-url} is
// <base>/callbacks/<instance>. Every request carries the instance token as a
// Bearer token. A missing, malformed, altered, expired or foreign token is
// 401; a valid token for another instance's URL, an earlier create attempt,
// or a runner whose bootstrap is over is 403. Every refusal is a JSON error
// and one structured warning naming the instance and the reason; tokens and
// credentials are never logged. The same handler runs in `runfleet serve`
// and behind the metadata Lambda's Function URL. See docs/runner-bootstrap.md.
package metadata
