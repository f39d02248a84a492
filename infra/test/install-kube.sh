#!/usr/bin/env bash
# install-kube.sh builds the servers the Kubernetes tests start —
# kube-apiserver and etcd — from infra/kube/tools (a module of its own) into a
# cache keyed by their versions, so only a fresh machine pays the build:
#
#   ${RUNFLEET_KUBE_DIR:-<repo>/.cache/kube}/<key>/{kube-apiserver,etcd}
#
# A second run finds both binaries and returns at once. It never skips: if Go
# or the module proxy is missing, it fails and `make test` fails with it,
# because a Kubernetes test that silently does not run proves nothing.
#
# The build is compiled without optimisation or inlining (-N -l) and linked
# stripped (-s -w): the servers only have to answer tests, and the compiler's
# optimising passes are most of a cold build's CPU.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
tools="$repo/infra/kube/tools"
go=${GO:-go}

kube_version=$(awk '$1=="k8s.io/kubernetes"{print $2}' "$tools/go.mod")
etcd_version=$(awk '$1=="go.etcd.io/etcd/server/v3"{print $2}' "$tools/go.mod")
# The key names the build flags too: changing them must not reuse old binaries.
flags_rev=nl1
key="${kube_version}-etcd${etcd_version#v}-${flags_rev}"
base=${RUNFLEET_KUBE_DIR:-$repo/.cache/kube}
dir="$base/$key"

# --print-dir: where the binaries are (or will be), for internal/kubetest.
if [[ "${1:-}" == "--print-dir" ]]; then
  echo "$dir"
  exit 0
fi

if [[ -x "$dir/kube-apiserver" && -x "$dir/etcd" ]]; then
  echo "install-kube: $dir (cached)"
  exit 0
fi

command -v "$go" >/dev/null || { echo "install-kube: go not found" >&2; exit 1; }
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# progress NAME TOTAL: turns `go build -v`'s one line per compiled package
# into a line every 100 packages, so a build of minutes shows it is alive.
progress() {
  awk -v name="$1" -v total="$2" '
    /^#|\.go:[0-9]+:|^go: / { print; fflush(); next }
    { n++; if (n % 100 == 0) { printf "install-kube: %s: %d/%d packages compiled\n", name, n, total; fflush() } }
    END { printf "install-kube: %s: %d packages compiled\n", name, n }'
}

build() { # build NAME PKG LDFLAGS
  local name=$1 pkg=$2 ldflags=$3 total start
  total=$(cd "$tools" && "$go" list -deps "$pkg" | wc -l)
  start=$(date +%s)
  echo "install-kube: building $name ($pkg, $total packages; a cold build takes minutes)"
  (cd "$tools" && "$go" build -v -buildvcs=false -trimpath -gcflags='all=-N -l' -ldflags "-s -w $ldflags" \
    -o "$tmp/$name" "$pkg") 2>&1 | progress "$name" "$total"
  echo "install-kube: $name built in $(( $(date +%s) - start ))s"
}

(cd "$tools" && "$go" mod download) ||
  { echo "install-kube: cannot download infra/kube/tools's modules (is the module proxy reachable?)" >&2; exit 1; }
build etcd ./etcd ""
vpkg=k8s.io/component-base/version
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver \
  "-X $vpkg.gitVersion=$kube_version -X $vpkg.gitTreeState=clean -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$(echo "$kube_version" | cut -d. -f2)"

"$tmp/kube-apiserver" --version
"$tmp/etcd" --version | sed -n 1p # sed reads every line: head could leave etcd a SIGPIPE, which pipefail turns into a failure
mv "$tmp/etcd" "$tmp/kube-apiserver" "$dir/"
echo "install-kube: $dir"
