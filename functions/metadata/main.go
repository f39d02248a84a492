// Command metadata is the MetadataFunction: runner bootstrap (instance
// tokens, JIT credentials, status callbacks) behind its own Lambda Function
// URL. It builds the store, the queue and the token key: no GitHub client
// and no provider. The logic is in internal/lambdafn and internal/metadata.
package main

import "github.com/runfleet/runfleet/internal/lambdafn"

func main() { lambdafn.Start(lambdafn.RoleMetadata, lambdafn.Metadata()) }
