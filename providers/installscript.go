package providers

// FetchInstallScriptShell is the end of every Linux bootstrap a provider
// hands a machine (EC2 user data, a Kubernetes runner pod's command): with
// $metadata_url and $instance_token set before it, it fetches this
// runner's install script from the control plane with the instance token
// and runs it, retrying for two and a half minutes while the network comes
// up. It needs only bash and curl, which every stock image has; the token
// stays a shell variable, never an exported one a process listing or
// environment dump would show.
const FetchInstallScriptShell = `script="$(mktemp)"
for attempt in $(seq 1 30); do
  if curl -fsS --max-time 30 -H "Authorization: Bearer ${instance_token}" -o "$script" "${metadata_url%/}/install-script"; then
    break
  fi
  if [ "$attempt" -eq 30 ]; then
    echo "runfleet: cannot fetch ${metadata_url%/}/install-script" >&2
    exit 1
  fi
  sleep 5
done
chmod 0700 "$script"
exec bash "$script"
`
