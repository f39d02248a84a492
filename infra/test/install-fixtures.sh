#!/usr/bin/env bash
# Installs GitHub's published descriptions the Go tests check against:
#   - @octokit/openapi: GitHub's REST API description (internal/github/githubtest
#     checks its fake GitHub's routes and bodies against it);
#   - @octokit/webhooks-examples: real webhook payloads (internal/webhook tests).
# Both are MIT licensed. They go into their own npm prefix inside the emulator
# cache, $RUNFLEET_EMULATOR_DIR/github (default: <repo>/.cache/emulators/github):
# an `npm install --no-save` prunes packages it did not install itself, so
# sharing install-emulators.sh's prefix would make the two scripts remove each
# other's packages. Safe to run again: it does nothing when the pinned versions
# are in place.
set -euo pipefail

OPENAPI_PACKAGE="@octokit/openapi"
OPENAPI_VERSION="23.0.2"
WEBHOOK_EXAMPLES_PACKAGE="@octokit/webhooks-examples"
WEBHOOK_EXAMPLES_VERSION="7.6.1"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
emulator_dir="${RUNFLEET_EMULATOR_DIR:-.cache/emulators}"
# A relative directory is taken from the repo root, as internal/testenv does.
[[ "$emulator_dir" = /* ]] || emulator_dir="$repo_root/$emulator_dir"
prefix="$emulator_dir/github"

fail() {
	echo "install-fixtures: $*" >&2
	exit 1
}

installed_version() {
	local manifest="$prefix/node_modules/$1/package.json"
	[[ -f "$manifest" ]] || return 0
	node -e 'process.stdout.write(require(process.argv[1]).version)' "$manifest"
}

if [[ "$(installed_version "$OPENAPI_PACKAGE")" == "$OPENAPI_VERSION" &&
	"$(installed_version "$WEBHOOK_EXAMPLES_PACKAGE")" == "$WEBHOOK_EXAMPLES_VERSION" ]]; then
	echo "install-fixtures: $OPENAPI_PACKAGE and $WEBHOOK_EXAMPLES_PACKAGE already in $prefix"
	exit 0
fi

command -v npm >/dev/null || fail "npm is required to install $OPENAPI_PACKAGE and $WEBHOOK_EXAMPLES_PACKAGE"
mkdir -p "$prefix"
echo "install-fixtures: installing $OPENAPI_PACKAGE@$OPENAPI_VERSION and $WEBHOOK_EXAMPLES_PACKAGE@$WEBHOOK_EXAMPLES_VERSION into $prefix"
# One install command for both: a second --no-save install would prune the first.
npm install --prefix "$prefix" --no-audit --no-fund --no-save --loglevel=error \
	"$OPENAPI_PACKAGE@$OPENAPI_VERSION" "$WEBHOOK_EXAMPLES_PACKAGE@$WEBHOOK_EXAMPLES_VERSION"

[[ -f "$prefix/node_modules/$OPENAPI_PACKAGE/generated/api.github.com.json" ]] ||
	fail "$OPENAPI_PACKAGE has no generated/api.github.com.json"
[[ -f "$prefix/node_modules/$WEBHOOK_EXAMPLES_PACKAGE/api.github.com/index.json" ]] ||
	fail "$WEBHOOK_EXAMPLES_PACKAGE has no api.github.com/index.json"
