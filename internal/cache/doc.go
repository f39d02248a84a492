// Package cache is runfleet's own actions/cache service: the entry model,
// GitHub's scoping and key-matching rules as pure functions, the store
// interface and a local-disk store, and the HTTP handler that speaks the
// protocol npm @actions/cache 6.x speaks (cache service v2: twirp JSON calls
// plus signed blob URLs with Azure Blob block-upload semantics).
//
// The rules follow GitHub's documented behaviour:
//   - an entry is written to the job's ref (its scope) and is read from the
//     job's ref, then the base branch of a pull request, then the default
//     branch; a runner reads only its own repository's entries;
//   - a lookup tries the primary key exactly, then as a prefix, then each
//     restore key the same way, in one scope after the other; a prefix
//     match returns the newest entry;
//   - an entry is keyed by (repository, scope, key, version) and the first
//     writer wins: a second create of the same entry is refused.
package cache
