// Package kubernetes is a native provider that runs each runner as a pod
// (client-go's REST client, the Kubernetes project's own): one pod per instance,
// made from the pool's pod template, in one namespace.
//
// The runner's bootstrap credentials — the instance token and the URLs it
// fetches its JIT configuration with — travel in a Secret of their own that
// only that pod mounts. The Secret is owned by the pod (so a cluster's
// garbage collector removes it with the pod) and deleted explicitly as well
// (so nothing depends on a garbage collector running).
//
// Pods and Secrets carry the controller id and the pool's provider-side id
// as labels, and every list, get and delete selects by both: two runfleet
// installations sharing a namespace never see each other's pods.
//
// A pod that has failed (evicted, out of memory, its node lost), finished or
// is being deleted cannot serve a job: the provider reports it as gone (Get
// says ErrNotFound, List leaves it out) and removes it, so the job ledger
// replaces it at once. Such a pod never holds one of the pool's runner
// slots.
package kubernetes
