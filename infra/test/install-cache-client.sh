#!/usr/bin/env bash
# Installs GitHub's own cache client, npm @actions/cache (MIT), pinned, which
# internal/cache's acceptance test drives against runfleet's cache service.
# Its own npm prefix inside the emulator cache,
# $RUNFLEET_EMULATOR_DIR/actions-cache (default:
# <repo>/.cache/emulators/actions-cache), because `npm install --no-save`
# prunes what it did not install (see install-fixtures.sh). Safe to run
# again: it does nothing when the pinned version is in place. The test runs
# it itself and fails, never skips, when it fails.
set -euo pipefail

CACHE_PACKAGE="@actions/cache"
CACHE_VERSION="6.3.0"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
emulator_dir="${RUNFLEET_EMULATOR_DIR:-.cache/emulators}"
[[ "$emulator_dir" = /* ]] || emulator_dir="$repo_root/$emulator_dir"
prefix="$emulator_dir/actions-cache"
manifest="$prefix/node_modules/$CACHE_PACKAGE/package.json"

fail() {
	echo "install-cache-client: $*" >&2
	exit 1
}

command -v node >/dev/null || fail "node is required to run $CACHE_PACKAGE"
if [[ -f "$manifest" && "$(node -e 'process.stdout.write(require(process.argv[1]).version)' "$manifest")" == "$CACHE_VERSION" ]]; then
	echo "install-cache-client: $CACHE_PACKAGE@$CACHE_VERSION already in $prefix"
	exit 0
fi
command -v npm >/dev/null || fail "npm is required to install $CACHE_PACKAGE"
mkdir -p "$prefix"
echo "install-cache-client: installing $CACHE_PACKAGE@$CACHE_VERSION into $prefix"
npm install --prefix "$prefix" --no-audit --no-fund --no-save --loglevel=error "$CACHE_PACKAGE@$CACHE_VERSION"
[[ -f "$prefix/node_modules/$CACHE_PACKAGE/lib/cache.js" ]] || fail "$CACHE_PACKAGE has no lib/cache.js"
echo "$prefix"
