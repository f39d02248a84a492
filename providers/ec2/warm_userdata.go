package ec2

import "strings"

// warmMarker is the first comment line of a warm machine's user data. The
// boot hook looks for it: user data that still carries it means no create
// has claimed the machine.
const warmMarker = "# runfleet: warm pool machine"

// warmUserData prepares a warm machine on its first boot and powers it
// off. Cloud-init runs user data once per instance, on that first boot, so
// a claimed machine's runner bootstrap (set with ModifyInstanceAttribute
// while it is stopped) would never run; the boot hook installed here runs
// it on the next start. The runner goes where runfleet's install script
// looks for it, which then skips its download and dependency install.
const warmUserData = `#!/bin/bash
` + warmMarker + `: prepare once, then power off.
# A create that claims this machine replaces this user data with its runner's
# bootstrap and starts it; runfleet-claimed-boot runs that bootstrap.
set -euo pipefail
RUNNER_VERSION=@RUNNER_VERSION@
RUN_USER=runner
RUN_HOME="/home/${RUN_USER}/actions-runner"

cat >/usr/local/sbin/runfleet-claimed-boot <<'HOOK'
#!/bin/bash
set -euo pipefail
imds=http://169.254.169.254/latest
token="$(curl -fsS --retry 10 --retry-connrefused -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 300' "$imds/api/token")"
data="$(mktemp)"
curl -fsS --retry 10 --retry-connrefused -H "X-aws-ec2-metadata-token: ${token}" -o "$data" "$imds/user-data"
if grep -qF '` + warmMarker + `' "$data"; then
  exit 0 # not claimed: nothing to run
fi
chmod 0700 "$data"
exec "$data"
HOOK
chmod 0755 /usr/local/sbin/runfleet-claimed-boot
cat >/etc/systemd/system/runfleet-claimed-boot.service <<'UNIT'
[Unit]
Description=runfleet: run a claimed warm machine's runner bootstrap
Wants=network-online.target
After=network-online.target cloud-final.service
ConditionPathExists=/var/lib/runfleet/warm-prepared

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/runfleet-claimed-boot

[Install]
WantedBy=multi-user.target
UNIT
systemctl enable runfleet-claimed-boot.service

id -u "$RUN_USER" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$RUN_USER"
mkdir -p "$RUN_HOME"
case "$(uname -m)" in
  x86_64 | amd64) ARCH=x64 ;;
  aarch64 | arm64) ARCH=arm64 ;;
  *) ARCH= ;;
esac
if [ -n "$ARCH" ] && [ ! -x "$RUN_HOME/run.sh" ]; then
  TARBALL="actions-runner-linux-${ARCH}-${RUNNER_VERSION}.tar.gz"
  curl -fsSL --retry 5 -o "/tmp/${TARBALL}" "https://github.com/actions/runner/releases/download/v${RUNNER_VERSION}/${TARBALL}"
  tar -xzf "/tmp/${TARBALL}" -C "$RUN_HOME"
  rm -f "/tmp/${TARBALL}"
  "$RUN_HOME/bin/installdependencies.sh" >/dev/null
fi
chown -R "$RUN_USER" "/home/${RUN_USER}"
mkdir -p /var/lib/runfleet
touch /var/lib/runfleet/warm-prepared
# The machine was launched with shutdown behaviour "stop": this stops it.
systemctl poweroff
`

// renderWarmUserData fills in the runner version.
func (p *Provider) renderWarmUserData() []byte {
	return []byte(strings.ReplaceAll(warmUserData, "@RUNNER_VERSION@", shellQuote(p.settings.WarmPool.runnerVersion())))
}
