// Package testenv gives Go tests real AWS-protocol servers: DynamoDB Local for
// DynamoDB and a moto server for SQS, EC2, SSM, Secrets Manager and the like,
// so that adapters are tested against the protocol they speak in production.
//
// Each server is started lazily, at most once per test process, on a free
// loopback port, and is shared by every test in that process; tests isolate
// themselves with UniqueName rather than by resetting shared state. A server
// that cannot start fails the test: nothing here ever skips.
//
// Servers are stopped by Main (call it from TestMain) and, on Linux, are also
// killed by the kernel if the test binary dies first.
//
// DynamoDB Local comes from infra/test/install-emulators.sh (run by `make
// test`), which installs it under .cache/emulators at the repo root, or under
// RUNFLEET_EMULATOR_DIR; the moto server is python3's `moto.server` module.
// Setting AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS or AWS_ENDPOINT_URL
// makes the helpers use already running servers instead of starting their own.
package testenv
