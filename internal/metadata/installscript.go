package metadata

import (
	"net/http"
	"regexp"
	"strings"

	"github.com/runfleet/runfleet/internal/engine"
)

// DefaultRunnerVersion is the actions/runner release the install script
// downloads when the machine's image has no runner in place. The runner
// updates itself at start when GitHub requires a newer one; images that
// pre-install it skip the download entirely.
const DefaultRunnerVersion = "2.328.0"

var runnerVersionPattern = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)

// installScript is runfleet's own bootstrap for a Linux machine whose
// provider does not bring one: it installs the runner under
// /home/<user>/actions-runner, fetches the JIT credentials with the
// instance token, runs the runner as a systemd service and reports each
// step. The token is the one the request presented (the caller holds it
// already, usually in its user data), so user data may simply fetch the
// script and run it; RUNFLEET_INSTANCE_TOKEN or the first argument, when
// given, take precedence.
//
// It is filled by plain placeholder replacement rather than text/template:
// text/template's reflection keeps every method of every linked type in the
// binary, which alone made each Lambda bootstrap ~10 MB larger.
const installScript = `#!/bin/bash
# runfleet runner install script for instance @INSTANCE@.
# Run it as root, e.g.
#   curl -fsS -H "Authorization: Bearer $TOKEN" @METADATA_URL@/install-script | sudo bash
set -euo pipefail

METADATA_URL=@METADATA_URL@
CALLBACK_URL=@CALLBACK_URL@
RUNNER_VERSION=@RUNNER_VERSION@
RUN_USER="${RUNFLEET_RUN_USER:-runner}"
RUN_HOME="/home/${RUN_USER}/actions-runner"
PRESENTED_TOKEN=@TOKEN@
TOKEN="${RUNFLEET_INSTANCE_TOKEN:-${1:-$PRESENTED_TOKEN}}"

if [ -z "$TOKEN" ]; then
	echo "runfleet: no instance token; set RUNFLEET_INSTANCE_TOKEN" >&2
	exit 1
fi

api() {
	curl --fail --silent --show-error --retry 5 --retry-delay 3 --retry-connrefused \
		-H "Authorization: Bearer ${TOKEN}" "$@"
}

# report STATUS MESSAGE [AGENT_ID]; messages are fixed words, so the JSON
# needs no escaping. A failed report is not fatal: the reconciler catches
# a runner that never comes online.
report() {
	api -X POST -H 'Content-Type: application/json' \
		-d "{\"status\": \"$1\", \"message\": \"$2\", \"agent_id\": ${3:-null}}" \
		"${CALLBACK_URL}/status" >/dev/null || echo "runfleet: status report failed" >&2
}

trap 'report failed "install script failed at line ${LINENO}"' ERR

report installing "preparing the runner account"
id -u "$RUN_USER" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$RUN_USER"
mkdir -p "$RUN_HOME"

if [ ! -x "$RUN_HOME/run.sh" ]; then
	case "$(uname -m)" in
		x86_64 | amd64) ARCH=x64 ;;
		aarch64 | arm64) ARCH=arm64 ;;
		armv7l | armv6l) ARCH=arm ;;
		*)
			report failed "unsupported machine architecture"
			exit 1
			;;
	esac
	TARBALL="actions-runner-linux-${ARCH}-${RUNNER_VERSION}.tar.gz"
	report installing "downloading the actions runner"
	curl --fail --silent --show-error --location --retry 5 -o "/tmp/${TARBALL}" \
		"https://github.com/actions/runner/releases/download/v${RUNNER_VERSION}/${TARBALL}"
	tar -xzf "/tmp/${TARBALL}" -C "$RUN_HOME"
	rm -f "/tmp/${TARBALL}"
	report installing "installing runner dependencies"
	"$RUN_HOME/bin/installdependencies.sh" >/dev/null
fi

report installing "fetching the JIT credentials"
(
	umask 077
	for file in runner credentials credentials_rsaparams; do
		api -o "${RUN_HOME}/.${file}" "${METADATA_URL}/credentials/${file}"
	done
)
SERVICE="$(api "${METADATA_URL}/system/service-name").service"
api -o "/etc/systemd/system/${SERVICE}" "${METADATA_URL}/systemd/unit-file?runAsUser=${RUN_USER}"
chmod 0644 "/etc/systemd/system/${SERVICE}"
cp "$RUN_HOME/bin/runsvc.sh" "$RUN_HOME/runsvc.sh"
chown -R "${RUN_USER}:$(id -gn "$RUN_USER")" "$RUN_HOME"

# runfleet's actions/cache (cache.pools, docs/actions-cache.md): metadata/
# cache-agent answers 404 unless the pool uses it. The agent is the runfleet
# binary, which the image must carry; without it the jobs use GitHub's cache.
if CACHE_AGENT="$(api "${METADATA_URL}/cache-agent" 2>/dev/null)"; then
	if command -v runfleet >/dev/null; then
		report installing "starting the cache agent"
		install -d -m 0700 /etc/runfleet
		(umask 077 && printf '%s' "$CACHE_AGENT" >/etc/runfleet/cache-agent.json)
		install -d -m 0755 /opt/runfleet
		runfleet cache-agent --print-hook >/opt/runfleet/job-started.sh
		chmod 0755 /opt/runfleet/job-started.sh
		CA_FILE=/usr/local/share/ca-certificates/runfleet-cache-agent.crt
		cat >/etc/systemd/system/runfleet-cache-agent.service <<UNIT
[Unit]
Description=runfleet cache agent (actions/cache next to the runner)
Before=${SERVICE}

[Service]
ExecStartPre=/bin/mkdir -p /run/runfleet
ExecStart=$(command -v runfleet) cache-agent --config /etc/runfleet/cache-agent.json --ca-file ${CA_FILE}
Restart=always

[Install]
WantedBy=multi-user.target
UNIT
		systemctl daemon-reload
		systemctl enable --now runfleet-cache-agent.service
		for _ in $(seq 1 50); do [ -s "$CA_FILE" ] && break; sleep 0.2; done
		update-ca-certificates >/dev/null 2>&1 || true
		for host in $(runfleet cache-agent --config /etc/runfleet/cache-agent.json --print-hosts); do
			grep -q " ${host}\$" /etc/hosts || echo "127.0.0.1 ${host}" >>/etc/hosts
		done
		{
			echo "NODE_EXTRA_CA_CERTS=${CA_FILE}"
			echo "ACTIONS_RUNNER_HOOK_JOB_STARTED=/opt/runfleet/job-started.sh"
		} >>"$RUN_HOME/.env"
		chown "${RUN_USER}:$(id -gn "$RUN_USER")" "$RUN_HOME/.env"
	else
		echo "runfleet: this pool uses runfleet's cache but the image has no runfleet binary; jobs use GitHub's cache" >&2
	fi
fi

report installing "starting the runner service"
systemctl daemon-reload
systemctl enable --now "$SERVICE"

AGENT_ID="$(grep -o '"agentId": *[0-9]*' "$RUN_HOME/.runner" | grep -o '[0-9]*$' || true)"
report idle "runner service started" "${AGENT_ID:-null}"
`

// shellQuote makes s one single-quoted shell word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (h *Handler) installScript(w http.ResponseWriter, r *http.Request, req *request) {
	if r.URL.Query().Get("os") == "windows" || strings.Contains(r.UserAgent(), "PowerShell") {
		h.refuse(w, req.log, http.StatusNotImplemented,
			"runfleet's install script is for Linux; Windows machines need a provider whose user data installs the runner (as GARM's Windows template does)")
		return
	}
	raw, _ := bearerToken(r)
	script := strings.NewReplacer(
		"@INSTANCE@", unitSafe(req.instance.Name),
		"@METADATA_URL@", shellQuote(engine.InstanceURL(h.metadataURL, req.instance.Name)),
		"@CALLBACK_URL@", shellQuote(engine.InstanceURL(h.callbackURL, req.instance.Name)),
		"@RUNNER_VERSION@", shellQuote(h.runnerVersion),
		"@TOKEN@", shellQuote(raw),
	).Replace(installScript)
	writeText(w, "text/x-shellscript; charset=utf-8", []byte(script))
}
