// Package ec2 is runfleet's native EC2 provider: one pool's runner machines
// are EC2 instances launched from a launch template or an AMI, tagged with
// the controller, pool (its name, and its provider-side id, unique per
// runfleet installation) and instance they belong to, and found again by
// the controller, pool id and instance tags.
//
// Create is idempotent: an instance whose name is already served by a live
// machine from the same launch request is returned rather than launched
// again, and every RunInstances call carries a client token derived from the
// instance name and the launch parameters, so a retried call never starts a
// second machine. Capacity errors move on to the next instance type and
// subnet; with spot, on-demand is tried after every spot choice failed.
//
// The machine's user data carries only the metadata URL and the instance
// token: it fetches the runner install script, and through it the runner's
// JIT credentials, from the control plane.
package ec2
