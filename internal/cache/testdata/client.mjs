// Drives GitHub's own cache client (npm @actions/cache, installed by
// infra/test/install-cache-client.sh) for internal/cache's acceptance test:
//   node client.mjs save <dir> <key>
//   node client.mjs restore <dir> <key> [restore-key...]
// The environment carries what a runner's job has (ACTIONS_RESULTS_URL,
// ACTIONS_RUNTIME_TOKEN, ACTIONS_CACHE_SERVICE_V2). The result goes on one
// line "RESULT <json>"; the client's own ::warning:: lines go to stdout too.
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const moduleDir = process.env.CACHE_CLIENT_DIR;
const cache = await import(pathToFileURL(path.join(moduleDir, 'node_modules/@actions/cache/lib/cache.js')).href);

const [op, dir, key, ...restoreKeys] = process.argv.slice(2);
let result;
if (op === 'save') {
  result = { id: await cache.saveCache([dir], key) };
} else if (op === 'restore') {
  const matched = await cache.restoreCache([dir], key, restoreKeys);
  result = { matched: matched ?? null };
} else {
  throw new Error(`unknown op ${op}`);
}
process.stdout.write(`\nRESULT ${JSON.stringify(result)}\n`);
